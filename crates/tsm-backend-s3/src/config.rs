//! The `storage.s3.*` / `storage.aws.*` keys: parsed once from [`StorageConfig`] into a
//! typed [`S3Config`], and documented in [`KEYS`] (the source of the configuration
//! reference).
//!
//! Key names and defaults are the Java plugin's (`S3StorageConfig` of Aiven's
//! tiered-storage-for-apache-kafka), so a broker's `rsm.config.storage.*` block carries
//! over unchanged: every key of the Java plugin's `S3StorageConfig` is read, the
//! credentials provider class mapped to the Rust SDK's provider of the same source
//! ([`ProviderClass`]). Keys beyond the Java plugin: `aws.session.token`,
//! `aws.credentials.file`, `s3.sse.*` and `s3.multipart.upload.parts.in.flight`.

use std::path::PathBuf;
use std::time::Duration;

use aws_sdk_s3::types::StorageClass;
use tsm_storage::config::{ConfigError, ConfigKeyDoc, Secret, StorageConfig};

/// `s3.bucket.name`
pub const BUCKET_NAME: &str = "s3.bucket.name";
/// `s3.region`
pub const REGION: &str = "s3.region";
/// `s3.endpoint.url`
pub const ENDPOINT_URL: &str = "s3.endpoint.url";
/// `s3.path.style.access.enabled`
pub const PATH_STYLE: &str = "s3.path.style.access.enabled";
/// `s3.multipart.upload.part.size`
pub const PART_SIZE: &str = "s3.multipart.upload.part.size";
/// `s3.multipart.upload.parts.in.flight`
pub const PARTS_IN_FLIGHT: &str = "s3.multipart.upload.parts.in.flight";
/// `s3.storage.class`
pub const STORAGE_CLASS: &str = "s3.storage.class";
/// `s3.api.call.timeout`
pub const API_CALL_TIMEOUT: &str = "s3.api.call.timeout";
/// `s3.api.call.attempt.timeout`
pub const API_CALL_ATTEMPT_TIMEOUT: &str = "s3.api.call.attempt.timeout";
/// `s3.sse.algorithm`
pub const SSE_ALGORITHM: &str = "s3.sse.algorithm";
/// `s3.sse.kms.key.id`
pub const SSE_KMS_KEY_ID: &str = "s3.sse.kms.key.id";
/// `aws.access.key.id`
pub const ACCESS_KEY_ID: &str = "aws.access.key.id";
/// `aws.secret.access.key`
pub const SECRET_ACCESS_KEY: &str = "aws.secret.access.key";
/// `aws.session.token`
pub const SESSION_TOKEN: &str = "aws.session.token";
/// `aws.credentials.file`
pub const CREDENTIALS_FILE: &str = "aws.credentials.file";
/// `aws.certificate.check.enabled`
pub const CERTIFICATE_CHECK: &str = "aws.certificate.check.enabled";
/// `aws.checksum.check.enabled`
pub const CHECKSUM_CHECK: &str = "aws.checksum.check.enabled";
/// `aws.credentials.provider.class`
pub const CREDENTIALS_PROVIDER_CLASS: &str = "aws.credentials.provider.class";
/// `s3.legacy.md5.plugin.enabled`
pub const LEGACY_MD5: &str = "s3.legacy.md5.plugin.enabled";

/// Smallest multipart part S3 accepts (all parts but the last): 5 MiB.
pub const PART_SIZE_MIN: u64 = 5 * 1024 * 1024;
/// Largest multipart part S3 accepts: 5 GiB.
pub const PART_SIZE_MAX: u64 = 5 * 1024 * 1024 * 1024;
/// Default part size, the Java plugin's: 25 MiB.
pub const PART_SIZE_DEFAULT: u64 = 25 * 1024 * 1024;
/// Default number of parts uploaded at once.
pub const PARTS_IN_FLIGHT_DEFAULT: u64 = 4;
/// Most parts uploaded at once.
pub const PARTS_IN_FLIGHT_MAX: u64 = 64;

/// Every key this backend reads, without `storage.` in front (the engine adds it).
pub static KEYS: &[ConfigKeyDoc] = &[
    ConfigKeyDoc {
        name: "storage.s3.bucket.name",
        default: "",
        doc: "Required. S3 bucket holding the segments, indexes and manifests.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.s3.region",
        default: "",
        doc: "AWS region of the bucket (e.g. `eu-west-1`). When empty, the SDK's region chain \
              (`AWS_REGION`, profile, instance metadata) decides; building fails if none is found.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.s3.endpoint.url",
        default: "",
        doc: "Custom endpoint URL (`http(s)://host[:port]`, no path), for S3-compatible \
              stores such as MinIO. Empty: the AWS endpoint of the region.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.s3.path.style.access.enabled",
        default: "",
        doc: "`true`: path-style URLs (`endpoint/bucket/key`), needed by most S3-compatible \
              stores and by endpoints on an IP address; `false`: virtual-hosted URLs. Empty: \
              the SDK decides (virtual-hosted on AWS).",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.s3.multipart.upload.part.size",
        default: "26214400",
        doc: "Part size in bytes for multipart uploads (5 MiB to 5 GiB; default 25 MiB). \
              Objects up to this size go in one PutObject. Memory per upload is at most \
              part size x parts in flight.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.s3.multipart.upload.parts.in.flight",
        default: "4",
        doc: "How many parts of one multipart upload are buffered and uploaded at once \
              (1 to 64). Not in the Java plugin.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.s3.storage.class",
        default: "STANDARD",
        doc: "Storage class of uploaded objects, one of the S3 API values (`STANDARD`, \
              `STANDARD_IA`, `INTELLIGENT_TIERING`, `ONEZONE_IA`, `GLACIER_IR`, ...).",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.s3.api.call.timeout",
        default: "",
        doc: "Timeout in milliseconds of one S3 API call including all retries. Empty: none.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.s3.api.call.attempt.timeout",
        default: "",
        doc: "Timeout in milliseconds of one attempt (one HTTP request) of an S3 API call. \
              Empty: none.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.s3.sse.algorithm",
        default: "",
        doc: "Server-side encryption requested on upload: `AES256` (SSE-S3) or `aws:kms` \
              (SSE-KMS). Empty: the bucket's default encryption. Not in the Java plugin.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.s3.sse.kms.key.id",
        default: "",
        doc: "KMS key id or ARN for `aws:kms`; empty: the account's `aws/s3` key. \
              Not in the Java plugin.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.aws.access.key.id",
        default: "",
        doc: "Static access key id; set together with `storage.aws.secret.access.key`. When no static \
              keys, no credentials file and no `storage.aws.credentials.provider.class` are \
              set, the SDK's default chain is used (env, profile, web identity / IRSA, ECS \
              container, EC2 instance metadata).",
        secret: true,
    },
    ConfigKeyDoc {
        name: "storage.aws.secret.access.key",
        default: "",
        doc: "Static secret access key; set together with `storage.aws.access.key.id`.",
        secret: true,
    },
    ConfigKeyDoc {
        name: "storage.aws.session.token",
        default: "",
        doc: "Session token of temporary static credentials; needs the static keys.",
        secret: true,
    },
    ConfigKeyDoc {
        name: "storage.aws.credentials.file",
        default: "",
        doc: "Path of an AWS shared-credentials file (`[default]` profile, or `AWS_PROFILE`: \
              `aws_access_key_id`, `aws_secret_access_key`, optional `aws_session_token`). \
              Re-read when it changes (checked at most once a minute), so rotated keys are \
              picked up without a restart. Exclusive with the static keys.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.aws.credentials.provider.class",
        default: "",
        doc: "Where credentials come from, as the Java plugin's AWS SDK v2 provider class names it \
              (the package `software.amazon.awssdk.auth.credentials.` may be left out); tsm uses \
              the Rust SDK's provider of the same source: `DefaultCredentialsProvider` (the \
              default chain: env, profile, web identity / IRSA, ECS container, EC2 instance \
              metadata), `EnvironmentVariableCredentialsProvider` (`AWS_ACCESS_KEY_ID`, \
              `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), `ProfileCredentialsProvider` \
              (`~/.aws/credentials` and `~/.aws/config`, profile `AWS_PROFILE` or `default`), \
              `WebIdentityTokenFileCredentialsProvider` or \
              `software.amazon.awssdk.services.sts.auth.StsWebIdentityTokenFileCredentialsProvider` \
              (`AWS_WEB_IDENTITY_TOKEN_FILE`, `AWS_ROLE_ARN`: IRSA), \
              `ContainerCredentialsProvider` (ECS / EKS Pod Identity endpoint), \
              `InstanceProfileCredentialsProvider` (EC2 instance metadata). Any other value is a \
              configuration error naming these; `SystemPropertyCredentialsProvider` too (JVM \
              system properties are not visible to the native library: use the environment \
              variables). Not together with the static keys or `storage.aws.credentials.file`. \
              Unset: the static keys, else the credentials file, else the default chain.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.s3.legacy.md5.plugin.enabled",
        default: "false",
        doc: "`true`: requests whose S3 API requires a checksum (tsm sends one: DeleteObjects, \
              the batched delete) also carry a `Content-MD5` header, as the Java plugin's \
              `LegacyMd5Plugin` does, for older S3-compatible stores that refuse them without it \
              (`MissingContentMD5`, `Missing required header for this request: Content-Md5`). \
              The SDK's CRC32 checksum header is still sent. `false`: the CRC32 checksum only, \
              which AWS S3 and current S3-compatible stores accept.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.aws.certificate.check.enabled",
        default: "true",
        doc: "TLS certificate verification. Only `true` is supported: install the server's CA \
              in the system trust store instead of turning verification off.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.aws.checksum.check.enabled",
        default: "false",
        doc: "`true`: the SDK sends CRC checksums on every upload and validates them on \
              downloads (when_supported). `false` (default, as in the Java plugin): only where \
              the S3 API requires one (when_required), which every S3-compatible store accepts.",
        secret: false,
    },
];

/// Where credentials come from, in precedence order.
#[derive(Clone, Debug)]
pub enum CredentialsSource {
    /// `aws.access.key.id` + `aws.secret.access.key` (+ `aws.session.token`).
    Static {
        /// Access key id.
        access_key_id: Secret,
        /// Secret access key.
        secret_access_key: Secret,
        /// Session token of temporary credentials.
        session_token: Option<Secret>,
    },
    /// `aws.credentials.file`, re-read when it changes.
    File(PathBuf),
    /// `aws.credentials.provider.class`: one source of the Rust SDK (the default chain
    /// when the class is `DefaultCredentialsProvider`).
    Provider(ProviderClass),
    /// The SDK's default chain: env, profile, web identity (IRSA), container, IMDS.
    DefaultChain,
}

/// The credentials sources `aws.credentials.provider.class` may name: the AWS SDK for Java
/// v2 provider classes a Java-plugin configuration holds, each mapped to the Rust SDK's
/// provider of the same source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderClass {
    /// `DefaultCredentialsProvider`: the default chain.
    Default,
    /// `EnvironmentVariableCredentialsProvider`: `AWS_ACCESS_KEY_ID`, ...
    Environment,
    /// `ProfileCredentialsProvider`: the shared config and credentials files.
    Profile,
    /// `WebIdentityTokenFileCredentialsProvider` (and STS's
    /// `StsWebIdentityTokenFileCredentialsProvider`): `AWS_WEB_IDENTITY_TOKEN_FILE` +
    /// `AWS_ROLE_ARN`, assumed through STS (IRSA).
    WebIdentity,
    /// `ContainerCredentialsProvider`: the ECS / EKS Pod Identity credentials endpoint.
    Container,
    /// `InstanceProfileCredentialsProvider`: EC2 instance metadata (IMDSv2).
    InstanceProfile,
}

/// Package of the Java SDK's credentials providers.
const JAVA_CREDENTIALS_PACKAGE: &str = "software.amazon.awssdk.auth.credentials.";
/// Package of the Java SDK's STS providers.
const JAVA_STS_PACKAGE: &str = "software.amazon.awssdk.services.sts.auth.";

impl ProviderClass {
    /// Every supported class (simple names, in the Java SDK's credentials package unless
    /// noted) and what it maps to.
    pub const ALL: &'static [(&'static str, ProviderClass)] = &[
        ("DefaultCredentialsProvider", ProviderClass::Default),
        (
            "EnvironmentVariableCredentialsProvider",
            ProviderClass::Environment,
        ),
        ("ProfileCredentialsProvider", ProviderClass::Profile),
        (
            "WebIdentityTokenFileCredentialsProvider",
            ProviderClass::WebIdentity,
        ),
        // In software.amazon.awssdk.services.sts.auth.
        (
            "StsWebIdentityTokenFileCredentialsProvider",
            ProviderClass::WebIdentity,
        ),
        ("ContainerCredentialsProvider", ProviderClass::Container),
        (
            "InstanceProfileCredentialsProvider",
            ProviderClass::InstanceProfile,
        ),
    ];

    /// The class `value` names: a full Java class name or its simple name.
    pub fn parse(value: &str) -> Result<Self, ConfigError> {
        let simple = value
            .strip_prefix(JAVA_CREDENTIALS_PACKAGE)
            .or_else(|| value.strip_prefix(JAVA_STS_PACKAGE))
            .unwrap_or(value);
        let sts_only = simple == "StsWebIdentityTokenFileCredentialsProvider";
        let in_package = !value.contains('.')
            || value.starts_with(if sts_only {
                JAVA_STS_PACKAGE
            } else {
                JAVA_CREDENTIALS_PACKAGE
            });
        if in_package && let Some((_, class)) = Self::ALL.iter().find(|(name, _)| *name == simple) {
            return Ok(*class);
        }
        let key = full(CREDENTIALS_PROVIDER_CLASS);
        let why = match simple {
            "StaticCredentialsProvider" => format!(
                "not StaticCredentialsProvider: set {} and {} instead (and leave {key} unset)",
                full(ACCESS_KEY_ID),
                full(SECRET_ACCESS_KEY)
            ),
            "SystemPropertyCredentialsProvider" => format!(
                "not SystemPropertyCredentialsProvider: JVM system properties are not visible to \
                 tsm's native library; use EnvironmentVariableCredentialsProvider \
                 (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) or {}",
                full(ACCESS_KEY_ID)
            ),
            _ => format!(
                "one of the AWS SDK credentials providers tsm maps ({JAVA_CREDENTIALS_PACKAGE}\
                 <name>, or the name alone): {}",
                Self::ALL
                    .iter()
                    .map(
                        |(name, _)| if *name == "StsWebIdentityTokenFileCredentialsProvider" {
                            format!("{JAVA_STS_PACKAGE}{name}")
                        } else {
                            (*name).to_string()
                        }
                    )
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        Err(ConfigError::new(key, value, why))
    }

    /// What the provider reads, for logs.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Default => {
                "the SDK's default chain (env, profile, web identity, container, instance metadata)"
            }
            Self::Environment => "environment variables AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY",
            Self::Profile => "the shared config and credentials files (AWS_PROFILE or default)",
            Self::WebIdentity => "web identity (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN) via STS",
            Self::Container => "the container credentials endpoint (ECS, EKS Pod Identity)",
            Self::InstanceProfile => "EC2 instance metadata (IMDS)",
        }
    }
}

/// Server-side encryption requested on upload (`s3.sse.*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sse {
    /// SSE-S3 (`x-amz-server-side-encryption: AES256`).
    S3,
    /// SSE-KMS with an optional key id / ARN (`aws:kms`).
    Kms {
        /// Key id or ARN; `None` uses the account's `aws/s3` key.
        key_id: Option<String>,
    },
}

/// The validated S3 settings. `Debug` never shows secrets.
#[derive(Clone, Debug)]
pub struct S3Config {
    /// `s3.bucket.name`.
    pub bucket: String,
    /// `s3.region`, `None` for the SDK's region chain.
    pub region: Option<String>,
    /// `s3.endpoint.url`.
    pub endpoint_url: Option<String>,
    /// `s3.path.style.access.enabled`, `None` lets the SDK decide.
    pub path_style: Option<bool>,
    /// `s3.multipart.upload.part.size` in bytes.
    pub part_size: u64,
    /// `s3.multipart.upload.parts.in.flight`.
    pub parts_in_flight: usize,
    /// `s3.storage.class`.
    pub storage_class: StorageClass,
    /// `s3.api.call.timeout`.
    pub api_call_timeout: Option<Duration>,
    /// `s3.api.call.attempt.timeout`.
    pub api_call_attempt_timeout: Option<Duration>,
    /// `s3.sse.*`.
    pub sse: Option<Sse>,
    /// `aws.*` credentials.
    pub credentials: CredentialsSource,
    /// `aws.checksum.check.enabled`.
    pub checksum_check: bool,
    /// `s3.legacy.md5.plugin.enabled`: `Content-MD5` on requests that need a checksum.
    pub legacy_md5: bool,
}

fn full(key: &str) -> String {
    format!("storage.{key}")
}

fn secret(cfg: &StorageConfig, key: &str) -> Option<Secret> {
    cfg.get(key).map(Secret::new)
}

fn millis(cfg: &StorageConfig, key: &str) -> Result<Option<Duration>, ConfigError> {
    if cfg.get(key).is_none() {
        return Ok(None);
    }
    let ms = cfg.get_u64(key, 0, 1, i64::MAX as u64)?;
    Ok(Some(Duration::from_millis(ms)))
}

/// Accepts `http(s)://host[:port]` with an optional trailing `/`: the SDK mis-builds
/// request URLs for an endpoint with a path prefix.
fn validate_endpoint(url: &str) -> Result<(), ConfigError> {
    let bad = |why: &str| ConfigError::new(full(ENDPOINT_URL), url, why);
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| bad("an http:// or https:// URL"))?;
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.is_empty() || authority.contains(['/', '?', '#', ' ', '@']) {
        return Err(bad(
            "http(s)://host[:port] without a path, query or user info",
        ));
    }
    Ok(())
}

impl S3Config {
    /// Parses and validates the `storage.*` keys. Errors name the full key and, for
    /// secrets, show `<redacted>` instead of the value.
    pub fn from_storage_config(cfg: &StorageConfig) -> Result<Self, ConfigError> {
        let bucket = cfg.require(BUCKET_NAME)?.to_string();
        let region = cfg.get(REGION).map(str::to_string);
        let endpoint_url = match cfg.get(ENDPOINT_URL) {
            Some(url) => {
                validate_endpoint(url)?;
                Some(url.trim_end_matches('/').to_string())
            }
            None => None,
        };
        let path_style = match cfg.get(PATH_STYLE) {
            None => None,
            Some(_) => Some(cfg.get_bool(PATH_STYLE, false)?),
        };
        let part_size = cfg.get_u64(PART_SIZE, PART_SIZE_DEFAULT, PART_SIZE_MIN, PART_SIZE_MAX)?;
        let parts_in_flight = cfg.get_u64(
            PARTS_IN_FLIGHT,
            PARTS_IN_FLIGHT_DEFAULT,
            1,
            PARTS_IN_FLIGHT_MAX,
        )? as usize;
        let storage_class = match cfg.get(STORAGE_CLASS) {
            None => StorageClass::Standard,
            Some(v) if StorageClass::values().contains(&v) => StorageClass::from(v),
            Some(v) => {
                return Err(ConfigError::new(
                    full(STORAGE_CLASS),
                    v,
                    format!("one of {}", StorageClass::values().join(", ")),
                ));
            }
        };
        let api_call_timeout = millis(cfg, API_CALL_TIMEOUT)?;
        let api_call_attempt_timeout = millis(cfg, API_CALL_ATTEMPT_TIMEOUT)?;

        let kms_key_id = cfg.get(SSE_KMS_KEY_ID).map(str::to_string);
        let sse = match cfg.get(SSE_ALGORITHM) {
            None => None,
            Some("AES256") => Some(Sse::S3),
            Some("aws:kms") => Some(Sse::Kms {
                key_id: kms_key_id.clone(),
            }),
            Some(v) => {
                return Err(ConfigError::new(
                    full(SSE_ALGORITHM),
                    v,
                    "AES256 (SSE-S3) or aws:kms (SSE-KMS)",
                ));
            }
        };
        if kms_key_id.is_some() && !matches!(sse, Some(Sse::Kms { .. })) {
            return Err(ConfigError::new(
                full(SSE_KMS_KEY_ID),
                kms_key_id.unwrap_or_default(),
                format!("only with {}=aws:kms", full(SSE_ALGORITHM)),
            ));
        }

        let access = secret(cfg, ACCESS_KEY_ID);
        let secret_key = secret(cfg, SECRET_ACCESS_KEY);
        let token = secret(cfg, SESSION_TOKEN);
        let file = cfg.get(CREDENTIALS_FILE).map(PathBuf::from);
        let provider = match cfg.get(CREDENTIALS_PROVIDER_CLASS) {
            None => None,
            Some(class) => {
                // As in the Java plugin: a provider class or static keys, not both.
                let other = if access.is_some() || secret_key.is_some() {
                    Some(format!(
                        "{} / {}",
                        full(ACCESS_KEY_ID),
                        full(SECRET_ACCESS_KEY)
                    ))
                } else if file.is_some() {
                    Some(full(CREDENTIALS_FILE))
                } else {
                    None
                };
                let provider = ProviderClass::parse(class)?;
                if let Some(other) = other {
                    return Err(ConfigError::new(
                        full(CREDENTIALS_PROVIDER_CLASS),
                        class,
                        format!("not together with {other}: set one source of credentials"),
                    ));
                }
                Some(provider)
            }
        };
        let credentials = match (access, secret_key, file) {
            (Some(_), Some(_), Some(f)) => {
                return Err(ConfigError::new(
                    full(CREDENTIALS_FILE),
                    f.display().to_string(),
                    format!(
                        "not together with {} / {}",
                        full(ACCESS_KEY_ID),
                        full(SECRET_ACCESS_KEY)
                    ),
                ));
            }
            (Some(a), Some(s), None) => CredentialsSource::Static {
                access_key_id: a,
                secret_access_key: s,
                session_token: token,
            },
            (Some(_), None, _) => {
                return Err(ConfigError::new(
                    full(SECRET_ACCESS_KEY),
                    "<missing>",
                    format!("required when {} is set", full(ACCESS_KEY_ID)),
                ));
            }
            (None, Some(_), _) => {
                return Err(ConfigError::new(
                    full(ACCESS_KEY_ID),
                    "<missing>",
                    format!("required when {} is set", full(SECRET_ACCESS_KEY)),
                ));
            }
            (None, None, file) => {
                if token.is_some() {
                    return Err(ConfigError::new(
                        full(SESSION_TOKEN),
                        "<redacted>",
                        format!(
                            "only with {} and {}",
                            full(ACCESS_KEY_ID),
                            full(SECRET_ACCESS_KEY)
                        ),
                    ));
                }
                match (file, provider) {
                    (Some(f), _) => CredentialsSource::File(f),
                    (None, Some(p)) => CredentialsSource::Provider(p),
                    (None, None) => CredentialsSource::DefaultChain,
                }
            }
        };
        if !cfg.get_bool(CERTIFICATE_CHECK, true)? {
            return Err(ConfigError::new(
                full(CERTIFICATE_CHECK),
                "false",
                "true only: add the server's CA certificate to the system trust store",
            ));
        }
        let checksum_check = cfg.get_bool(CHECKSUM_CHECK, false)?;
        let legacy_md5 = cfg.get_bool(LEGACY_MD5, false)?;
        Ok(Self {
            bucket,
            region,
            endpoint_url,
            path_style,
            part_size,
            parts_in_flight,
            storage_class,
            api_call_timeout,
            api_call_attempt_timeout,
            sse,
            credentials,
            checksum_check,
            legacy_md5,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> StorageConfig {
        StorageConfig::new(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        )
    }

    #[test]
    fn defaults_match_the_java_plugin() {
        let c = S3Config::from_storage_config(&cfg(&[(BUCKET_NAME, "b")])).unwrap();
        assert_eq!(c.part_size, 25 * 1024 * 1024);
        assert_eq!(c.storage_class, StorageClass::Standard);
        assert!(!c.checksum_check);
        assert!(c.path_style.is_none());
        assert!(matches!(c.credentials, CredentialsSource::DefaultChain));
        assert_eq!(c.parts_in_flight, 4);
    }

    #[test]
    fn bucket_is_required() {
        let e = S3Config::from_storage_config(&cfg(&[])).unwrap_err();
        assert_eq!(e.key, "storage.s3.bucket.name");
    }

    #[test]
    fn part_size_bounds() {
        for bad in ["5242879", "5368709121", "x"] {
            let e = S3Config::from_storage_config(&cfg(&[(BUCKET_NAME, "b"), (PART_SIZE, bad)]))
                .unwrap_err();
            assert_eq!(e.key, "storage.s3.multipart.upload.part.size");
        }
        let c = S3Config::from_storage_config(&cfg(&[(BUCKET_NAME, "b"), (PART_SIZE, "5242880")]))
            .unwrap();
        assert_eq!(c.part_size, PART_SIZE_MIN);
    }

    #[test]
    fn static_keys_go_together_and_stay_secret() {
        let e = S3Config::from_storage_config(&cfg(&[
            (BUCKET_NAME, "b"),
            (ACCESS_KEY_ID, "AKIAEXAMPLE"),
        ]))
        .unwrap_err();
        assert_eq!(e.key, "storage.aws.secret.access.key");
        let c = S3Config::from_storage_config(&cfg(&[
            (BUCKET_NAME, "b"),
            (ACCESS_KEY_ID, "AKIAEXAMPLE"),
            (SECRET_ACCESS_KEY, "very-secret-value"),
            (SESSION_TOKEN, "tok-secret"),
        ]))
        .unwrap();
        let dbg = format!("{c:?}");
        assert!(!dbg.contains("AKIAEXAMPLE"), "{dbg}");
        assert!(!dbg.contains("very-secret-value"), "{dbg}");
        assert!(!dbg.contains("tok-secret"), "{dbg}");
        let e = S3Config::from_storage_config(&cfg(&[
            (BUCKET_NAME, "b"),
            (SESSION_TOKEN, "xyz-tok-val"),
        ]))
        .unwrap_err();
        assert!(!e.to_string().contains("xyz-tok-val"), "{e}");
    }

    #[test]
    fn endpoint_must_have_no_path() {
        for bad in ["localhost:9000", "http://h:9000/prefix", "ftp://h"] {
            let e = S3Config::from_storage_config(&cfg(&[(BUCKET_NAME, "b"), (ENDPOINT_URL, bad)]))
                .unwrap_err();
            assert_eq!(e.key, "storage.s3.endpoint.url");
        }
        let c = S3Config::from_storage_config(&cfg(&[
            (BUCKET_NAME, "b"),
            (ENDPOINT_URL, "http://127.0.0.1:9000/"),
        ]))
        .unwrap();
        assert_eq!(c.endpoint_url.as_deref(), Some("http://127.0.0.1:9000"));
    }

    #[test]
    fn storage_class_and_sse() {
        let e = S3Config::from_storage_config(&cfg(&[(BUCKET_NAME, "b"), (STORAGE_CLASS, "HOT")]))
            .unwrap_err();
        assert_eq!(e.key, "storage.s3.storage.class");
        let c = S3Config::from_storage_config(&cfg(&[
            (BUCKET_NAME, "b"),
            (SSE_ALGORITHM, "aws:kms"),
            (SSE_KMS_KEY_ID, "alias/x"),
        ]))
        .unwrap();
        assert_eq!(
            c.sse,
            Some(Sse::Kms {
                key_id: Some("alias/x".into())
            })
        );
        let e = S3Config::from_storage_config(&cfg(&[
            (BUCKET_NAME, "b"),
            (SSE_ALGORITHM, "AES256"),
            (SSE_KMS_KEY_ID, "alias/x"),
        ]))
        .unwrap_err();
        assert_eq!(e.key, "storage.s3.sse.kms.key.id");
    }

    #[test]
    fn keys_are_all_documented() {
        for key in [
            BUCKET_NAME,
            REGION,
            ENDPOINT_URL,
            PATH_STYLE,
            PART_SIZE,
            PARTS_IN_FLIGHT,
            STORAGE_CLASS,
            API_CALL_TIMEOUT,
            API_CALL_ATTEMPT_TIMEOUT,
            SSE_ALGORITHM,
            SSE_KMS_KEY_ID,
            ACCESS_KEY_ID,
            SECRET_ACCESS_KEY,
            SESSION_TOKEN,
            CREDENTIALS_FILE,
            CERTIFICATE_CHECK,
            CHECKSUM_CHECK,
            CREDENTIALS_PROVIDER_CLASS,
            LEGACY_MD5,
        ] {
            assert!(
                KEYS.iter().any(|k| k.name == full(key)),
                "{key} missing from KEYS"
            );
        }
        assert_eq!(KEYS.len(), 19);
    }

    /// Every key of the Java plugin's `S3StorageConfig` (its documented keys, 2025) is one
    /// of ours.
    #[test]
    fn every_java_plugin_key_is_known() {
        for key in [
            "s3.bucket.name",
            "s3.region",
            "s3.endpoint.url",
            "s3.path.style.access.enabled",
            "s3.multipart.upload.part.size",
            "s3.storage.class",
            "s3.api.call.timeout",
            "s3.api.call.attempt.timeout",
            "s3.legacy.md5.plugin.enabled",
            "aws.access.key.id",
            "aws.secret.access.key",
            "aws.credentials.provider.class",
            "aws.certificate.check.enabled",
            "aws.checksum.check.enabled",
        ] {
            assert!(KEYS.iter().any(|k| k.name == full(key)), "{key}");
        }
    }

    #[test]
    fn credentials_provider_classes_map_to_sdk_providers() {
        let with = |class: &str| {
            S3Config::from_storage_config(&cfg(&[
                (BUCKET_NAME, "b"),
                (CREDENTIALS_PROVIDER_CLASS, class),
            ]))
        };
        let pkg = "software.amazon.awssdk.auth.credentials.";
        for (class, want) in [
            ("DefaultCredentialsProvider", ProviderClass::Default),
            (
                "EnvironmentVariableCredentialsProvider",
                ProviderClass::Environment,
            ),
            ("ProfileCredentialsProvider", ProviderClass::Profile),
            (
                "WebIdentityTokenFileCredentialsProvider",
                ProviderClass::WebIdentity,
            ),
            ("ContainerCredentialsProvider", ProviderClass::Container),
            (
                "InstanceProfileCredentialsProvider",
                ProviderClass::InstanceProfile,
            ),
        ] {
            for name in [format!("{pkg}{class}"), class.to_string()] {
                let c = with(&name).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(
                    matches!(c.credentials, CredentialsSource::Provider(p) if p == want),
                    "{name}: {:?}",
                    c.credentials
                );
            }
        }
        let sts = with(
            "software.amazon.awssdk.services.sts.auth.StsWebIdentityTokenFileCredentialsProvider",
        )
        .unwrap();
        assert!(matches!(
            sts.credentials,
            CredentialsSource::Provider(ProviderClass::WebIdentity)
        ));
        // Unknown, unsupported, or in another package: an error naming the key and the
        // supported classes (or what to do instead).
        for (bad, says) in [
            (
                "com.example.MyProvider",
                "EnvironmentVariableCredentialsProvider",
            ),
            (
                "software.amazon.awssdk.auth.credentials.ProcessCredentialsProvider",
                "InstanceProfileCredentialsProvider",
            ),
            (
                "com.example.DefaultCredentialsProvider",
                "DefaultCredentialsProvider",
            ),
            (
                "software.amazon.awssdk.auth.credentials.StaticCredentialsProvider",
                "storage.aws.access.key.id",
            ),
            (
                "software.amazon.awssdk.auth.credentials.SystemPropertyCredentialsProvider",
                "EnvironmentVariableCredentialsProvider",
            ),
        ] {
            let e = with(bad).expect_err(bad);
            assert_eq!(e.key, "storage.aws.credentials.provider.class", "{bad}");
            let text = e.to_string();
            assert!(text.contains(bad) && text.contains(says), "{bad}: {text}");
        }
        // Not together with another source.
        let e = S3Config::from_storage_config(&cfg(&[
            (BUCKET_NAME, "b"),
            (CREDENTIALS_PROVIDER_CLASS, "DefaultCredentialsProvider"),
            (ACCESS_KEY_ID, "AKIA"),
            (SECRET_ACCESS_KEY, "s"),
        ]))
        .unwrap_err();
        assert_eq!(e.key, "storage.aws.credentials.provider.class");
        assert!(e.to_string().contains("storage.aws.access.key.id"), "{e}");
        let e = S3Config::from_storage_config(&cfg(&[
            (BUCKET_NAME, "b"),
            (CREDENTIALS_PROVIDER_CLASS, "DefaultCredentialsProvider"),
            (CREDENTIALS_FILE, "/etc/aws/credentials"),
        ]))
        .unwrap_err();
        assert!(
            e.to_string().contains("storage.aws.credentials.file"),
            "{e}"
        );
    }

    #[test]
    fn legacy_md5_is_a_boolean_off_by_default() {
        let c = S3Config::from_storage_config(&cfg(&[(BUCKET_NAME, "b")])).unwrap();
        assert!(!c.legacy_md5);
        let c = S3Config::from_storage_config(&cfg(&[(BUCKET_NAME, "b"), (LEGACY_MD5, "true")]))
            .unwrap();
        assert!(c.legacy_md5);
        let e = S3Config::from_storage_config(&cfg(&[(BUCKET_NAME, "b"), (LEGACY_MD5, "yes")]))
            .unwrap_err();
        assert_eq!(e.key, "storage.s3.legacy.md5.plugin.enabled");
    }
}
