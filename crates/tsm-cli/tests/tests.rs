//! End-to-end tests of the `tsm` binary against the filesystem backend, on segments
//! written by the engine itself. One test binary (ripgrep's layout): helpers in `util`,
//! one module per concern.

mod util;

// The CLI's own properties loader (and the error type it returns), compiled into the
// test binary so `readme_config` checks documentation snippets with the real code.
#[allow(dead_code)]
#[path = "../src/error.rs"]
mod error;
#[allow(dead_code)]
#[path = "../src/props.rs"]
mod props;

mod config_check;
mod copy_delete;
mod docs;
mod fetch_failures;
mod gc;
mod pipe;
mod read;
mod readme_config;
mod rekey;
mod s3;
mod usage;
mod verify;
