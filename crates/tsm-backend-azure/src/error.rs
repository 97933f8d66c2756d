//! Azure failures -> [`BackendError`], in one place: [`meaning`] maps an HTTP status and
//! Azure error code (or a transport failure) to its meaning for the engine, [`classify`]
//! builds the error.
//!
//! Every message names the operation, the container, the blob (masked [`ObjectKey`]
//! `Display`), the HTTP status and the Azure error code, e.g.
//! `azure GetBlob on container tiered: HTTP 403 AuthorizationFailure (permission denied: ...)`.
//! SDK messages may quote request URLs, which carry the SAS: every `sig=` value is
//! replaced by `<redacted>` before it goes into a message or source.

use std::fmt;

use azure_core::error::ErrorKind;
use tsm_storage::{BackendError, ByteRange, ObjectKey};

/// What the engine should make of a failed Azure call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meaning {
    /// The blob is missing (404 `BlobNotFound`, or 404 without a code, e.g. on HEAD).
    NotFound,
    /// The range starts at or past the end (416 `InvalidRange`).
    InvalidRange,
    /// A retry may help: 408, 429, 5xx (`ServerBusy`, `OperationTimedOut`,
    /// `InternalError`), connection and I/O failures, and `InvalidBlockList` (another
    /// upload to the same blob committed first, which discards every uncommitted block:
    /// the whole upload can be redone).
    Transient,
    /// Anything else: 403 (`AuthorizationFailure`), 401, `ContainerNotFound`, 400...
    Other,
}

/// The single status -> meaning table. `status` is `None` when no HTTP response arrived.
pub fn meaning(status: Option<u16>, code: Option<&str>, transport: bool) -> Meaning {
    match (status, code) {
        (_, Some("ContainerNotFound" | "ContainerBeingDeleted" | "ContainerDisabled")) => {
            Meaning::Other
        }
        (Some(404), Some("BlobNotFound") | None) => Meaning::NotFound,
        (Some(416), _) | (_, Some("InvalidRange")) => Meaning::InvalidRange,
        (_, Some("ServerBusy" | "OperationTimedOut" | "InternalError" | "InvalidBlockList")) => {
            Meaning::Transient
        }
        (Some(408 | 429 | 500..=599), _) => Meaning::Transient,
        (None, _) if transport => Meaning::Transient,
        _ => Meaning::Other,
    }
}

/// A short hint for the operator.
fn hint(status: Option<u16>, code: Option<&str>) -> &'static str {
    match (status, code) {
        (_, Some("ContainerNotFound")) => {
            " (the container does not exist: check storage.azure.container.name)"
        }
        (Some(403), _) => {
            " (permission denied: check the account key / SAS permissions and expiry, or \
             the role assignment of the Entra identity)"
        }
        (Some(401), _) => " (unauthenticated: check the credentials)",
        (_, Some("InvalidBlockList")) => {
            " (another upload to the same blob committed first and discarded this upload's \
             blocks: retry the upload)"
        }
        (_, Some("InvalidHeaderValue")) => {
            " (the service rejected the API version: Azurite needs --skipApiVersionCheck)"
        }
        _ => "",
    }
}

/// Replaces the value of every `sig=` (the SAS signature) in `s` with `<redacted>`.
pub fn redact_sas(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("sig=") {
        out.push_str(&rest[..i + 4]);
        out.push_str("<redacted>");
        let tail = &rest[i + 4..];
        let end = tail
            .find(|c: char| c == '&' || c == '"' || c == '\'' || c == ')' || c.is_whitespace())
            .unwrap_or(tail.len());
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// An SDK error turned into text with the SAS redacted (the source chain included).
#[derive(Debug)]
pub struct SdkError(String);

impl fmt::Display for SdkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SdkError {}

impl SdkError {
    /// The error and its sources, one line, `sig=` redacted.
    pub fn new(err: &(dyn std::error::Error + 'static)) -> Self {
        let mut text = err.to_string();
        let mut src = err.source();
        while let Some(s) = src {
            text.push_str(": ");
            text.push_str(&s.to_string());
            src = s.source();
        }
        Self(redact_sas(&text))
    }
}

/// Converts a failed SDK call. `op` is the Azure operation (`GetBlob`, `PutBlock`), `range`
/// the range asked for (for [`BackendError::InvalidRange`]).
pub fn classify(
    op: &str,
    container: &str,
    key: &ObjectKey,
    range: Option<ByteRange>,
    err: &azure_core::Error,
) -> BackendError {
    let status = err.http_status().map(u16::from);
    let code = match err.kind() {
        ErrorKind::HttpResponse { error_code, .. } => error_code.clone(),
        _ => None,
    };
    let transport = matches!(err.kind(), ErrorKind::Connection | ErrorKind::Io);
    let mut detail = format!("azure {op} on container {container}:");
    match status {
        Some(s) => detail.push_str(&format!(" HTTP {s}")),
        None => detail.push_str(&format!(" no HTTP response ({})", err.kind())),
    }
    if let Some(c) = &code {
        detail.push_str(&format!(" {c}"));
    }
    detail.push_str(hint(status, code.as_deref()));
    let source = SdkError::new(err);
    match (meaning(status, code.as_deref(), transport), range) {
        (Meaning::NotFound, _) => BackendError::NotFound {
            key: key.clone(),
            detail,
        },
        (Meaning::InvalidRange, Some(range)) => BackendError::InvalidRange {
            key: key.clone(),
            range,
            size: None,
        },
        (Meaning::Transient, _) => BackendError::transient(key, detail, source),
        _ => BackendError::other(key, detail, source),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_table() {
        assert_eq!(
            meaning(Some(404), Some("BlobNotFound"), false),
            Meaning::NotFound
        );
        assert_eq!(meaning(Some(404), None, false), Meaning::NotFound);
        assert_eq!(
            meaning(Some(404), Some("ContainerNotFound"), false),
            Meaning::Other
        );
        assert_eq!(
            meaning(Some(416), Some("InvalidRange"), false),
            Meaning::InvalidRange
        );
        assert_eq!(
            meaning(Some(503), Some("ServerBusy"), false),
            Meaning::Transient
        );
        assert_eq!(
            meaning(Some(500), Some("InternalError"), false),
            Meaning::Transient
        );
        assert_eq!(meaning(Some(429), None, false), Meaning::Transient);
        assert_eq!(meaning(None, None, true), Meaning::Transient);
        assert_eq!(meaning(None, None, false), Meaning::Other);
        assert_eq!(
            meaning(Some(403), Some("AuthorizationFailure"), false),
            Meaning::Other
        );
        assert_eq!(
            meaning(Some(400), Some("InvalidBlockList"), false),
            Meaning::Transient
        );
        assert_eq!(
            meaning(Some(400), Some("InvalidQueryParameterValue"), false),
            Meaning::Other
        );
    }

    #[test]
    fn hints_point_to_keys() {
        assert!(hint(Some(404), Some("ContainerNotFound")).contains("container.name"));
        assert!(hint(Some(403), Some("AuthorizationFailure")).contains("SAS"));
        assert_eq!(hint(Some(500), None), "");
    }

    #[test]
    fn sas_signature_redacted() {
        assert_eq!(
            redact_sas("error sending request for url (http://h/c/b?sv=1&sig=abc%2B==&se=2)"),
            "error sending request for url (http://h/c/b?sv=1&sig=<redacted>&se=2)"
        );
        assert_eq!(redact_sas("x sig=abc"), "x sig=<redacted>");
        assert_eq!(redact_sas("no secret"), "no secret");
    }

    #[test]
    fn classify_builds_not_found_with_container() {
        let err = azure_core::Error::with_message(
            ErrorKind::HttpResponse {
                status: azure_core::http::StatusCode::NotFound,
                error_code: Some("BlobNotFound".into()),
                raw_response: None,
            },
            "not found at http://h/c/b?sig=SECRET",
        );
        let key = ObjectKey::new("secret-prefix/", "a.log", true);
        let e = classify("GetBlob", "tiered", &key, None, &err);
        assert!(e.is_not_found());
        let msg = e.to_string();
        assert!(msg.contains("tiered") && msg.contains("404") && msg.contains("BlobNotFound"));
        assert!(!msg.contains("secret-prefix"), "{msg}");
        let e = classify(
            "GetBlob",
            "tiered",
            &key,
            None,
            &azure_core::Error::with_message(
                ErrorKind::Connection,
                "error sending request for url (http://h/c/b?sig=SECRET)",
            ),
        );
        assert!(e.is_transient());
        let mut chain = String::new();
        let mut src: Option<&dyn std::error::Error> = Some(&e);
        while let Some(s) = src {
            chain.push_str(&s.to_string());
            src = s.source();
        }
        assert!(!chain.contains("SECRET"), "{chain}");
    }

    proptest::proptest! {
        #[test]
        fn redaction_never_leaks_a_signature(
            before in "[ -~]{0,40}",
            sig in "[A-Za-z0-9%+/=]{12,44}",
            after in "([&)\" ][ -~]{0,40})?",
        ) {
            proptest::prop_assume!(!before.contains(&sig) && !after.contains(&sig));
            let out = redact_sas(&format!("{before}sig={sig}{after}"));
            proptest::prop_assert!(!out.contains(&sig), "{out}");
        }
    }
}
