//! Transform and detransform throughput of the four chunk transforms of the format (none,
//! zstd level 3, AES-256-GCM, zstd+AES), for 1 MiB and 4 MiB chunks, on incompressible
//! bytes and on realistic Kafka segments (v2 record batches of JSON-like records), run
//! single-threaded (a plain loop over chunks) and through `ordered_transform` on a tokio
//! runtime; plus whole-buffer zstd level 3 on the same data as the reference.
//!
//! Run: `cargo bench -p tsm-codec --bench transform`. Each data set is 8 MiB; with the short
//! warm-up and measurement times set below the whole run takes a few minutes. Throughput is
//! reported in original (segment) bytes per second in both directions. Results:
//! `docs/benchmarks.md`.

// criterion_group! defines an undocumented `pub fn`; a bench target exports nothing.
#![allow(missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::{StreamExt, TryStreamExt, stream};
use tsm_codec::{CodecError, compression, ordered_transform, pipeline};
use tsm_crypto::{Aad, ChunkCipher, DataKey};

#[path = "../tests/it/kafka.rs"]
mod kafka;

const DATA_LEN: usize = 8 << 20;
const LEVEL: i32 = compression::DEFAULT_LEVEL;

#[derive(Clone, Copy)]
enum Mode {
    None,
    Zstd,
    Aes,
    ZstdAes,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::Zstd => "zstd",
            Mode::Aes => "aes",
            Mode::ZstdAes => "zstd+aes",
        }
    }
}

/// The per-segment transform, as the engine composes it: compress then encrypt on write,
/// decrypt then decompress on read.
struct Transform {
    mode: Mode,
    cipher: ChunkCipher,
}

fn crypto_err(e: tsm_crypto::CryptoError) -> CodecError {
    // Benches only: errors are not expected; keep one error type for the pipeline.
    CodecError::MalformedSizes(e.to_string())
}

impl Transform {
    fn forward(&self, chunk: &[u8]) -> Result<Vec<u8>, CodecError> {
        Ok(match self.mode {
            Mode::None => chunk.to_vec(),
            Mode::Zstd => compression::compress_chunk(chunk, LEVEL)?,
            Mode::Aes => self.cipher.encrypt(chunk).map_err(crypto_err)?,
            Mode::ZstdAes => self
                .cipher
                .encrypt(&compression::compress_chunk(chunk, LEVEL)?)
                .map_err(crypto_err)?,
        })
    }

    fn reverse(&self, index: u64, stored: &[u8], len: usize) -> Result<Vec<u8>, CodecError> {
        Ok(match self.mode {
            Mode::None => stored.to_vec(),
            Mode::Zstd => compression::decompress_chunk(stored, len)?,
            Mode::Aes => self.cipher.decrypt(index, stored).map_err(crypto_err)?,
            Mode::ZstdAes => compression::decompress_chunk(
                &self.cipher.decrypt(index, stored).map_err(crypto_err)?,
                len,
            )?,
        })
    }
}

fn split(data: &Bytes, chunk: usize) -> Vec<Bytes> {
    (0..data.len())
        .step_by(chunk)
        .map(|s| data.slice(s..(s + chunk).min(data.len())))
        .collect()
}

fn bench_transforms(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let max_in_flight = pipeline::default_max_in_flight();
    let key = DataKey::generate().expect("OS RNG");
    let aad = Aad::generate().expect("OS RNG");
    let datasets = [
        (
            "incompressible",
            Bytes::from(kafka::random_bytes(DATA_LEN, 1)),
        ),
        ("kafka-json", Bytes::from(kafka::kafka_segment(DATA_LEN, 2))),
    ];
    for (data_name, data) in &datasets {
        // Reference: zstd level 3 on the whole buffer, one thread.
        let mut g = c.benchmark_group(format!("zstd-reference/{data_name}"));
        g.throughput(Throughput::Bytes(data.len() as u64));
        g.bench_function("compress", |b| {
            b.iter(|| zstd::bulk::compress(data, LEVEL).expect("zstd"))
        });
        let frame = zstd::bulk::compress(data, LEVEL).expect("zstd");
        g.bench_function("decompress", |b| {
            b.iter(|| zstd::bulk::decompress(&frame, data.len()).expect("zstd"))
        });
        g.finish();

        for chunk_mib in [1usize, 4] {
            let chunks = split(data, chunk_mib << 20);
            let lens: Arc<Vec<usize>> = Arc::new(chunks.iter().map(Bytes::len).collect());
            let mut g = c.benchmark_group(format!("{data_name}/chunk-{chunk_mib}MiB"));
            g.throughput(Throughput::Bytes(data.len() as u64));
            for mode in [Mode::None, Mode::Zstd, Mode::Aes, Mode::ZstdAes] {
                let t = Arc::new(Transform {
                    mode,
                    cipher: ChunkCipher::new(&key, &aad),
                });
                let stored: Vec<Bytes> = chunks
                    .iter()
                    .map(|ch| Bytes::from(t.forward(ch).expect("forward")))
                    .collect();
                let stored_len: usize = stored.iter().map(Bytes::len).sum();
                eprintln!(
                    "{data_name}/chunk-{chunk_mib}MiB/{}: stored {stored_len} of {} bytes ({:.3})",
                    mode.name(),
                    data.len(),
                    stored_len as f64 / data.len() as f64
                );

                g.bench_function(BenchmarkId::new("transform/single", mode.name()), |b| {
                    b.iter(|| {
                        chunks
                            .iter()
                            .map(|ch| t.forward(ch).expect("forward").len())
                            .sum::<usize>()
                    })
                });
                g.bench_function(BenchmarkId::new("transform/pipeline", mode.name()), |b| {
                    b.iter(|| {
                        let tf = t.clone();
                        rt.block_on(
                            ordered_transform(
                                stream::iter(chunks.iter().cloned().map(Ok)),
                                max_in_flight,
                                move |_, ch: Bytes| {
                                    Ok::<_, CodecError>(Bytes::from(tf.forward(&ch)?))
                                },
                            )
                            .map_ok(|b| b.len())
                            .try_fold(0usize, |a, n| async move { Ok(a + n) }),
                        )
                        .expect("pipeline")
                    })
                });
                g.bench_function(BenchmarkId::new("detransform/single", mode.name()), |b| {
                    b.iter(|| {
                        stored
                            .iter()
                            .enumerate()
                            .map(|(i, s)| t.reverse(i as u64, s, lens[i]).expect("reverse").len())
                            .sum::<usize>()
                    })
                });
                g.bench_function(BenchmarkId::new("detransform/pipeline", mode.name()), |b| {
                    b.iter(|| {
                        let (tr, lens) = (t.clone(), lens.clone());
                        rt.block_on(
                            ordered_transform(
                                stream::iter(stored.iter().cloned().map(Ok)),
                                max_in_flight,
                                move |i, s: Bytes| {
                                    Ok::<_, CodecError>(Bytes::from(tr.reverse(
                                        i,
                                        &s,
                                        lens[i as usize],
                                    )?))
                                },
                            )
                            .map(|r| r.map(|b| b.len()))
                            .try_fold(0usize, |a, n| async move { Ok(a + n) }),
                        )
                        .expect("pipeline")
                    })
                });
            }
            g.finish();
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .without_plots();
    targets = bench_transforms
}
criterion_main!(benches);
