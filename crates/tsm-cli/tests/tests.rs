//! End-to-end tests of the `tsm` binary against the filesystem backend, on segments
//! written by the engine itself. One test binary (ripgrep's layout): helpers in `util`,
//! one module per concern.

mod util;

mod copy_delete;
mod docs;
mod gc;
mod pipe;
mod read;
mod rekey;
mod s3;
mod usage;
mod verify;
