//! AES-256-GCM chunk encrypt/decrypt throughput (MB/s) for 1 MiB and 4 MiB chunks,
//! single-threaded. Run: `cargo bench -p tsm-crypto --bench chunk_cipher`.

// criterion_group! defines an undocumented `pub fn`; a bench target exports nothing.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use tsm_crypto::{Aad, ChunkCipher, DataKey};

fn bench(c: &mut Criterion) {
    let cipher = ChunkCipher::new(
        &DataKey::generate().expect("OS RNG"),
        &Aad::generate().expect("OS RNG"),
    );
    let mut group = c.benchmark_group("aes256gcm_chunk");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for mib in [1usize, 4] {
        let mut plain = vec![0u8; mib << 20];
        getrandom::fill(&mut plain).expect("OS RNG");
        let stored = cipher.encrypt(&plain).expect("encrypt");
        group.throughput(Throughput::Bytes(plain.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("encrypt", format!("{mib}MiB")),
            &plain,
            |b, p| b.iter(|| cipher.encrypt(p).expect("encrypt")),
        );
        group.bench_with_input(
            BenchmarkId::new("decrypt", format!("{mib}MiB")),
            &stored,
            |b, s| b.iter(|| cipher.decrypt(0, s).expect("decrypt")),
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
