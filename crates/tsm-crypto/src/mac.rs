//! [`SegmentMac`]: the MAC that binds an encrypted segment's stored objects to the segment
//! they were written for (tsm's integrity fields; not part of the Java plugin's format,
//! which ignores them).
//!
//! AES-GCM authenticates each chunk on its own, under the segment's data key and one AAD
//! shared by every chunk of the segment: it cannot tell chunk 3 from chunk 7, notice a
//! dropped chunk or a shrunk file size, or tell segment A's objects copied over segment
//! B's keys when both are tiered. The MAC covers what does: the segment's identity, its
//! chunk table, the digest of each stored chunk and index, and the flags (the canonical
//! input is tsm-core's `manifest::integrity`; this module only keys and computes it).
//!
//! Key: HKDF-SHA256 (RFC 5869) of the segment's [`DataKey`], salt
//! `"tsm.segment.integrity"`, info `"hmac-sha256 v1"`, 32 bytes, straight into an
//! HMAC-SHA256 key (aws-lc-rs; the key bytes never sit in Rust memory). Whoever cannot
//! unwrap (or wrap) the data key cannot compute it: a writer of the bucket without the
//! key pair's files cannot make a MAC that verifies. Tags are compared in constant time.

use aws_lc_rs::{constant_time, hkdf, hmac};

use crate::{CryptoError, DataKey};

/// Length of a MAC tag in bytes (HMAC-SHA256).
pub const MAC_LEN: usize = 32;

const SALT: &[u8] = b"tsm.segment.integrity";
const INFO: &[u8] = b"hmac-sha256 v1";

/// The integrity MAC key of one segment, derived from its data key. `Debug` shows no key.
#[derive(Clone)]
pub struct SegmentMac {
    key: hmac::Key,
}

impl std::fmt::Debug for SegmentMac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SegmentMac(<redacted>)")
    }
}

impl SegmentMac {
    /// The MAC key of the segment whose data key is `key`.
    pub fn new(key: &DataKey) -> Self {
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, SALT).extract(key.expose_secret());
        let info = [INFO];
        // 32 bytes is far below HKDF-SHA256's limit of 255 x 32: this cannot fail.
        let key = match prk.expand(&info, hmac::HMAC_SHA256) {
            Ok(okm) => hmac::Key::from(okm),
            Err(_) => unreachable!("32 bytes of HKDF-SHA256 output are always available"),
        };
        Self { key }
    }

    /// A MAC computation fed piece by piece ([`MacInput::update`]).
    pub fn start(&self) -> MacInput {
        MacInput(hmac::Context::with_key(&self.key))
    }
}

/// The input of one MAC computation, fed in order.
pub struct MacInput(hmac::Context);

impl MacInput {
    /// Appends `bytes` to the input.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The tag of everything fed.
    pub fn finish(self) -> [u8; MAC_LEN] {
        let tag = self.0.sign();
        let mut out = [0u8; MAC_LEN];
        out.copy_from_slice(tag.as_ref());
        out
    }

    /// Checks the tag of everything fed against `expected`, in constant time.
    ///
    /// # Errors
    /// [`CryptoError::MacMismatch`] when they differ (or `expected` is not [`MAC_LEN`]
    /// bytes).
    pub fn verify(self, expected: &[u8]) -> Result<(), CryptoError> {
        let tag = self.0.sign();
        constant_time::verify_slices_are_equal(tag.as_ref(), expected)
            .map_err(|_| CryptoError::MacMismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_key_same_tag_other_key_or_input_not() {
        let k1 = DataKey::from_bytes(&[1u8; 32]).expect("key");
        let k2 = DataKey::from_bytes(&[2u8; 32]).expect("key");
        let tag = |k: &DataKey, parts: &[&[u8]]| {
            let mut m = SegmentMac::new(k).start();
            for p in parts {
                m.update(p);
            }
            m.finish()
        };
        let t = tag(&k1, &[b"ab", b"c"]);
        // Piecewise input is the concatenation.
        assert_eq!(t, tag(&k1, &[b"abc"]));
        assert_ne!(t, tag(&k2, &[b"abc"]));
        assert_ne!(t, tag(&k1, &[b"abd"]));
        let mut m = SegmentMac::new(&k1).start();
        m.update(b"abc");
        m.verify(&t).expect("verifies");
        let mut m = SegmentMac::new(&k1).start();
        m.update(b"abc");
        assert!(matches!(m.verify(&t[..31]), Err(CryptoError::MacMismatch)));
        assert_eq!(
            format!("{:?}", SegmentMac::new(&k1)),
            "SegmentMac(<redacted>)"
        );
    }
}
