//! The `storage.azure.*` keys: parsed once from [`StorageConfig`] into a typed
//! [`AzureConfig`], and documented in [`KEYS`] (the source of the configuration reference).
//!
//! Key names, defaults and the connection-string exclusions are the Java plugin's
//! (`AzureBlobStorageConfig` of Aiven's tiered-storage-for-apache-kafka), so a broker's
//! `rsm.config.storage.*` block carries over unchanged. Keys beyond the Java plugin:
//! `azure.upload.blocks.in.flight` and `azure.max.retries`.

use tsm_storage::config::{ConfigError, ConfigKeyDoc, Secret, StorageConfig};

use crate::sas::AccountKey;

/// `azure.container.name`
pub const CONTAINER_NAME: &str = "azure.container.name";
/// `azure.account.name`
pub const ACCOUNT_NAME: &str = "azure.account.name";
/// `azure.account.key`
pub const ACCOUNT_KEY: &str = "azure.account.key";
/// `azure.sas.token`
pub const SAS_TOKEN: &str = "azure.sas.token";
/// `azure.connection.string`
pub const CONNECTION_STRING: &str = "azure.connection.string";
/// `azure.endpoint.url`
pub const ENDPOINT_URL: &str = "azure.endpoint.url";
/// `azure.upload.block.size`
pub const BLOCK_SIZE: &str = "azure.upload.block.size";
/// `azure.upload.blocks.in.flight`
pub const BLOCKS_IN_FLIGHT: &str = "azure.upload.blocks.in.flight";
/// `azure.max.retries`
pub const MAX_RETRIES: &str = "azure.max.retries";

/// Smallest block size, the Java plugin's: 100 KiB.
pub const BLOCK_SIZE_MIN: u64 = 100 * 1024;
/// Largest block size, the Java plugin's (`Integer.MAX_VALUE`; Azure allows 4000 MiB).
pub const BLOCK_SIZE_MAX: u64 = i32::MAX as u64;
/// Default block size, the Java plugin's: 25 MiB.
pub const BLOCK_SIZE_DEFAULT: u64 = 25 * 1024 * 1024;
/// Default number of blocks staged at once.
pub const BLOCKS_IN_FLIGHT_DEFAULT: u64 = 4;
/// Most blocks staged at once.
pub const BLOCKS_IN_FLIGHT_MAX: u64 = 64;
/// Default retries of a failed request (exponential back-off, the SDK's policy).
pub const MAX_RETRIES_DEFAULT: u64 = 3;
/// Azure's limit of committed blocks per block blob.
pub const MAX_BLOCKS: u64 = 50_000;

/// Azurite's well-known development account.
pub const AZURITE_ACCOUNT: &str = "devstoreaccount1";
/// Azurite's well-known development key (public, documented by Microsoft).
pub const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// Every key this backend reads (full names; the engine strips `storage.`).
pub static KEYS: &[ConfigKeyDoc] = &[
    ConfigKeyDoc {
        name: "storage.azure.container.name",
        default: "",
        doc: "Required. Blob container holding the segments, indexes and manifests.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.azure.account.name",
        default: "",
        doc: "Storage account name. Required unless `storage.azure.connection.string` is set (or \
              `storage.azure.sas.token` with `storage.azure.endpoint.url`). Not together with \
              `storage.azure.connection.string`.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.azure.account.key",
        default: "",
        doc: "Account (shared) key, base64 as shown in the portal. Used to sign short-lived \
              account SAS tokens (1 h, renewed 15 min before expiry). When no key, SAS token \
              or connection string is set, Entra ID is used: workload identity \
              (`AZURE_FEDERATED_TOKEN_FILE`), a service principal from the environment \
              (`AZURE_TENANT_ID`, `AZURE_CLIENT_ID`, `AZURE_CLIENT_SECRET`), else managed \
              identity (user-assigned when `AZURE_CLIENT_ID` is set).",
        secret: true,
    },
    ConfigKeyDoc {
        name: "storage.azure.sas.token",
        default: "",
        doc: "SAS token (account or container SAS with read, add, create, write, delete, \
              list), with or without a leading `?`. Not together with `storage.azure.account.key`.",
        secret: true,
    },
    ConfigKeyDoc {
        name: "storage.azure.connection.string",
        default: "",
        doc: "Connection string (`AccountName=...;AccountKey=...;BlobEndpoint=...`, \
              `SharedAccessSignature=...`, or `UseDevelopmentStorage=true` for Azurite). \
              Cannot be used together with `storage.azure.account.name`, `storage.azure.account.key`, \
              `storage.azure.sas.token` and `storage.azure.endpoint.url`.",
        secret: true,
    },
    ConfigKeyDoc {
        name: "storage.azure.endpoint.url",
        default: "",
        doc: "Custom blob endpoint URL, including the account path for emulators (e.g. \
              `http://127.0.0.1:10000/devstoreaccount1` for Azurite). Empty: \
              `https://<account>.blob.core.windows.net`.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.azure.upload.block.size",
        default: "26214400",
        doc: "Block size in bytes for uploads (102400 to 2147483647; default 25 MiB). Objects \
              up to this size go in one Put Blob; larger ones are staged as blocks and \
              committed as a block list. A blob has at most 50,000 blocks, so the largest \
              object is 50,000 x block size. Memory per upload is at most block size x \
              (blocks in flight + 1).",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.azure.upload.blocks.in.flight",
        default: "4",
        doc: "How many blocks of one upload are staged at once (1 to 64). Not in the Java \
              plugin.",
        secret: false,
    },
    ConfigKeyDoc {
        name: "storage.azure.max.retries",
        default: "3",
        doc: "Retries of a failed request (throttling, 5xx, connection errors) with the SDK's \
              exponential back-off; 0 disables retries (0 to 10). Not in the Java plugin.",
        secret: false,
    },
];

/// How requests are authenticated.
#[derive(Clone, Debug)]
pub enum Auth {
    /// Account key: account SAS tokens are derived from it ([`crate::sas`]).
    SharedKey {
        /// Account name (the SAS is signed for it).
        account: String,
        /// The decoded key.
        key: AccountKey,
    },
    /// A fixed SAS token (query string without `?`).
    Sas(Secret),
    /// Entra ID through `azure_identity` ([`crate::credential`]).
    EntraId,
}

/// The validated Azure settings. `Debug` never shows secrets.
#[derive(Clone, Debug)]
pub struct AzureConfig {
    /// `azure.container.name`.
    pub container: String,
    /// Blob service endpoint, no trailing `/` (Azurite answers a bare 400 to `//container`).
    pub endpoint: String,
    /// Credentials.
    pub auth: Auth,
    /// `azure.upload.block.size` in bytes.
    pub block_size: u64,
    /// `azure.upload.blocks.in.flight`.
    pub blocks_in_flight: usize,
    /// `azure.max.retries`.
    pub max_retries: u32,
}

fn full(key: &str) -> String {
    format!("storage.{key}")
}

/// Accepts an `http(s)://` URL without query or fragment; trailing `/` removed.
fn endpoint(url: &str, key: &str, shown: &str) -> Result<String, ConfigError> {
    let bad = |why: &str| ConfigError::new(full(key), shown, why);
    let parsed = url::Url::parse(url)
        .map_err(|_| bad("an http:// or https:// URL, e.g. https://acct.blob.core.windows.net"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.cannot_be_a_base() {
        return Err(bad("an http:// or https:// URL"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() || !parsed.username().is_empty() {
        return Err(bad(
            "a URL without query, fragment or user info (put a SAS in azure.sas.token)",
        ));
    }
    Ok(url.trim_end_matches('/').to_string())
}

fn account_key(value: &str, key: &str) -> Result<AccountKey, ConfigError> {
    AccountKey::from_base64(value)
        .ok_or_else(|| ConfigError::new(full(key), "<redacted>", "a base64 account key"))
}

fn sas(token: &str) -> Secret {
    Secret::new(token.trim().trim_start_matches('?'))
}

/// What a connection string gives: the endpoint and the credentials.
fn parse_connection_string(cs: &str) -> Result<(String, Auth), ConfigError> {
    let bad = |why: String| ConfigError::new(full(CONNECTION_STRING), "<redacted>", why);
    let mut protocol = "https".to_string();
    let (mut account, mut key, mut blob_endpoint, mut suffix, mut sig) =
        (None, None, None, None, None);
    let mut dev = false;
    for part in cs.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((name, value)) = part.split_once('=') else {
            return Err(bad("`Name=value` pairs separated by `;`".into()));
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "defaultendpointsprotocol" => protocol = value.to_ascii_lowercase(),
            "accountname" => account = Some(value.to_string()),
            "accountkey" => key = Some(value.to_string()),
            "blobendpoint" => blob_endpoint = Some(value.to_string()),
            "endpointsuffix" => suffix = Some(value.to_string()),
            "sharedaccesssignature" => sig = Some(value.to_string()),
            "usedevelopmentstorage" => dev = value.eq_ignore_ascii_case("true"),
            // QueueEndpoint, TableEndpoint, FileEndpoint...: not ours.
            _ => {}
        }
    }
    if dev {
        let ep =
            blob_endpoint.unwrap_or_else(|| format!("http://127.0.0.1:10000/{AZURITE_ACCOUNT}"));
        let ep = endpoint(&ep, CONNECTION_STRING, "<redacted>")?;
        let key = account_key(AZURITE_KEY, CONNECTION_STRING)?;
        return Ok((
            ep,
            Auth::SharedKey {
                account: AZURITE_ACCOUNT.into(),
                key,
            },
        ));
    }
    if protocol != "https" && protocol != "http" {
        return Err(bad("DefaultEndpointsProtocol http or https".into()));
    }
    let ep = match (blob_endpoint, &account) {
        (Some(ep), _) => ep,
        (None, Some(acct)) => format!(
            "{protocol}://{acct}.blob.{}",
            suffix.as_deref().unwrap_or("core.windows.net")
        ),
        (None, None) => return Err(bad("AccountName or BlobEndpoint".into())),
    };
    let ep = endpoint(&ep, CONNECTION_STRING, "<redacted>")?;
    let auth = match (key, sig, account) {
        (Some(_), Some(_), _) => {
            return Err(bad("AccountKey or SharedAccessSignature, not both".into()));
        }
        (Some(k), None, Some(account)) => Auth::SharedKey {
            account,
            key: account_key(&k, CONNECTION_STRING)?,
        },
        (Some(_), None, None) => return Err(bad("AccountName together with AccountKey".into())),
        (None, Some(s), _) => Auth::Sas(sas(&s)),
        (None, None, _) => Auth::EntraId,
    };
    Ok((ep, auth))
}

impl AzureConfig {
    /// Parses and validates the `storage.*` keys. Errors name the full key and show
    /// `<redacted>` instead of secret values.
    pub fn from_storage_config(cfg: &StorageConfig) -> Result<Self, ConfigError> {
        let container = cfg.require(CONTAINER_NAME)?.to_string();
        let block_size = cfg.get_u64(
            BLOCK_SIZE,
            BLOCK_SIZE_DEFAULT,
            BLOCK_SIZE_MIN,
            BLOCK_SIZE_MAX,
        )?;
        let blocks_in_flight = cfg.get_u64(
            BLOCKS_IN_FLIGHT,
            BLOCKS_IN_FLIGHT_DEFAULT,
            1,
            BLOCKS_IN_FLIGHT_MAX,
        )? as usize;
        let max_retries = cfg.get_u64(MAX_RETRIES, MAX_RETRIES_DEFAULT, 0, 10)? as u32;

        let account = cfg.get(ACCOUNT_NAME);
        let key = cfg.get(ACCOUNT_KEY);
        let token = cfg.get(SAS_TOKEN);
        let url = cfg.get(ENDPOINT_URL);
        let (endpoint, auth) = if let Some(cs) = cfg.get(CONNECTION_STRING) {
            for (other, present) in [
                (ACCOUNT_NAME, account.is_some()),
                (ACCOUNT_KEY, key.is_some()),
                (SAS_TOKEN, token.is_some()),
                (ENDPOINT_URL, url.is_some()),
            ] {
                if present {
                    return Err(ConfigError::new(
                        full(CONNECTION_STRING),
                        "<redacted>",
                        format!("not together with {}", full(other)),
                    ));
                }
            }
            parse_connection_string(cs)?
        } else {
            if account.is_none() && token.is_none() {
                return Err(ConfigError::new(
                    full(ACCOUNT_NAME),
                    "<missing>",
                    format!(
                        "required when {} is not set (or {} with {})",
                        full(CONNECTION_STRING),
                        full(SAS_TOKEN),
                        full(ENDPOINT_URL)
                    ),
                ));
            }
            let ep = match (url, account) {
                (Some(u), _) => endpoint(u, ENDPOINT_URL, u)?,
                (None, Some(a)) => format!("https://{a}.blob.core.windows.net"),
                (None, None) => {
                    return Err(ConfigError::new(
                        full(ENDPOINT_URL),
                        "<missing>",
                        format!(
                            "required with {} when {} is not set",
                            full(SAS_TOKEN),
                            full(ACCOUNT_NAME)
                        ),
                    ));
                }
            };
            let auth = match (key, token, account) {
                (Some(_), Some(_), _) => {
                    return Err(ConfigError::new(
                        full(SAS_TOKEN),
                        "<redacted>",
                        format!("not together with {}", full(ACCOUNT_KEY)),
                    ));
                }
                (Some(k), None, Some(a)) => Auth::SharedKey {
                    account: a.to_string(),
                    key: account_key(k, ACCOUNT_KEY)?,
                },
                (Some(_), None, None) => {
                    return Err(ConfigError::new(
                        full(ACCOUNT_NAME),
                        "<missing>",
                        format!("required with {}", full(ACCOUNT_KEY)),
                    ));
                }
                (None, Some(t), _) => Auth::Sas(sas(t)),
                (None, None, _) => Auth::EntraId,
            };
            (ep, auth)
        };
        Ok(Self {
            container,
            endpoint,
            auth,
            block_size,
            blocks_in_flight,
            max_retries,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> StorageConfig {
        let m: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        StorageConfig::new(m).with_secret_keys([ACCOUNT_KEY, SAS_TOKEN, CONNECTION_STRING])
    }

    fn parse(pairs: &[(&str, &str)]) -> Result<AzureConfig, ConfigError> {
        AzureConfig::from_storage_config(&cfg(pairs))
    }

    #[test]
    fn defaults_and_account_key() {
        let c = parse(&[
            (CONTAINER_NAME, "c"),
            (ACCOUNT_NAME, "acct"),
            (ACCOUNT_KEY, AZURITE_KEY),
        ])
        .expect("valid");
        assert_eq!(c.endpoint, "https://acct.blob.core.windows.net");
        assert_eq!(c.block_size, 25 * 1024 * 1024);
        assert_eq!(c.blocks_in_flight, 4);
        assert_eq!(c.max_retries, 3);
        assert!(matches!(c.auth, Auth::SharedKey { ref account, .. } if account == "acct"));
        assert!(!format!("{c:?}").contains("Eby8"));
    }

    #[test]
    fn endpoint_trailing_slash_removed() {
        let c = parse(&[
            (CONTAINER_NAME, "c"),
            (ACCOUNT_NAME, AZURITE_ACCOUNT),
            (ENDPOINT_URL, "http://127.0.0.1:10000/devstoreaccount1/"),
        ])
        .expect("valid");
        assert_eq!(c.endpoint, "http://127.0.0.1:10000/devstoreaccount1");
        assert!(matches!(c.auth, Auth::EntraId));
    }

    #[test]
    fn errors_name_keys_and_redact() {
        let e = parse(&[(ACCOUNT_NAME, "a")]).expect_err("no container");
        assert_eq!(e.key, "storage.azure.container.name");
        let e = parse(&[(CONTAINER_NAME, "c")]).expect_err("no account");
        assert_eq!(e.key, "storage.azure.account.name");
        let e = parse(&[
            (CONTAINER_NAME, "c"),
            (ACCOUNT_NAME, "a"),
            (ACCOUNT_KEY, "%%secret%%"),
        ])
        .expect_err("bad key");
        assert_eq!(e.key, "storage.azure.account.key");
        assert!(!e.to_string().contains("secret%%"), "{e}");
        let e = parse(&[
            (CONTAINER_NAME, "c"),
            (ACCOUNT_NAME, "a"),
            (ACCOUNT_KEY, AZURITE_KEY),
            (SAS_TOKEN, "sv=x&sig=topsecret"),
        ])
        .expect_err("key and sas");
        assert!(!e.to_string().contains("topsecret"), "{e}");
        let e = parse(&[
            (CONTAINER_NAME, "c"),
            (ACCOUNT_NAME, "a"),
            (BLOCK_SIZE, "100"),
        ])
        .expect_err("small block");
        assert_eq!(e.key, "storage.azure.upload.block.size");
        assert!(e.to_string().contains("102400"), "{e}");
        let e = parse(&[
            (CONTAINER_NAME, "c"),
            (ACCOUNT_NAME, "a"),
            (BLOCKS_IN_FLIGHT, "0"),
        ])
        .expect_err("0 in flight");
        assert_eq!(e.key, "storage.azure.upload.blocks.in.flight");
        let e = parse(&[
            (CONTAINER_NAME, "c"),
            (ACCOUNT_NAME, "a"),
            (ENDPOINT_URL, "ftp://x"),
        ])
        .expect_err("ftp");
        assert_eq!(e.key, "storage.azure.endpoint.url");
        let e = parse(&[(CONTAINER_NAME, "c"), (SAS_TOKEN, "sv=1&sig=zz")])
            .expect_err("sas without endpoint");
        assert_eq!(e.key, "storage.azure.endpoint.url");
    }

    #[test]
    fn connection_string_exclusive() {
        for other in [ACCOUNT_NAME, ACCOUNT_KEY, SAS_TOKEN, ENDPOINT_URL] {
            let e = parse(&[
                (CONTAINER_NAME, "c"),
                (
                    CONNECTION_STRING,
                    "UseDevelopmentStorage=true;AccountKey=hush",
                ),
                (
                    other,
                    if other == ENDPOINT_URL {
                        "http://h"
                    } else {
                        "v"
                    },
                ),
            ])
            .expect_err("exclusive");
            assert_eq!(e.key, "storage.azure.connection.string");
            assert!(e.allowed.contains(other), "{e}");
            assert!(!e.to_string().contains("hush"), "{e}");
        }
    }

    #[test]
    fn connection_strings() {
        let c = parse(&[
            (CONTAINER_NAME, "c"),
            (CONNECTION_STRING, "UseDevelopmentStorage=true"),
        ])
        .expect("dev");
        assert_eq!(c.endpoint, "http://127.0.0.1:10000/devstoreaccount1");
        assert!(
            matches!(c.auth, Auth::SharedKey { ref account, .. } if account == AZURITE_ACCOUNT)
        );

        let cs = format!(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={AZURITE_KEY};\
             BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
        );
        let c = parse(&[(CONTAINER_NAME, "c"), (CONNECTION_STRING, &cs)]).expect("azurite");
        assert_eq!(c.endpoint, "http://127.0.0.1:10000/devstoreaccount1");
        assert!(matches!(c.auth, Auth::SharedKey { .. }));

        let c = parse(&[
            (CONTAINER_NAME, "c"),
            (
                CONNECTION_STRING,
                "AccountName=acct;EndpointSuffix=core.chinacloudapi.cn",
            ),
        ])
        .expect("suffix");
        assert_eq!(c.endpoint, "https://acct.blob.core.chinacloudapi.cn");
        assert!(matches!(c.auth, Auth::EntraId));

        let c = parse(&[
            (CONTAINER_NAME, "c"),
            (
                CONNECTION_STRING,
                "BlobEndpoint=https://acct.blob.core.windows.net/;SharedAccessSignature=?sv=1&sig=a%2B",
            ),
        ])
        .expect("sas");
        assert!(matches!(c.auth, Auth::Sas(ref s) if s.expose() == "sv=1&sig=a%2B"));

        for bad in ["garbage", "AccountKey=abc", "AccountName=a;AccountKey=!!"] {
            let e = parse(&[(CONTAINER_NAME, "c"), (CONNECTION_STRING, bad)]).expect_err(bad);
            assert_eq!(e.key, "storage.azure.connection.string");
            assert_eq!(e.value, "<redacted>");
        }
    }

    proptest::proptest! {
        #[test]
        fn connection_strings_never_panic_nor_leak(cs in "[ -~]{0,120}") {
            // Blank is "not set": the account-name error, tested above.
            proptest::prop_assume!(!cs.trim().is_empty());
            if let Err(e) = parse(&[(CONTAINER_NAME, "c"), (CONNECTION_STRING, &cs)]) {
                proptest::prop_assert_eq!(e.value.as_str(), "<redacted>");
                if cs.len() >= 8 {
                    proptest::prop_assert!(!e.to_string().contains(&cs), "{}", e);
                }
            }
        }
    }
}
