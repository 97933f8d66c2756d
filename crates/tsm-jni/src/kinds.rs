//! THE list of storage backends linked into the plugin: `storage.backend.class` can name
//! any of these (by name or alias). Add a backend here, behind its cargo feature.

use tsm_core::BackendKind;

/// Backend kinds linked into this build, passed to `RemoteStorageManager::configure`.
pub static KINDS: &[&BackendKind] = &[
    &tsm_core::backend::filesystem::KIND,
    #[cfg(feature = "s3")]
    &tsm_backend_s3::KIND,
    #[cfg(feature = "gcs")]
    &tsm_backend_gcs::KIND,
    #[cfg(feature = "azure")]
    &tsm_backend_azure::KIND,
];
