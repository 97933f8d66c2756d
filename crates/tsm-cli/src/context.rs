//! What every store command starts from: the plugin properties -> validated
//! `RsmConfig` (same keys and checks as the broker, parsed once) -> the engine
//! ([`RemoteStorageManager::configure`]) over the configured backend, plus the key ring.
//!
//! The filesystem backend creates a missing `storage.root` (the broker's first copy
//! starts an empty bucket directory). For the tool a missing root is almost always a
//! mistyped path, and creating it would make `ls`, `verify` or `gc` report an empty,
//! healthy bucket; so [`Context::new`] refuses it (exit 2, naming `storage.root` and the
//! path) before the backend is built, unless the command uploads ([`RootPolicy::Create`],
//! `tsm copy`).

use std::collections::BTreeMap;
use std::sync::Arc;

use tsm_core::{RemoteStorageManager, StorageBackend};
use tsm_crypto::KeyRing;

use crate::error::{CliError, CliResult};
use crate::output::Output;
use tsm_backends::KINDS;

/// What a command may do with a filesystem `storage.root` that does not exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RootPolicy {
    /// Refuse it (every command that reads, lists or deletes).
    MustExist,
    /// Let the backend create it (`tsm copy`: uploading into a new bucket directory).
    Create,
}

/// A configured engine and what commands need next to it.
pub(crate) struct Context {
    /// The engine (copy, fetch, fetchIndex, delete).
    pub rsm: RemoteStorageManager,
    /// `key.prefix`, verbatim.
    pub prefix: String,
    /// `key.prefix.mask`.
    pub mask: bool,
    /// The key ring when `encryption.enabled=true`.
    pub ring: Option<Arc<KeyRing>>,
    /// Text or JSON output, progress bars.
    pub out: Output,
    /// True when the backend is not the filesystem: every byte read is a download (and
    /// every request may be billed), so `verify` says what it will cost first.
    pub remote: bool,
}

impl Context {
    /// Validates `props` and builds the backend. Invalid configuration is a usage error
    /// (exit 2) naming the key; so is a missing filesystem `storage.root` under
    /// [`RootPolicy::MustExist`].
    pub(crate) async fn new(
        props: BTreeMap<String, String>,
        root: RootPolicy,
        out: Output,
    ) -> CliResult<Self> {
        // The backend the class selects (an unknown or missing class is `configure`'s
        // error). The configuration is parsed once, by `configure`: a second parse would
        // log its warnings (an unknown key) twice.
        let kind = props
            .get(tsm_core::config::names::STORAGE_BACKEND_CLASS)
            .and_then(|class| KINDS.iter().find(|k| k.matches(class)));
        let filesystem = kind.is_some_and(|k| k.name == tsm_storage::filesystem::KIND.name);
        if root == RootPolicy::MustExist && filesystem {
            check_filesystem_root(props.get("storage.root").map(String::as_str))?;
        }
        let remote = !filesystem;
        let rsm = RemoteStorageManager::configure(props, KINDS)
            .await
            .map_err(|e| match e {
                tsm_core::RsmError::Config(c) => CliError::Usage(format!("configuration: {c}")),
                tsm_core::RsmError::Crypto(c) => CliError::Usage(format!("configuration: {c}")),
                other => CliError::Rsm(other),
            })?;
        let opts = rsm.options();
        Ok(Self {
            prefix: opts.key_prefix.clone(),
            mask: opts.key_prefix_mask,
            ring: opts.key_ring.clone(),
            rsm,
            out,
            remote,
        })
    }

    /// The backend the engine stores to.
    pub(crate) fn backend(&self) -> &Arc<dyn StorageBackend> {
        self.rsm.backend()
    }
}

/// For the filesystem backend: `storage.root` must exist (checked without creating
/// anything). A root that exists but is not a usable directory, or cannot be examined, is
/// left to the backend, which reports it naming the key.
fn check_filesystem_root(root: Option<&str>) -> CliResult {
    // Absent: the backend reports `storage.root=<missing>`.
    let Some(root) = root else {
        return Ok(());
    };
    match std::fs::metadata(root) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(CliError::Usage(format!(
            "configuration: storage.root={root}: no such directory; check the path (only \
             `tsm copy` creates a missing storage.root, the other commands read an \
             existing one and create nothing)"
        ))),
        _ => Ok(()),
    }
}
