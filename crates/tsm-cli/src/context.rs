//! What every store command starts from: the plugin properties -> validated
//! [`RsmConfig`] (same keys and checks as the broker) -> the engine
//! ([`RemoteStorageManager::configure`]) over the configured backend, plus the key ring.

use std::collections::BTreeMap;
use std::sync::Arc;

use tsm_core::config::RsmConfig;
use tsm_core::{RemoteStorageManager, StorageBackend};
use tsm_crypto::KeyRing;

use crate::error::{CliError, CliResult};
use crate::output::Output;
use tsm_backends::KINDS;

/// A configured engine and what commands need next to it.
pub struct Context {
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
}

impl Context {
    /// Validates `props` and builds the backend. Invalid configuration is a usage error
    /// (exit 2) naming the key.
    pub async fn new(props: BTreeMap<String, String>, out: Output) -> CliResult<Self> {
        // Validate first so configuration problems are reported as such (exit 2).
        RsmConfig::from_props(props.clone(), KINDS)
            .map_err(|e| CliError::Usage(format!("configuration: {e}")))?;
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
        })
    }

    /// The backend the engine stores to.
    pub fn backend(&self) -> &Arc<dyn StorageBackend> {
        self.rsm.backend()
    }
}
