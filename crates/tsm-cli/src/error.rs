//! [`CliError`] and the process exit codes: 0 ok, 1 findings (bad segments) or a failed
//! operation, 2 usage or configuration errors.

use std::process::ExitCode;

use tsm_core::RsmError;

/// Exit code: everything checked is fine.
pub(crate) const EXIT_OK: u8 = 0;
/// Exit code: `verify` found bad segments, or an operation on the store failed.
pub(crate) const EXIT_FINDINGS: u8 = 1;
/// Exit code: bad command line, properties file or configuration value.
pub(crate) const EXIT_USAGE: u8 = 2;

/// Why a command did not succeed. Messages name the key, object, byte range or file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// Bad arguments or configuration (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Checks found problems; the report was already printed (exit 1).
    #[error("{0}")]
    Findings(String),
    /// An operation failed (store, engine, local file) (exit 1).
    #[error(transparent)]
    Rsm(#[from] RsmError),
    /// A local file could not be read or written (exit 1).
    #[error("{path}: {source}")]
    Io {
        /// The local file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A signal ended the command (`fetch`: after removing its partial file); exit
    /// `code` (128 + the signal number, as a shell reports it).
    #[error("interrupted by {signal}: stopped, nothing left behind")]
    Interrupted {
        /// `SIGINT` or `SIGTERM`.
        signal: &'static str,
        /// The exit code: 130 or 143.
        code: u8,
    },
    /// `fetch -o -`: writing to stdout failed because the reader went away: exit quietly
    /// (other commands keep running with their output dropped, see `output.rs`).
    #[error("broken pipe")]
    BrokenPipe,
}

impl CliError {
    /// The process exit code for this error.
    pub(crate) fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            Self::Usage(_) => EXIT_USAGE,
            Self::Rsm(RsmError::Config(_)) => EXIT_USAGE,
            Self::BrokenPipe => EXIT_OK,
            Self::Interrupted { code, .. } => *code,
            _ => EXIT_FINDINGS,
        })
    }

    /// An I/O error on stdout: a closed pipe becomes [`CliError::BrokenPipe`].
    pub(crate) fn stdout(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Self::BrokenPipe
        } else {
            Self::Io {
                path: "<stdout>".into(),
                source: e,
            }
        }
    }

    /// An I/O error on a local file.
    pub(crate) fn io(path: impl std::fmt::Display, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_string(),
            source,
        }
    }
}

impl From<tsm_core::BackendError> for CliError {
    fn from(e: tsm_core::BackendError) -> Self {
        Self::Rsm(RsmError::Backend(e))
    }
}

/// Result of a command.
pub(crate) type CliResult<T = ()> = Result<T, CliError>;
