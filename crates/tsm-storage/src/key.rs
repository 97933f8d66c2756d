//! Object keys that know which part is the configured `key.prefix`, so errors and logs
//! can mask it (`key.prefix.mask`).

use std::fmt;

/// A bucket-relative object key.
///
/// [`ObjectKey::as_str`] is the real key sent to the store. `Display` and `Debug` print
/// `<prefix>` in place of the configured `key.prefix` when masking is on, so errors can
/// always carry the key.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    value: String,
    prefix_len: usize,
    mask_prefix: bool,
}

impl ObjectKey {
    /// A key whose first `prefix.len()` bytes are the configured `key.prefix`.
    pub fn new(prefix: &str, rest: &str, mask_prefix: bool) -> Self {
        let mut value = String::with_capacity(prefix.len() + rest.len());
        value.push_str(prefix);
        value.push_str(rest);
        Self {
            value,
            prefix_len: prefix.len(),
            mask_prefix,
        }
    }

    /// A key with no configured prefix (tests, tools).
    pub fn plain(value: impl Into<String>) -> Self {
        Self {
            value: value.into(),
            prefix_len: 0,
            mask_prefix: false,
        }
    }

    /// The real key, to send to the store. Never log this; log the key itself.
    pub fn as_str(&self) -> &str {
        &self.value
    }

    /// The configured prefix part (empty when none).
    pub fn prefix(&self) -> &str {
        &self.value[..self.prefix_len]
    }

    /// The part after the configured prefix.
    pub fn suffix(&self) -> &str {
        &self.value[self.prefix_len..]
    }

    /// The same prefix and masking with another suffix.
    pub fn with_suffix(&self, rest: &str) -> Self {
        Self::new(self.prefix(), rest, self.mask_prefix)
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mask_prefix && self.prefix_len > 0 {
            write!(f, "<prefix>/{}", self.suffix())
        } else {
            f.write_str(&self.value)
        }
    }
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectKey({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_prefix_in_display_only() {
        let k = ObjectKey::new("secret-tenant/", "t-x/0/a.log", true);
        assert_eq!(k.as_str(), "secret-tenant/t-x/0/a.log");
        assert_eq!(k.to_string(), "<prefix>/t-x/0/a.log");
        assert!(!format!("{k:?}").contains("secret"));
        let k = ObjectKey::new("p/", "a.log", false);
        assert_eq!(k.to_string(), "p/a.log");
    }
}
