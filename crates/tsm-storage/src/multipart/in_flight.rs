//! The parts of one upload in flight: each part's request runs as its own tokio task in
//! a [`JoinSet`]; finished parts are collected with their index. Dropping the set cancels
//! every part still running.

use std::collections::HashMap;

use tokio::task::{Id, JoinError, JoinSet};

use super::{MultipartTarget, PartFuture};
use crate::BackendError;

/// Part tasks of one upload and the parts they finished.
pub(super) struct InFlight<P> {
    tasks: JoinSet<Result<P, BackendError>>,
    /// Task id -> part index, for the tasks still in `tasks`.
    index_of: HashMap<Id, u32>,
    done: Vec<(u32, P)>,
}

impl<P: Send + 'static> InFlight<P> {
    pub(super) fn new() -> Self {
        Self {
            tasks: JoinSet::new(),
            index_of: HashMap::new(),
            done: Vec::new(),
        }
    }

    /// Runs part `index` as its own task, inside the current upload's progress scope
    /// ([`crate::progress`]; a task does not inherit it), so the backend's request can
    /// report the bytes it sends; a finished part is reported too.
    pub(super) fn spawn(&mut self, index: u32, part: PartFuture<P>) {
        let handle = match crate::progress::current() {
            Some(p) => self
                .tasks
                .spawn(crate::progress::scope(p.clone(), async move {
                    let r = part.await;
                    if r.is_ok() {
                        p.record();
                    }
                    r
                })),
            None => self.tasks.spawn(part),
        };
        self.index_of.insert(handle.id(), index);
    }

    /// Collects the parts that have finished, without waiting; the first failure is
    /// returned.
    pub(super) fn reap_ready<T: MultipartTarget>(
        &mut self,
        target: &T,
    ) -> Result<(), BackendError> {
        while let Some(joined) = self.tasks.try_join_next_with_id() {
            self.record(target, joined)?;
        }
        Ok(())
    }

    /// Waits until fewer than `limit` parts run (a slot is free); the first failure is
    /// returned.
    pub(super) async fn wait_below<T: MultipartTarget>(
        &mut self,
        limit: usize,
        target: &T,
    ) -> Result<(), BackendError> {
        while self.tasks.len() >= limit {
            match self.tasks.join_next_with_id().await {
                Some(joined) => self.record(target, joined)?,
                None => break,
            }
        }
        Ok(())
    }

    /// Waits for every part; returns their results in index order.
    pub(super) async fn finish<T: MultipartTarget>(
        mut self,
        target: &T,
    ) -> Result<Vec<P>, BackendError> {
        self.wait_below(1, target).await?;
        self.done.sort_by_key(|(index, _)| *index);
        Ok(self.done.into_iter().map(|(_, part)| part).collect())
    }

    fn record<T: MultipartTarget>(
        &mut self,
        target: &T,
        joined: Result<(Id, Result<P, BackendError>), JoinError>,
    ) -> Result<(), BackendError> {
        match joined {
            Ok((id, result)) => {
                let index = self.index_of.remove(&id).unwrap_or(u32::MAX);
                self.done.push((index, result?));
                Ok(())
            }
            Err(e) => {
                let index = self.index_of.remove(&e.id()).unwrap_or(u32::MAX);
                Err(target.part_task_failed(index, e))
            }
        }
    }
}
