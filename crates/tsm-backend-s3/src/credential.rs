//! `aws.credentials.file`: credentials read from an AWS shared-credentials file and read
//! again when the file changes, so rotated keys (a Kubernetes secret volume, a Vault agent
//! template) are picked up without restarting the broker.
//!
//! Data flow: file on disk -> [`aws_config::profile::load`] (the SDK's own profile parser)
//! -> [`Credentials`] with a short expiry -> the SDK's identity cache, which calls
//! [`FileCredentials`] again when that expiry nears. The file is parsed again only when its
//! modification time or length changed.

use std::borrow::Cow;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::{ProvideCredentials, future};
use aws_runtime::env_config::file::{EnvConfigFileKind, EnvConfigFiles};
use aws_types::os_shim_internal::{Env, Fs};
use tokio::sync::Mutex;

/// How long credentials from the file are handed out before the SDK asks again (and the
/// file's modification time is checked).
pub const RECHECK_AFTER: Duration = Duration::from_secs(60);

/// The provider name reported to the SDK.
const PROVIDER_NAME: &str = "tsm-credentials-file";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
}

/// A credentials provider over one shared-credentials file (profile from `AWS_PROFILE`, else
/// `default`; keys `aws_access_key_id`, `aws_secret_access_key`, `aws_session_token`).
///
/// Errors name the file path, never its contents.
#[derive(Debug)]
pub struct FileCredentials {
    path: PathBuf,
    last: Mutex<Option<(Stamp, Credentials)>>,
}

impl FileCredentials {
    /// A provider reading `path` on first use.
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            last: Mutex::new(None),
        }
    }

    fn fail(&self, what: impl std::fmt::Display) -> CredentialsError {
        CredentialsError::provider_error(format!(
            "aws.credentials.file {}: {what}",
            self.path.display()
        ))
    }

    async fn parse(&self) -> Result<Credentials, CredentialsError> {
        let files = EnvConfigFiles::builder()
            .include_default_config_file(false)
            .include_default_credentials_file(false)
            .with_file(EnvConfigFileKind::Credentials, self.path.clone())
            .build();
        let env = Env::real();
        let profile_override = match env.get("AWS_PROFILE") {
            Ok(p) if !p.is_empty() => None,
            _ => Some(Cow::Borrowed("default")),
        };
        let set = aws_config::profile::load(&Fs::real(), &env, &files, profile_override)
            .await
            .map_err(|e| self.fail(format!("cannot be loaded: {e}")))?;
        let profile = set.selected_profile().to_string();
        let get = |k: &str| set.get(k).map(str::to_string);
        let access = get("aws_access_key_id")
            .ok_or_else(|| self.fail(format!("profile {profile} has no aws_access_key_id")))?;
        let secret = get("aws_secret_access_key")
            .ok_or_else(|| self.fail(format!("profile {profile} has no aws_secret_access_key")))?;
        Ok(Credentials::new(
            access,
            secret,
            get("aws_session_token"),
            None,
            PROVIDER_NAME,
        ))
    }

    /// The current credentials, parsing the file again only if it changed.
    pub async fn load(&self) -> Result<Credentials, CredentialsError> {
        let meta = tokio::fs::metadata(&self.path)
            .await
            .map_err(|e| self.fail(format!("cannot be read: {e}")))?;
        let stamp = Stamp {
            modified: meta.modified().ok(),
            len: meta.len(),
        };
        let mut last = self.last.lock().await;
        let creds = match &*last {
            Some((s, c)) if *s == stamp => c.clone(),
            _ => {
                let c = self.parse().await?;
                tracing::info!(path = %self.path.display(), "loaded S3 credentials from aws.credentials.file");
                *last = Some((stamp, c.clone()));
                c
            }
        };
        // A fresh expiry each time so the SDK's identity cache comes back after RECHECK_AFTER.
        Ok(Credentials::new(
            creds.access_key_id(),
            creds.secret_access_key(),
            creds.session_token().map(str::to_string),
            Some(SystemTime::now() + RECHECK_AFTER),
            PROVIDER_NAME,
        ))
    }
}

impl ProvideCredentials for FileCredentials {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        future::ProvideCredentials::new(self.load())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn rereads_when_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials");
        std::fs::write(
            &path,
            "[default]\naws_access_key_id = AK1\naws_secret_access_key = SK1\n",
        )
        .unwrap();
        let p = FileCredentials::new(path.clone());
        let c = p.load().await.unwrap();
        assert_eq!(c.access_key_id(), "AK1");
        assert!(c.session_token().is_none());
        assert!(c.expiry().is_some());
        // Different length, so the change is seen even within one mtime tick.
        std::fs::write(
            &path,
            "[default]\naws_access_key_id = AK22\naws_secret_access_key = SK22\naws_session_token = T\n",
        )
        .unwrap();
        let c = p.load().await.unwrap();
        assert_eq!(c.access_key_id(), "AK22");
        assert_eq!(c.session_token(), Some("T"));
    }

    #[tokio::test]
    async fn errors_name_the_file_not_the_secret() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials");
        std::fs::write(&path, "[default]\naws_secret_access_key = TOPSECRET\n").unwrap();
        let e = FileCredentials::new(path.clone()).load().await.unwrap_err();
        let msg = format!("{e} {e:?}");
        assert!(msg.contains("aws_access_key_id"), "{msg}");
        assert!(!msg.contains("TOPSECRET"), "{msg}");
        let e = FileCredentials::new(dir.path().join("missing"))
            .load()
            .await
            .unwrap_err();
        assert!(format!("{e:?}").contains("missing"), "{e:?}");
    }
}
