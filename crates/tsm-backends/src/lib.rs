//! THE list of storage backends linked into a tsm build: `storage.backend.class` (by name
//! or by the Java plugin's class name) can name any kind in [`KINDS`]. The plugin
//! (tsm-jni), the operator tool (tsm-cli) and the bench harness pass this list to
//! tsm-core's `RemoteStorageManager::configure`, so one properties file works for all of
//! them. Add a backend here, behind its cargo feature.
//!
//! Features: `s3`, `gcs`, `azure` (all on by default); the filesystem backend is always in.

use tsm_storage::BackendKind;

/// Backend kinds linked into this build, in the order they are documented.
pub static KINDS: &[&BackendKind] = &[
    &tsm_storage::filesystem::KIND,
    #[cfg(feature = "s3")]
    &tsm_backend_s3::KIND,
    #[cfg(feature = "gcs")]
    &tsm_backend_gcs::KIND,
    #[cfg(feature = "azure")]
    &tsm_backend_azure::KIND,
];
