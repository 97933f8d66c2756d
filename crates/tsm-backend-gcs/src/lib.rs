//! tsm-backend-gcs: being written.
