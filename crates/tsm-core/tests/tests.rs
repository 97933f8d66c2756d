//! tsm-core's integration tests: the engine through its public API, over the filesystem
//! and in-memory backends (no external service). One test binary (ripgrep's layout, as
//! tsm-cli's): `engine_support` holds the shared fixtures, one module per concern.

mod engine_support;

mod cache_single_flight;
mod config_props;
mod engine_cache;
mod engine_copy_source;
mod engine_e2e;
mod engine_errors;
mod engine_faults;
mod engine_integrity;
mod engine_interop;
mod engine_invalidation_race;
mod engine_lazy;
mod engine_lifecycle;
mod engine_proptest;
mod engine_readahead_race;
mod engine_reads;
mod engine_timeouts;
mod read_ranges_proptest;
