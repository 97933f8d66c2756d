//! What a configured instance runs with, for its startup log line, and which values are
//! secrets, for the log redaction. The one place that decides what is secret: a key
//! declared `secret` in a backend's [`ConfigKeyDoc`] table, or (for a mistyped or unknown
//! key) a name that looks like one ([`looks_secret`]). Input: the broker's map
//! (`rsm.config.` stripped) and the backend kinds; output: text, values masked as `****`.

use std::collections::BTreeMap;

use super::names::{ENCRYPTION_KEY_PAIRS_PREFIX, JNI_KEYS};
use super::{BackendKind, CONFIG_KEYS, ConfigKeyDoc};

/// What a secret value is shown as.
pub const MASK: &str = "****";

/// True for a key whose value is likely a secret although no table declares it (a
/// mistyped `storage.aws.secret.acess.key`): its name mentions a secret, password, token,
/// credential, signature, SAS, account key or connection string. Names of files and
/// paths (`.file`, `.path`, `.dir`) are not secrets: their contents are; nor are class
/// names (`.class`: `storage.aws.credentials.provider.class`).
pub fn looks_secret(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    if [".file", ".path", ".dir", ".class"]
        .iter()
        .any(|s| n.ends_with(s))
    {
        return false;
    }
    [
        "secret",
        "password",
        "token",
        "credential",
        "signature",
        "sas",
        "account.key",
        "connection.string",
        "private.key",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// True when `name` (without `rsm.config.`) holds a secret: declared `secret` by one of
/// `kinds`, or [`looks_secret`].
pub fn is_secret_key(name: &str, kinds: &[&BackendKind]) -> bool {
    kinds
        .iter()
        .flat_map(|k| k.keys.iter())
        .any(|d| d.secret && d.name == name)
        || looks_secret(name)
}

/// The values (trimmed, non-empty) of every secret key of `props`, for redaction.
pub fn secret_values(props: &BTreeMap<String, String>, kinds: &[&BackendKind]) -> Vec<String> {
    props
        .iter()
        .filter(|(k, _)| is_secret_key(k, kinds))
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect()
}

/// Every key of the core table, the plugin's [`JNI_KEYS`] and `backend`'s table with its
/// effective value: the value set in `props` (secrets as [`MASK`]) or else the default;
/// keys with neither are left out. Then the key-pair file keys that are set (paths,
/// never key material). In table order.
pub fn effective_settings(
    props: &BTreeMap<String, String>,
    backend: &BackendKind,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let tables: [&[ConfigKeyDoc]; 3] = [CONFIG_KEYS, JNI_KEYS, backend.keys];
    for d in tables.into_iter().flatten() {
        if d.name.contains('<') {
            continue;
        }
        let set = props
            .get(d.name)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty());
        let value = match set {
            Some(_) if d.secret || looks_secret(d.name) => MASK.to_string(),
            Some(v) => v.to_string(),
            None if !d.default.is_empty() => d.default.to_string(),
            None => continue,
        };
        out.push((d.name.to_string(), value));
    }
    for (k, v) in props.range(ENCRYPTION_KEY_PAIRS_PREFIX.to_string()..) {
        if !k.starts_with(ENCRYPTION_KEY_PAIRS_PREFIX) {
            break;
        }
        if k.ends_with(".key.file") && !v.trim().is_empty() {
            out.push((k.clone(), v.trim().to_string()));
        }
    }
    out
}

/// `key=value` pairs joined by `, `.
pub fn render_settings(settings: &[(String, String)]) -> String {
    settings
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_defaults_shown_paths_kept() {
        static KIND: BackendKind = BackendKind {
            name: "demo",
            aliases: &[],
            keys: &[
                ConfigKeyDoc {
                    name: "storage.demo.key",
                    default: "",
                    doc: "",
                    secret: true,
                },
                ConfigKeyDoc {
                    name: "storage.demo.part.size",
                    default: "100",
                    doc: "",
                    secret: false,
                },
            ],
            build: |_| Box::pin(async { Err(crate::ConfigError::new("x", "y", "z")) }),
            validate: |_| Ok(()),
            upload_buffer_bytes: |_| Ok(0),
        };
        let props: BTreeMap<String, String> = [
            ("storage.demo.key", "hunter2-secret"),
            ("chunk.size", "4194304"),
            ("encryption.key.pairs.k1.private.key.file", "/etc/k1.pem"),
            ("storage.demo.secret.acess.key", "typo-secret"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let text = render_settings(&effective_settings(&props, &KIND));
        assert!(text.contains("storage.demo.key=****"), "{text}");
        assert!(text.contains("storage.demo.part.size=100"), "{text}");
        assert!(text.contains("chunk.size=4194304"), "{text}");
        assert!(text.contains("compression.enabled=false"), "{text}");
        assert!(text.contains("tsm.memory.budget.bytes=536870912"), "{text}");
        assert!(
            text.contains("encryption.key.pairs.k1.private.key.file=/etc/k1.pem"),
            "{text}"
        );
        assert!(!text.contains("secret"), "{text}");
        let mut secrets = secret_values(&props, &[&KIND]);
        secrets.sort();
        assert_eq!(secrets, ["hunter2-secret", "typo-secret"]);
        assert!(!looks_secret("storage.aws.credentials.file"));
        assert!(!looks_secret("storage.aws.credentials.provider.class"));
        assert!(looks_secret("storage.azure.sas.token"));
    }
}
