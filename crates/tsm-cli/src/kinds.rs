//! The storage backends linked into `tsm`: `storage.backend.class` can name any of these.
//! Mirrors `crates/tsm-jni/src/kinds.rs` (the plugin's list), behind the same features,
//! so one properties file works for both.

use tsm_core::BackendKind;

/// Backend kinds linked into this build (filesystem always; cloud backends by feature).
pub static KINDS: &[&BackendKind] = &[
    &tsm_core::backend::filesystem::KIND,
    #[cfg(feature = "s3")]
    &tsm_backend_s3::KIND,
    #[cfg(feature = "gcs")]
    &tsm_backend_gcs::KIND,
    #[cfg(feature = "azure")]
    &tsm_backend_azure::KIND,
];
