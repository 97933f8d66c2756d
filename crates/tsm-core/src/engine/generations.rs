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
//! Memory: one entry (the key and a `u64`) per segment read recently, at most
//! 2 x [`MAX_TRACKED`]: the segments read since the last rotation (`current`) and those of
//! the period before (`previous`); a segment read again moves back into `current`. When
//! `current` is full it becomes `previous` and the old `previous` is forgotten: a segment
//! not read for a whole period gets a fresh generation the next time (its cached entries,
//! cold by then, are not found again: one more download, never stale bytes). A broker
//! reading many segments thus loses only the cold ones, never the whole cache at once.
//! Invalidation removes the segment's entry.

use std::collections::HashMap;
use std::sync::Mutex;

/// Segments per period whose generation is remembered (see the module docs).
pub(crate) const MAX_TRACKED: usize = 16_384;

/// The generation of each segment read (see the module docs).
pub(crate) struct Generations {
    state: Mutex<State>,
}

struct State {
    /// `.log` key -> generation, for the segments read in this period.
    current: HashMap<String, u64>,
    /// The same for the period before.
    previous: HashMap<String, u64>,
    /// The next generation to hand out.
    next: u64,
}

impl State {
    fn remember(&mut self, object: &str, g: u64) {
        if self.current.len() >= MAX_TRACKED {
            self.previous = std::mem::take(&mut self.current);
        }
        self.current.insert(object.to_string(), g);
    }
}

impl Generations {
    /// No segment known yet.
    pub(crate) fn new() -> Self {
        Self {
            state: Mutex::new(State {
                current: HashMap::new(),
                previous: HashMap::new(),
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
        let g = match s.previous.remove(object) {
            Some(g) => g,
            None => {
                let g = s.next;
                s.next += 1;
                g
            }
        };
        s.remember(object, g);
        g
    }

    /// Ends the current generation of `object` (its segment was deleted or overwritten):
    /// the next [`Self::current`] hands out a fresh one. Returns the ended one, if any.
    pub(crate) fn bump(&self, object: &str) -> Option<u64> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let current = s.current.remove(object);
        let previous = s.previous.remove(object);
        current.or(previous)
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
        // A full period rotates: "a", read in it, is kept one more period; read again it
        // stays; a segment not read for a whole period gets a fresh generation, never an
        // old one.
        for i in 0..MAX_TRACKED {
            g.current(&format!("x{i}"));
        }
        assert_eq!(g.current("a"), a2, "read in the last period: kept");
        assert_eq!(g.current("x0"), g.current("x0"));
        for i in 0..2 * MAX_TRACKED {
            g.current(&format!("y{i}"));
        }
        let a3 = g.current("a");
        assert!(a3 > a2, "not read for a whole period: a fresh generation");
        assert_eq!(g.bump("a"), Some(a3));
        // Bump finds a segment of the period before, too.
        let z = g.current("z");
        for i in 0..MAX_TRACKED {
            g.current(&format!("w{i}"));
        }
        assert_eq!(g.bump("z"), Some(z));
        assert!(g.current("z") > z);
    }
}
