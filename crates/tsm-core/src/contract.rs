//! The backend contract suite: `pub async fn`s taking `&dyn StorageBackend`, called by
//! every backend crate's tests against its real service. PLACEHOLDER: being written.
