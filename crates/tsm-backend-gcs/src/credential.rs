//! Credentials: [`CredentialsSource`] (from `storage.gcs.credentials.*`) -> the
//! google-cloud-auth [`Credentials`] that sign both the SDK's requests and our JSON API
//! calls.
//!
//! google-cloud-auth reads a credentials file once, when built. For
//! `storage.gcs.credentials.path` we add [`ReloadingFileCredentials`], a provider that
//! re-reads the file when its modification time or size changes (rotated service account
//! keys, re-minted workload identity federation configs), like the Java plugin's
//! `ReloadableCredentialsProvider`.
//!
//! Secrets: the inline JSON is held in a `tsm_storage::config::Secret` (zeroized on drop) by
//! the config; the parsed copy handed to google-cloud-auth lives inside the SDK, which we
//! cannot zeroize.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use google_cloud_auth::credentials::{
    self, CacheableResource, Credentials, CredentialsProvider, anonymous, external_account,
    external_account_authorized_user, impersonated, service_account, user_account,
};
use google_cloud_auth::errors::CredentialsError;
use http::{Extensions, HeaderMap};

use crate::config::CredentialsSource;

/// Builds the credentials for `source`.
///
/// # Errors
/// A message naming the config key (never the JSON): unreadable file, JSON without a
/// supported `type`, or a credentials builder failure.
pub(crate) fn build(source: &CredentialsSource) -> Result<Credentials, String> {
    match source {
        CredentialsSource::Anonymous => Ok(anonymous::Builder::new().build()),
        CredentialsSource::Default => credentials::Builder::default()
            .build()
            .map_err(|e| format!("Application Default Credentials: {e}")),
        CredentialsSource::Json(json) => {
            from_json_text(json.expose()).map_err(|e| format!("inline JSON: {e}"))
        }
        CredentialsSource::Path(path) => {
            let loaded = load_file(path)?;
            tracing::debug!(path = %path.display(), "GCS credentials from file, reloaded on change");
            Ok(Credentials::from(ReloadingFileCredentials {
                path: path.clone(),
                state: Mutex::new(loaded),
            }))
        }
    }
}

/// Credentials from a JSON document, dispatched on its `type` field as Google's ADC
/// loader does.
fn from_json_text(text: &str) -> Result<Credentials, String> {
    let json: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not valid JSON (line {})", e.line()))?;
    let kind = json
        .get("type")
        .and_then(|t| t.as_str())
        .ok_or("no \"type\" field")?
        .to_string();
    let built = match kind.as_str() {
        "service_account" => service_account::Builder::new(json).build(),
        "authorized_user" => user_account::Builder::new(json).build(),
        "impersonated_service_account" => impersonated::Builder::new(json).build(),
        "external_account" => external_account::Builder::new(json).build(),
        "external_account_authorized_user" => {
            external_account_authorized_user::Builder::new(json).build()
        }
        other => {
            return Err(format!(
                "unsupported credentials type {other:?} (service_account, authorized_user, \
                 impersonated_service_account, external_account, \
                 external_account_authorized_user)"
            ));
        }
    };
    built.map_err(|e| format!("{kind} credentials: {e}"))
}

/// What identifies one version of the credentials file.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct FileStamp {
    modified: Option<SystemTime>,
    len: u64,
}

fn stamp(path: &Path) -> std::io::Result<FileStamp> {
    let meta = std::fs::metadata(path)?;
    Ok(FileStamp {
        modified: meta.modified().ok(),
        len: meta.len(),
    })
}

struct Loaded {
    stamp: FileStamp,
    credentials: Credentials,
}

fn load_file(path: &Path) -> Result<Loaded, String> {
    let what = || format!("credentials file {}", path.display());
    let before = stamp(path).map_err(|e| format!("{}: {e}", what()))?;
    let text = zeroize::Zeroizing::new(
        std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", what()))?,
    );
    let credentials = from_json_text(&text).map_err(|e| format!("{}: {e}", what()))?;
    Ok(Loaded {
        stamp: before,
        credentials,
    })
}

/// Credentials from a file that is re-read when it changes.
///
/// Each request stats the file (one `stat` syscall); when the modification time or size
/// differs from the loaded version, the file is parsed again and replaces the credentials.
/// A file that cannot be read or parsed keeps the previous credentials and logs a warning
/// naming the path, so a half-written rotation does not break the broker.
pub(crate) struct ReloadingFileCredentials {
    path: PathBuf,
    state: Mutex<Loaded>,
}

impl std::fmt::Debug for ReloadingFileCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReloadingFileCredentials")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl ReloadingFileCredentials {
    /// The current credentials, reloading the file first when it changed.
    fn current(&self) -> Credentials {
        let (loaded_stamp, current) = match self.state.lock() {
            Ok(s) => (s.stamp, s.credentials.clone()),
            Err(poisoned) => {
                let s = poisoned.into_inner();
                (s.stamp, s.credentials.clone())
            }
        };
        match stamp(&self.path) {
            Ok(now) if now == loaded_stamp => current,
            Ok(_) => match load_file(&self.path) {
                Ok(fresh) => {
                    tracing::info!(path = %self.path.display(), "GCS credentials file changed, reloaded");
                    let credentials = fresh.credentials.clone();
                    match self.state.lock() {
                        Ok(mut s) => *s = fresh,
                        Err(poisoned) => *poisoned.into_inner() = fresh,
                    }
                    credentials
                }
                Err(e) => {
                    tracing::warn!(error = %e, "GCS credentials file changed but cannot be loaded; keeping the previous credentials");
                    current
                }
            },
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "GCS credentials file cannot be read; keeping the previous credentials");
                current
            }
        }
    }
}

impl CredentialsProvider for ReloadingFileCredentials {
    async fn headers(
        &self,
        extensions: Extensions,
    ) -> Result<CacheableResource<HeaderMap>, CredentialsError> {
        // Entity tags are unique per credentials object, so after a reload the caller's
        // cached tag no longer matches and it gets fresh headers.
        self.current().headers(extensions).await
    }

    async fn universe_domain(&self) -> Option<String> {
        self.current().universe_domain().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_type_is_named_without_content() {
        let e = from_json_text(r#"{"type":"magic","private_key":"SECRET"}"#).unwrap_err();
        assert!(e.contains("magic") && !e.contains("SECRET"), "{e}");
        let e = from_json_text("SECRET{").unwrap_err();
        assert!(!e.contains("SECRET"), "{e}");
    }

    // Credentials builders spawn their token cache on the tokio runtime.
    #[tokio::test]
    async fn file_is_reloaded_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("creds.json");
        // An authorized_user document builds without network access; headers would need
        // a token exchange, so the test checks the reload bookkeeping only.
        let doc = |id: &str| {
            format!(
                r#"{{"type":"authorized_user","client_id":"{id}","client_secret":"s","refresh_token":"r"}}"#
            )
        };
        std::fs::write(&path, doc("first")).unwrap();
        let creds = ReloadingFileCredentials {
            path: path.clone(),
            state: Mutex::new(load_file(&path).unwrap()),
        };
        let first = creds.state.lock().unwrap().stamp;
        std::fs::write(&path, doc("second-longer")).unwrap();
        let _ = creds.current();
        let second = creds.state.lock().unwrap().stamp;
        assert_ne!(first, second, "the changed file was not reloaded");
        // A broken rewrite keeps the previous credentials.
        std::fs::write(&path, "{ half written").unwrap();
        let _ = creds.current();
        assert_eq!(creds.state.lock().unwrap().stamp, second);
    }
}
