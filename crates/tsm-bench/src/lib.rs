//! tsm-bench: the benchmark harness of issue 8.
//!
//! - [`batch`]: Kafka v2 record batch writer (reusable by tests).
//! - [`datagen`]: Kafka-shaped segment sets on disk (`tsm-bench gen`), shared with the JVM
//!   harness (bench/jvm).

pub mod batch;
pub mod datagen;
