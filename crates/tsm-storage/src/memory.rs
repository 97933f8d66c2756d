//! An in-memory [`StorageBackend`]: the reference implementation of the contract, for
//! tests. Objects live in a map in this process (gone when the backend is dropped), so it
//! does hold whole objects in memory: never use it for real data.
//!
//! Uploads collect the body and publish it in one step (atomic); fetches yield the stored
//! bytes in slices of at most [`FETCH_ITEM_SIZE`] bytes so consumers see multi-item
//! streams as with a real store.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;

use super::{
    BackendError, ByteRange, ByteStream, ListStream, ObjectKey, ObjectMeta, StorageBackend,
};

/// Largest item a fetch stream yields (bytes).
pub const FETCH_ITEM_SIZE: usize = 8 * 1024;

/// Objects in a shared map; clones share the same objects.
#[derive(Clone, Default)]
pub struct MemoryBackend {
    objects: Arc<RwLock<BTreeMap<String, Bytes>>>,
}

impl MemoryBackend {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of objects stored.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// True when no object is stored.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Bytes>> {
        // A panic while holding the lock cannot leave the map inconsistent (single
        // insert/remove calls), so a poisoned lock is still usable.
        self.objects.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Bytes>> {
        self.objects.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl fmt::Debug for MemoryBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryBackend")
            .field("objects", &self.len())
            .finish()
    }
}

impl fmt::Display for MemoryBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Memory")
    }
}

#[async_trait]
impl StorageBackend for MemoryBackend {
    async fn upload(
        &self,
        key: &ObjectKey,
        mut body: ByteStream,
        size: Option<u64>,
    ) -> Result<u64, BackendError> {
        let mut buf = BytesMut::new();
        while let Some(item) = body.next().await {
            buf.extend_from_slice(&item?);
        }
        let written = buf.len() as u64;
        if let Some(expected) = size {
            if expected != written {
                return Err(BackendError::Other {
                    key: key.clone(),
                    detail: format!(
                        "upload body was {written} bytes but its size was given as {expected}"
                    ),
                    source: None,
                });
            }
        }
        self.write().insert(key.as_str().to_string(), buf.freeze());
        Ok(written)
    }

    async fn fetch(
        &self,
        key: &ObjectKey,
        range: Option<ByteRange>,
    ) -> Result<ByteStream, BackendError> {
        let data =
            self.read()
                .get(key.as_str())
                .cloned()
                .ok_or_else(|| BackendError::NotFound {
                    key: key.clone(),
                    detail: String::new(),
                })?;
        let size = data.len() as u64;
        let data = match range {
            None => data,
            Some(r) => match r.clamp_to(size) {
                Some(c) => data.slice(c.start as usize..=c.end as usize),
                None => {
                    return Err(BackendError::InvalidRange {
                        key: key.clone(),
                        range: r,
                        size: Some(size),
                    });
                }
            },
        };
        let pieces: Vec<Result<Bytes, BackendError>> = (0..data.len())
            .step_by(FETCH_ITEM_SIZE)
            .map(|i| Ok(data.slice(i..(i + FETCH_ITEM_SIZE).min(data.len()))))
            .collect();
        Ok(futures::stream::iter(pieces).boxed())
    }

    async fn delete(&self, keys: &[ObjectKey]) -> Result<(), BackendError> {
        let mut map = self.write();
        for k in keys {
            map.remove(k.as_str());
        }
        Ok(())
    }

    fn list(&self, prefix: &ObjectKey) -> ListStream {
        let items: Vec<Result<ObjectMeta, BackendError>> = self
            .read()
            .range(prefix.as_str().to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix.as_str()))
            .map(|(k, v)| {
                Ok(ObjectMeta {
                    key: k.clone(),
                    size: v.len() as u64,
                    last_modified: None,
                })
            })
            .collect();
        futures::stream::iter(items).boxed()
    }

    /// Uploads are collected whole in memory (this backend is for tests and benchmarks,
    /// whose segments are small): nothing buffered beyond what the map keeps.
    fn upload_buffer_bytes(&self) -> u64 {
        0
    }

    /// No round trip, but no page cache reading ahead either: read-ahead is left to the
    /// engine, as for a network store.
    fn reads_are_local(&self) -> bool {
        false
    }
}
