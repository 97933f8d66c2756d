//! The `storage.gcs.*` keys: raw [`StorageConfig`] map -> validated [`GcsConfig`] in one
//! step ([`GcsConfig::from_storage`]).
//!
//! Key names, types and defaults are the Java plugin's (Aiven
//! `io.aiven.kafka.tieredstorage.storage.gcs.GcsStorageConfig`), so a cluster can switch
//! plugins without touching its properties. [`KEYS`] documents every key and is the source
//! of the generated configuration reference.

use std::fmt;
use std::path::PathBuf;

use tsm_storage::config::{ConfigKeyDoc, Secret};
use tsm_storage::{ConfigError, StorageConfig};

/// `storage.gcs.bucket.name`: the bucket holding the objects (required).
pub const BUCKET_NAME: &str = "gcs.bucket.name";
/// `storage.gcs.endpoint.url`: custom endpoint (emulators, private endpoints).
pub const ENDPOINT_URL: &str = "gcs.endpoint.url";
/// `storage.gcs.resumable.upload.chunk.size`: bytes per resumable-upload request.
pub const RESUMABLE_UPLOAD_CHUNK_SIZE: &str = "gcs.resumable.upload.chunk.size";
/// `storage.gcs.credentials.default`: use Application Default Credentials.
pub const CREDENTIALS_DEFAULT: &str = "gcs.credentials.default";
/// `storage.gcs.credentials.json`: credentials JSON inline (secret).
pub const CREDENTIALS_JSON: &str = "gcs.credentials.json";
/// `storage.gcs.credentials.path`: path of a credentials JSON file.
pub const CREDENTIALS_PATH: &str = "gcs.credentials.path";

/// Resumable uploads move data in multiples of this quantum (256 KiB), per the
/// [GCS resumable upload protocol](https://cloud.google.com/storage/docs/performing-resumable-uploads).
pub const UPLOAD_QUANTUM: u64 = 256 * 1024;
/// Default `gcs.resumable.upload.chunk.size`: 25 MiB, the Java plugin's default.
pub const DEFAULT_CHUNK_SIZE: u64 = 25 * 1024 * 1024;
/// Largest accepted chunk size: the Java plugin's key is an `int`, so `i32::MAX` rounded
/// down to the quantum (2 GiB - 256 KiB).
pub const MAX_CHUNK_SIZE: u64 = (i32::MAX as u64 / UPLOAD_QUANTUM) * UPLOAD_QUANTUM;

/// Every `storage.gcs.*` key this backend reads (names without `rsm.config.`).
pub static KEYS: &[ConfigKeyDoc] = &[
    ConfigKeyDoc {
        name: "storage.gcs.bucket.name",
        default: "",
        doc: "Required. The GCS bucket that stores the segments, indexes and manifests \
              (bucket name only, no `gs://`).",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.gcs.endpoint.url",
        default: "",
        doc: "Custom GCS endpoint URL (e.g. `http://127.0.0.1` for fake-gcs-server, or a \
              Private Service Connect endpoint). Empty means `https://storage.googleapis.com`. \
              With an endpoint set and no credentials key set, requests are anonymous.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.gcs.resumable.upload.chunk.size",
        default: "26214400",
        doc: "Bytes sent per resumable-upload request, a multiple of 256 KiB (262144) from \
              262144 to 2147221504. It is also the upload buffer: each upload in flight holds \
              at most this many bytes in memory (plus one stream item). Larger is faster and \
              needs fewer requests (cheaper); GCS recommends at least 8 MiB.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.gcs.credentials.default",
        default: "",
        doc: "`true` uses Google Application Default Credentials: \
              `GOOGLE_APPLICATION_CREDENTIALS`, gcloud's ADC file, or the metadata server \
              (GCE, GKE Workload Identity, Cloud Run). Exactly one of \
              `storage.gcs.credentials.default=true`, `storage.gcs.credentials.json` and \
              `storage.gcs.credentials.path` must be set, except with \
              `storage.gcs.endpoint.url` where none means anonymous.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.gcs.credentials.json",
        default: "",
        doc: "Credentials JSON inline (service account key, authorized user, external \
              account / workload identity federation, impersonated service account). Secret: \
              never logged. Cannot be combined with the other credentials keys.",
        secret: true,
    },
    ConfigKeyDoc {
        name: "storage.gcs.credentials.path",
        default: "",
        doc: "Path of a credentials JSON file (same types as `storage.gcs.credentials.json`). \
              The file is re-read when its modification time or size changes, so rotated keys \
              are picked up without a broker restart. Cannot be combined with the other \
              credentials keys.",
        secret: false,
    },
];

/// Where credentials come from. `Debug` never shows the JSON.
#[derive(Clone, PartialEq, Eq)]
pub enum CredentialsSource {
    /// Application Default Credentials (`storage.gcs.credentials.default=true`).
    Default,
    /// Inline JSON (`storage.gcs.credentials.json`), zeroized on drop.
    Json(Secret),
    /// A JSON file (`storage.gcs.credentials.path`), re-read on change.
    Path(PathBuf),
    /// No credentials: only allowed with `storage.gcs.endpoint.url` (emulators).
    Anonymous,
}

impl fmt::Debug for CredentialsSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => f.write_str("Default"),
            Self::Json(_) => f.write_str("Json(<redacted>)"),
            Self::Path(p) => f.debug_tuple("Path").field(p).finish(),
            Self::Anonymous => f.write_str("Anonymous"),
        }
    }
}

/// Validated GCS backend settings.
///
/// Built from the operator's keys by [`GcsConfig::from_storage`]; the fields below the
/// keys are tuning knobs with no key (tests lower them so failures do not look like hangs).
#[derive(Clone, Debug)]
pub struct GcsConfig {
    /// Bucket name (`storage.gcs.bucket.name`).
    pub bucket: String,
    /// Endpoint URL without trailing `/` (`storage.gcs.endpoint.url`); `None` = Google's.
    pub endpoint: Option<String>,
    /// Resumable upload chunk size in bytes, a multiple of [`UPLOAD_QUANTUM`].
    pub chunk_size: u64,
    /// Credentials (`storage.gcs.credentials.*`).
    pub credentials: CredentialsSource,
    /// Attempts per request (SDK uploads and reads, JSON API list / delete), >= 1.
    /// Default 10. No key: the Java plugin has none either.
    pub max_attempts: u32,
    /// Objects per JSON API list page (`maxResults`), 1..=1000. Default 1000.
    pub list_page_size: u32,
    /// Deletes in flight at once. Default 32.
    pub delete_concurrency: usize,
}

impl GcsConfig {
    /// Validates the `storage.gcs.*` keys.
    ///
    /// # Errors
    /// [`ConfigError`] naming the key: missing bucket, bad endpoint URL, chunk size not a
    /// multiple of 256 KiB or out of range, more than one credentials key, no credentials
    /// key without an endpoint, or an unknown `storage.gcs.*` key.
    pub fn from_storage(storage: &StorageConfig) -> Result<Self, ConfigError> {
        if let Some(unknown) = storage.keys().filter(|k| k.starts_with("gcs.")).find(|k| {
            !KEYS
                .iter()
                .any(|d| d.name.strip_prefix("storage.") == Some(*k))
        }) {
            return Err(ConfigError::new(
                format!("storage.{unknown}"),
                "<ignored>",
                format!(
                    "a known key: {}",
                    KEYS.iter().map(|d| d.name).collect::<Vec<_>>().join(", ")
                ),
            ));
        }

        let bucket = storage.require(BUCKET_NAME)?.to_string();
        if !valid_bucket_name(&bucket) {
            return Err(ConfigError::new(
                format!("storage.{BUCKET_NAME}"),
                bucket,
                "a GCS bucket name: 3 to 222 characters of a-z, 0-9, '-', '_', '.'",
            ));
        }

        let endpoint = match storage.get(ENDPOINT_URL) {
            None => None,
            Some(url) => {
                let trimmed = url.trim_end_matches('/');
                let ok = (trimmed.starts_with("http://") || trimmed.starts_with("https://"))
                    && trimmed.len() > "https://".len()
                    && !trimmed.contains(char::is_whitespace);
                if !ok {
                    return Err(ConfigError::new(
                        format!("storage.{ENDPOINT_URL}"),
                        url,
                        "an http:// or https:// URL",
                    ));
                }
                Some(trimmed.to_string())
            }
        };

        let chunk_size = storage.get_u64(
            RESUMABLE_UPLOAD_CHUNK_SIZE,
            DEFAULT_CHUNK_SIZE,
            UPLOAD_QUANTUM,
            MAX_CHUNK_SIZE,
        )?;
        if chunk_size % UPLOAD_QUANTUM != 0 {
            return Err(ConfigError::new(
                format!("storage.{RESUMABLE_UPLOAD_CHUNK_SIZE}"),
                chunk_size.to_string(),
                format!("a multiple of 256 KiB ({UPLOAD_QUANTUM} bytes)"),
            ));
        }

        let credentials = credentials_source(storage, endpoint.is_some())?;

        Ok(Self {
            bucket,
            endpoint,
            chunk_size,
            credentials,
            max_attempts: 10,
            list_page_size: 1000,
            delete_concurrency: 32,
        })
    }
}

fn credentials_source(
    storage: &StorageConfig,
    has_endpoint: bool,
) -> Result<CredentialsSource, ConfigError> {
    let use_default = storage.get_bool(CREDENTIALS_DEFAULT, false)?;
    let json = storage.get(CREDENTIALS_JSON);
    let path = storage.get(CREDENTIALS_PATH);
    let set: Vec<&str> = [
        use_default.then_some(CREDENTIALS_DEFAULT),
        json.map(|_| CREDENTIALS_JSON),
        path.map(|_| CREDENTIALS_PATH),
    ]
    .into_iter()
    .flatten()
    .collect();
    if set.len() > 1 {
        // Name the second key; the value may be a secret.
        let key = set[1];
        let value = if key == CREDENTIALS_JSON {
            "<redacted>".to_string()
        } else {
            storage.get(key).unwrap_or_default().to_string()
        };
        return Err(ConfigError::new(
            format!("storage.{key}"),
            value,
            format!(
                "only one of storage.{CREDENTIALS_DEFAULT}=true, storage.{CREDENTIALS_JSON}, \
                 storage.{CREDENTIALS_PATH} (found {})",
                set.iter()
                    .map(|k| format!("storage.{k}"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        ));
    }
    if use_default {
        return Ok(CredentialsSource::Default);
    }
    if let Some(json) = json {
        if serde_json::from_str::<serde_json::Value>(json)
            .ok()
            .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned))
            .is_none()
        {
            return Err(ConfigError::new(
                format!("storage.{CREDENTIALS_JSON}"),
                "<redacted>",
                "a credentials JSON object with a \"type\" field",
            ));
        }
        return Ok(CredentialsSource::Json(Secret::new(json)));
    }
    if let Some(path) = path {
        return Ok(CredentialsSource::Path(PathBuf::from(path)));
    }
    if has_endpoint {
        return Ok(CredentialsSource::Anonymous);
    }
    Err(ConfigError::new(
        format!("storage.{CREDENTIALS_DEFAULT}"),
        "<missing>",
        format!(
            "one of storage.{CREDENTIALS_DEFAULT}=true, storage.{CREDENTIALS_JSON}, \
             storage.{CREDENTIALS_PATH} (anonymous access needs storage.{ENDPOINT_URL})"
        ),
    ))
}

/// GCS bucket naming rules, in short: 3-63 characters (222 with dots), lowercase letters,
/// digits, `-`, `_`, `.`, starting and ending with a letter or digit.
/// Source: <https://cloud.google.com/storage/docs/buckets#naming>.
fn valid_bucket_name(name: &str) -> bool {
    let len_ok = (3..=222).contains(&name.len()) && (name.contains('.') || name.len() <= 63);
    let chars_ok = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.'));
    let ends_ok = name
        .bytes()
        .next()
        .zip(name.bytes().last())
        .is_some_and(|(a, z)| a.is_ascii_alphanumeric() && z.is_ascii_alphanumeric());
    len_ok && chars_ok && ends_ok
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> Result<GcsConfig, ConfigError> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        GcsConfig::from_storage(&StorageConfig::new(map))
    }

    #[test]
    fn defaults_with_emulator_endpoint_are_anonymous() {
        let c = cfg(&[
            ("gcs.bucket.name", "b-1"),
            ("gcs.endpoint.url", "http://127.0.0.1/"),
        ])
        .unwrap();
        assert_eq!(c.bucket, "b-1");
        assert_eq!(c.endpoint.as_deref(), Some("http://127.0.0.1"));
        assert_eq!(c.chunk_size, 25 * 1024 * 1024);
        assert_eq!(c.credentials, CredentialsSource::Anonymous);
    }

    #[test]
    fn bucket_required_and_validated() {
        let e = cfg(&[("gcs.endpoint.url", "http://x")]).unwrap_err();
        assert_eq!(e.key, "storage.gcs.bucket.name");
        let e = cfg(&[
            ("gcs.bucket.name", "gs://Bad"),
            ("gcs.credentials.default", "true"),
        ])
        .unwrap_err();
        assert_eq!(e.key, "storage.gcs.bucket.name");
    }

    #[test]
    fn chunk_size_must_be_multiple_of_256_kib() {
        let base = [
            ("gcs.bucket.name", "bkt"),
            ("gcs.credentials.default", "true"),
        ];
        for bad in ["1000", "262145", "0", "-1", "x", "2147483648"] {
            let mut p = base.to_vec();
            p.push(("gcs.resumable.upload.chunk.size", bad));
            let e = cfg(&p).unwrap_err();
            assert_eq!(e.key, "storage.gcs.resumable.upload.chunk.size", "{bad}");
        }
        let mut p = base.to_vec();
        p.push(("gcs.resumable.upload.chunk.size", "524288"));
        assert_eq!(cfg(&p).unwrap().chunk_size, 524288);
    }

    #[test]
    fn exactly_one_credentials_source() {
        let e = cfg(&[
            ("gcs.bucket.name", "bkt"),
            ("gcs.credentials.default", "true"),
            (
                "gcs.credentials.json",
                r#"{"type":"service_account","private_key":"SECRET"}"#,
            ),
        ])
        .unwrap_err();
        assert_eq!(e.key, "storage.gcs.credentials.json");
        assert!(!e.to_string().contains("SECRET"), "{e}");

        let e = cfg(&[("gcs.bucket.name", "bkt")]).unwrap_err();
        assert_eq!(e.key, "storage.gcs.credentials.default");

        let c = cfg(&[
            ("gcs.bucket.name", "bkt"),
            ("gcs.credentials.default", "false"),
            ("gcs.credentials.path", "/etc/gcs.json"),
        ])
        .unwrap();
        assert_eq!(
            c.credentials,
            CredentialsSource::Path("/etc/gcs.json".into())
        );
    }

    #[test]
    fn json_credentials_are_redacted() {
        let c = cfg(&[
            ("gcs.bucket.name", "bkt"),
            (
                "gcs.credentials.json",
                r#"{"type":"service_account","private_key":"SECRET"}"#,
            ),
        ])
        .unwrap();
        assert!(!format!("{c:?}").contains("SECRET"));
        let e = cfg(&[
            ("gcs.bucket.name", "bkt"),
            ("gcs.credentials.json", "SECRET{"),
        ])
        .unwrap_err();
        assert!(!e.to_string().contains("SECRET"), "{e}");
    }

    #[test]
    fn unknown_gcs_key_is_rejected() {
        let e = cfg(&[
            ("gcs.bucket.name", "bkt"),
            ("gcs.credentials.default", "true"),
            ("gcs.bucket", "typo"),
        ])
        .unwrap_err();
        assert_eq!(e.key, "storage.gcs.bucket");
    }

    #[test]
    fn bad_endpoint() {
        let e = cfg(&[
            ("gcs.bucket.name", "bkt"),
            ("gcs.endpoint.url", "127.0.0.1:80"),
        ])
        .unwrap_err();
        assert_eq!(e.key, "storage.gcs.endpoint.url");
    }
}
