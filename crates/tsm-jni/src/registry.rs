//! Handle registries: the `long` handles Java holds are ids into these maps, never raw
//! pointers. A stale, double-freed or forged handle finds nothing and becomes an error
//! ("closed"), never a use-after-free — the contract lets the broker call `close()` while
//! calls are still in flight (docs/broker-contract.md "The interface").

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Ids are unique across all registries of this library copy (one per class loader).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A map from handle id to shared object. Lookups clone the `Arc` and release the lock at
/// once, so the lock is never held across a wait.
pub struct Registry<T> {
    map: Mutex<Option<HashMap<u64, Arc<T>>>>,
}

impl<T> Registry<T> {
    /// An empty registry (usable in a `static`).
    pub const fn new() -> Self {
        Self {
            map: Mutex::new(None),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<HashMap<u64, Arc<T>>>> {
        // A panic while holding this lock cannot leave the map half-updated (single
        // insert/remove calls), so a poisoned lock is still usable.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores `value`; returns its new id (never 0).
    pub fn insert(&self, value: Arc<T>) -> u64 {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        self.lock()
            .get_or_insert_with(HashMap::new)
            .insert(id, value);
        id
    }

    /// The object behind `id`, if still registered.
    pub fn get(&self, id: u64) -> Option<Arc<T>> {
        self.lock().as_ref().and_then(|m| m.get(&id).cloned())
    }

    /// Unregisters `id`; the object is freed when its last in-flight user drops it.
    pub fn remove(&self, id: u64) -> Option<Arc<T>> {
        self.lock().as_mut().and_then(|m| m.remove(&id))
    }

    /// A snapshot of the registered objects (the lock is released before it returns).
    pub fn values(&self) -> Vec<Arc<T>> {
        self.lock()
            .as_ref()
            .map_or_else(Vec::new, |m| m.values().cloned().collect())
    }

    /// Number of registered objects.
    pub fn len(&self) -> usize {
        self.lock().as_ref().map_or(0, HashMap::len)
    }

    /// True when nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_ids_find_nothing() {
        let r: Registry<u32> = Registry::new();
        let a = r.insert(Arc::new(7));
        assert_eq!(r.get(a).as_deref(), Some(&7));
        assert!(r.remove(a).is_some());
        assert!(r.get(a).is_none());
        assert!(r.remove(a).is_none());
        assert!(r.get(0).is_none());
        assert!(r.is_empty());
    }
}
