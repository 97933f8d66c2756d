//! Account SAS derived from a shared key: how this backend authenticates with an account
//! key (`azure.account.key`, or `AccountKey=` in a connection string, including Azurite's
//! well-known `devstoreaccount1` key).
//!
//! `azure_storage_blob` 1.x has no shared-key credential, so the key signs an account SAS
//! (service `b`, resource types `sco`, permissions `racwdl`) that goes in the URL query
//! of every request. The signing scheme is Azure's documented one ("Create an account
//! SAS", version 2020-12-06 and later):
//!
//! ```text
//! string-to-sign = account \n sp \n ss \n srt \n st \n se \n sip \n spr \n sv \n ses \n
//! sig            = base64(HMAC-SHA256(base64-decode(account key), string-to-sign))
//! ```
//!
//! The query is form-urlencoded (`+` in `sig` as `%2B`): the SDK re-parses the URL query,
//! and a raw `+` would become a space (HTTP 403 `AuthorizationFailure`).
//!
//! A token is valid [`SAS_VALIDITY`] from 15 minutes in the past (clock skew); the client
//! re-signs one when less than [`SAS_RENEW_BEFORE`] remains.

use std::fmt;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use zeroize::Zeroizing;

/// Service version the SAS is signed for (`sv`). Any version from 2020-12-06 uses the
/// 10-field string-to-sign above.
pub const SAS_VERSION: &str = "2022-11-02";
/// Permissions (`sp`): read, add, create, write, delete, list.
pub const SAS_PERMISSIONS: &str = "racwdl";
/// Lifetime of a derived token: 1 hour.
pub const SAS_VALIDITY: Duration = Duration::from_secs(3600);
/// A token is re-signed when less than this remains: 15 minutes.
pub const SAS_RENEW_BEFORE: Duration = Duration::from_secs(900);
/// Back-dating of `st` against clock skew: 15 minutes.
const CLOCK_SKEW: Duration = Duration::from_secs(900);

/// An account key: the base64-decoded bytes, zeroized on drop, never in `Debug`.
#[derive(Clone)]
pub struct AccountKey(Zeroizing<Vec<u8>>);

impl AccountKey {
    /// Decodes the base64 key as shown in the Azure portal. `None` when it is not base64
    /// or empty (the caller names the config key in its error).
    pub fn from_base64(key: &str) -> Option<Self> {
        let bytes = Zeroizing::new(STANDARD.decode(key.trim()).ok()?);
        (!bytes.is_empty()).then_some(Self(bytes))
    }
}

impl fmt::Debug for AccountKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AccountKey(<redacted>)")
    }
}

/// The signed fields of one account SAS (all but `sig`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountSasFields {
    /// Storage account name.
    pub account: String,
    /// `sp`, e.g. `racwdl`.
    pub permissions: String,
    /// `ss`, e.g. `b` (blob).
    pub services: String,
    /// `srt`, e.g. `sco` (service, container, object).
    pub resource_types: String,
    /// `st`, RFC 3339 UTC without fractions, e.g. `2026-11-29T10:00:00Z`.
    pub start: String,
    /// `se`, same format.
    pub expiry: String,
    /// `spr`: `https` or `https,http`.
    pub protocol: String,
    /// `sv`.
    pub version: String,
}

impl AccountSasFields {
    /// The string-to-sign (10 fields, each followed by `\n`; `sip` and `ses` empty).
    pub fn string_to_sign(&self) -> String {
        format!(
            "{}\n{}\n{}\n{}\n{}\n{}\n\n{}\n{}\n\n",
            self.account,
            self.permissions,
            self.services,
            self.resource_types,
            self.start,
            self.expiry,
            self.protocol,
            self.version
        )
    }

    /// `base64(HMAC-SHA256(key, string-to-sign))`.
    pub fn signature(&self, key: &AccountKey) -> String {
        // HMAC accepts keys of any length: new_from_slice cannot fail.
        let mut mac = match Hmac::<Sha256>::new_from_slice(&key.0) {
            Ok(m) => m,
            Err(_) => unreachable!("HMAC takes keys of any length"),
        };
        mac.update(self.string_to_sign().as_bytes());
        STANDARD.encode(mac.finalize().into_bytes())
    }

    /// The SAS token (URL query without `?`), form-urlencoded, `sig` last. A secret.
    pub fn token(&self, key: &AccountKey) -> Zeroizing<String> {
        let sig = Zeroizing::new(self.signature(key));
        Zeroizing::new(
            url::form_urlencoded::Serializer::new(String::new())
                .append_pair("sv", &self.version)
                .append_pair("ss", &self.services)
                .append_pair("srt", &self.resource_types)
                .append_pair("sp", &self.permissions)
                .append_pair("st", &self.start)
                .append_pair("se", &self.expiry)
                .append_pair("spr", &self.protocol)
                .append_pair("sig", &sig)
                .finish(),
        )
    }
}

/// RFC 3339 UTC with whole seconds (`2026-11-29T10:00:00Z`), as SAS fields want.
fn sas_time(t: OffsetDateTime) -> String {
    let t = t.replace_nanosecond(0).unwrap_or(t);
    t.format(&Rfc3339).unwrap_or_default()
}

/// Signs a blob-service account SAS valid from `now - 15 min` to `now + SAS_VALIDITY`.
/// `allow_http` adds `http` to `spr` (for an `http://` endpoint such as Azurite).
/// Returns the token and its expiry.
pub fn blob_account_sas(
    account: &str,
    key: &AccountKey,
    now: OffsetDateTime,
    allow_http: bool,
) -> (Zeroizing<String>, OffsetDateTime) {
    let expiry = now + SAS_VALIDITY;
    let fields = AccountSasFields {
        account: account.to_string(),
        permissions: SAS_PERMISSIONS.into(),
        services: "b".into(),
        resource_types: "sco".into(),
        start: sas_time(now - CLOCK_SKEW),
        expiry: sas_time(expiry),
        protocol: if allow_http { "https,http" } else { "https" }.into(),
        version: SAS_VERSION.into(),
    };
    (fields.token(key), expiry)
}

#[cfg(test)]
mod tests {
    use super::*;

    const AZURITE_KEY: &str =
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

    fn fields() -> AccountSasFields {
        AccountSasFields {
            account: "devstoreaccount1".into(),
            permissions: "racwdl".into(),
            services: "b".into(),
            resource_types: "sco".into(),
            start: "2026-11-29T10:00:00Z".into(),
            expiry: "2026-11-29T12:00:00Z".into(),
            protocol: "https,http".into(),
            version: "2022-11-02".into(),
        }
    }

    #[test]
    fn string_to_sign_has_ten_fields() {
        assert_eq!(
            fields().string_to_sign(),
            "devstoreaccount1\nracwdl\nb\nsco\n2026-11-29T10:00:00Z\n2026-11-29T12:00:00Z\n\n\
             https,http\n2022-11-02\n\n"
        );
    }

    /// The expected value was computed independently with Python:
    /// `base64.b64encode(hmac.new(base64.b64decode(KEY), S.encode(), hashlib.sha256).digest())`
    /// where `S` is the string-to-sign above.
    #[test]
    fn signature_matches_python_hmac_vector() {
        let key = AccountKey::from_base64(AZURITE_KEY).expect("key");
        assert_eq!(
            fields().signature(&key),
            "h2uhEHEVBkwZUHD7iNn31rgHvY5//uEnlKy+r9ncmvw="
        );
    }

    #[test]
    fn token_is_form_urlencoded() {
        let key = AccountKey::from_base64(AZURITE_KEY).expect("key");
        let token = fields().token(&key);
        assert_eq!(
            token.as_str(),
            "sv=2022-11-02&ss=b&srt=sco&sp=racwdl&st=2026-11-29T10%3A00%3A00Z\
             &se=2026-11-29T12%3A00%3A00Z&spr=https%2Chttp\
             &sig=h2uhEHEVBkwZUHD7iNn31rgHvY5%2F%2FuEnlKy%2Br9ncmvw%3D"
        );
    }

    #[test]
    fn derived_token_times() {
        let key = AccountKey::from_base64(AZURITE_KEY).expect("key");
        let now = OffsetDateTime::from_unix_timestamp(1_795_946_400).expect("time"); // 2026-11-29T10:00:00Z
        let (token, expiry) = blob_account_sas("acct", &key, now, false);
        assert_eq!(expiry, now + SAS_VALIDITY);
        assert!(
            token.contains("st=2026-11-29T09%3A45%3A00Z"),
            "{}",
            token.as_str()
        );
        assert!(
            token.contains("se=2026-11-29T11%3A00%3A00Z"),
            "{}",
            token.as_str()
        );
        assert!(token.contains("spr=https&"), "{}", token.as_str());
    }

    #[test]
    fn bad_keys_rejected_and_redacted() {
        assert!(AccountKey::from_base64("not base64!").is_none());
        assert!(AccountKey::from_base64("").is_none());
        let key = AccountKey::from_base64(AZURITE_KEY).expect("key");
        assert_eq!(format!("{key:?}"), "AccountKey(<redacted>)");
    }
}
