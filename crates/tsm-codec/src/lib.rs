//! tsm-codec: being written.
