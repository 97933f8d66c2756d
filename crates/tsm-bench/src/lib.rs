//! tsm-bench: the benchmark harness of issue 8 (see bench/README.md).
//!
//! - [`datagen`]: Kafka-shaped segment sets on disk (`tsm-bench gen`), shared with the
//!   JVM harness (bench/jvm); the batches and index files come from `tsm-kafka-log`.
//! - [`plugin`]: the plugin properties of each mode, the run's key pair, segment metadata.
//! - [`run`] and [`child`]: every case in its own process (`tsm-bench run`), measured by
//!   [`cases`]; results as JSON lines ([`record`]).
//! - [`probe`]: request cost and connections seen from outside the plugin (the store's
//!   own counters, the cloud proxy's connections) around each case's measured calls.
//! - [`report`]: results -> markdown table of ratios to the limits and the issue's
//!   targets (`tsm-bench report`).

pub mod cases;
pub mod child;
pub mod datagen;
pub mod plugin;
pub mod probe;
pub mod record;
pub mod report;
pub mod run;
