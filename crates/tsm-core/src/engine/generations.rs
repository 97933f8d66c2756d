//! Segment generations: what makes a delete or overwrite invalidation impossible to miss.
//! Read by `engine/fetch.rs` and `engine/fetch_index.rs` when a call starts, bumped by
//! `EngineShared::invalidate` (`engine/mod.rs`) after a delete or overwrite; calls nothing
//! of the engine.
//!
//! Every cache entry of a segment (its manifest, its indexes, its chunks in the chunk cache
//! or the read-ahead store) is keyed by the segment's generation as well as its object key:
//! a number taken from one engine-wide counter, so no two generations are ever equal. A
//! call takes the segment's generation (by its `.log` key) before its first lookup and uses
//! it for every lookup and insert; invalidation replaces the generation after the store's
//! delete or overwrite returned. So whatever a call that started before the invalidation
//! still inserts (its own chunk GET, a manifest GET, a read-ahead load in flight across
//! the invalidation) goes under the old generation, which no call started after it ever
//! looks up: stale bytes cannot be served, whether or not the old entries could be found
//! and dropped (dropping them, when the old manifest is still cached, only frees their
//! room sooner; else they leave by eviction). Why not drop entries by key prefix or check
//! a flag at insert: a load's insert into the cache (moka's single-flight entry) is not
//! atomic with any check before it, and dropping needs to know the keys; a key nobody
//! asks for needs neither.
//!
//! Memory: one entry (the key and a `u64`) per segment read since it was last invalidated;
//! invalidation removes the entry (the next call takes a fresh generation), and past
//! [`MAX_TRACKED`] entries the map is emptied: every segment then gets a fresh generation
//! (its cached entries are not found again: one more download each, never stale bytes).

use std::collections::HashMap;
use std::sync::Mutex;

/// Segments whose generation is remembered before the map is emptied (see the module
/// docs).
pub(crate) const MAX_TRACKED: usize = 16_384;

/// The generation of each segment read (see the module docs).
pub(crate) struct Generations {
    /// `.log` key -> its current generation; with the next generation to hand out.
    state: Mutex<State>,
}

struct State {
    current: HashMap<String, u64>,
    next: u64,
}

impl Generations {
    /// No segment known yet.
    pub(crate) fn new() -> Self {
        Self {
            state: Mutex::new(State {
                current: HashMap::new(),
                next: 0,
            }),
        }
    }

    /// The current generation of the segment whose `.log` key is `object` (a fresh one
    /// when it has none).
    pub(crate) fn current(&self, object: &str) -> u64 {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(g) = s.current.get(object) {
            return *g;
        }
        if s.current.len() >= MAX_TRACKED {
            s.current.clear();
        }
        let g = s.next;
        s.next += 1;
        s.current.insert(object.to_string(), g);
        g
    }

    /// Ends the current generation of `object` (its segment was deleted or overwritten):
    /// the next [`Self::current`] hands out a fresh one. Returns the ended one, if any.
    pub(crate) fn bump(&self, object: &str) -> Option<u64> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .current
            .remove(object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations_are_stable_until_bumped_and_never_reused() {
        let g = Generations::new();
        let a = g.current("a");
        assert_eq!(g.current("a"), a);
        let b = g.current("b");
        assert_ne!(a, b);
        assert_eq!(g.bump("a"), Some(a));
        assert_eq!(g.bump("a"), None);
        let a2 = g.current("a");
        assert!(a2 != a && a2 != b);
        // Emptied when full: fresh generations, never an old one.
        for i in 0..MAX_TRACKED {
            g.current(&format!("x{i}"));
        }
        let a3 = g.current("a");
        assert!(a3 > a2);
    }
}
