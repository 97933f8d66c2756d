//! The filesystem backend (`storage.backend.class=filesystem`, `storage.root`): the
//! embedded default. PLACEHOLDER: being written.
