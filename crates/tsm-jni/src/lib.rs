//! tsm-jni: being written.
