//! tsm-backend-s3: being written.
