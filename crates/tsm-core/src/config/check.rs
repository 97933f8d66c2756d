//! [`check`]: every problem of a configuration, without building a backend or contacting
//! the store. Input: the same map [`super::RsmConfig::from_props`] takes (`rsm.config.`
//! stripped). Output: one [`ConfigProblem`] per unknown key (with the closest known key)
//! and per invalid value (as the engine reports it when the broker calls `configure`),
//! for `tsm config check`.
//!
//! Runs, in order: the core parser ([`super::RsmConfig`], every value checked, not only
//! the first bad one), the selected backend's own validation ([`BackendKind::validate`],
//! its first problem), and the key files of the key ring (read and parsed locally). No
//! value of a secret key appears in a problem ([`ConfigError`] shows `<redacted>`).

use std::collections::BTreeMap;
use std::fmt;

use tsm_crypto::{CryptoError, KeyPair};

use super::names::{ENCRYPTION_KEY_PAIRS, ENCRYPTION_KEY_PAIRS_PREFIX};
use super::rsm::{Problems, UnknownKey, unknown_keys};
use super::{BackendKind, ConfigError, RsmConfig};

/// One problem [`check`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigProblem {
    /// A key tsm does not read (the plugin logs a warning and ignores it).
    Unknown(UnknownKey),
    /// A value the plugin refuses (its `configure` fails with this error).
    Invalid(ConfigError),
}

impl ConfigProblem {
    /// The key the problem is about (without `rsm.config.`).
    pub fn key(&self) -> &str {
        match self {
            Self::Unknown(u) => &u.key,
            Self::Invalid(e) => &e.key,
        }
    }
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unknown(u) => {
                write!(f, "unknown key {}", u.key)?;
                if let Some(b) = u.backend {
                    write!(f, " (not a key of backend {b})")?;
                }
                match u.did_you_mean {
                    Some(k) => write!(f, ": did you mean {k}?"),
                    None => write!(f, ": ignored by tsm"),
                }
            }
            Self::Invalid(e) => e.fmt(f),
        }
    }
}

/// Whether [`check`] reads the key-pair files the configuration names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyFiles {
    /// Read and parse each `encryption.key.pairs.<id>.{public,private}.key.file`, as the
    /// plugin's `configure` does (where the check runs on the broker's host).
    Read,
    /// Check that every pair names both files but do not open them: for a configuration
    /// checked away from the broker, e.g. a Kubernetes manifest whose Secret is mounted only
    /// in the pod.
    Skip,
}

/// Every problem of `props` (`rsm.config.` stripped) against the backends `kinds`:
/// empty when the plugin would accept it. Reads the key-pair files unless `key_files` is
/// [`KeyFiles::Skip`]; builds no backend and makes no request.
pub fn check(
    props: &BTreeMap<String, String>,
    kinds: &[&'static BackendKind],
    key_files: KeyFiles,
) -> Vec<ConfigProblem> {
    let problems = Problems::default();
    let config = RsmConfig::parse(props.clone(), kinds, &problems);
    let mut invalid = problems.into_vec();
    if let Some(cfg) = &config {
        if let Err(e) = (cfg.backend.validate)(&cfg.storage) {
            invalid.push(e);
        }
        if let (Some(enc), KeyFiles::Read) = (&cfg.encryption, key_files) {
            for pair in &enc.key_pairs {
                if let Err(e) =
                    KeyPair::from_files(&pair.id, &pair.public_key_file, &pair.private_key_file)
                {
                    invalid.push(key_file_problem(&pair.id, &e));
                }
            }
        }
    }
    let unknown = unknown_keys(props.keys(), config.as_ref().map(|c| c.backend), kinds);
    let mut out: Vec<ConfigProblem> = unknown.into_iter().map(ConfigProblem::Unknown).collect();
    for e in invalid {
        // A backend that refuses unknown keys itself names a key already reported.
        if !out.iter().any(|p| p.key() == e.key) {
            out.push(ConfigProblem::Invalid(e));
        }
    }
    out
}

/// A key file that cannot be read or parsed, as a problem of its
/// `encryption.key.pairs.<id>.{public,private}.key.file` key (the error names the file,
/// never key material).
fn key_file_problem(id: &str, e: &CryptoError) -> ConfigError {
    let (kind, value) = match e {
        CryptoError::KeyFileRead { kind, path, .. } => (Some(*kind), path.display().to_string()),
        CryptoError::InvalidKey {
            kind, source_name, ..
        } => (Some(*kind), source_name.clone()),
        _ => (None, id.to_string()),
    };
    let key = match kind {
        Some(kind) => format!("{ENCRYPTION_KEY_PAIRS_PREFIX}{id}.{kind}.key.file"),
        None => ENCRYPTION_KEY_PAIRS.to_string(),
    };
    ConfigError::new(key, value, format!("a readable RSA key pair: {e}"))
}
