//! tsm-backend-azure: being written.
