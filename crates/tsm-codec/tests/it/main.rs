//! Integration tests of tsm-codec, one binary (modules by area).

mod compression;
mod heuristic;
mod index_model;
mod kafka;
mod pipeline;
mod roundtrip;
mod sizes_codec;
mod support;
