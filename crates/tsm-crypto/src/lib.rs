//! tsm-crypto: being written.
