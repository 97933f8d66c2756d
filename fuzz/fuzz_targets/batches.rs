//! A `.log` segment's bytes as `tsm verify` and the tests walk them: record batches fed to
//! the batch walker in two pieces, the batch iterator and each batch's records.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tsm_kafka_log::walker::BatchWalker;

fuzz_target!(|data: &[u8]| {
    let cut = data.first().map_or(0, |b| usize::from(*b)).min(data.len());
    let mut w = BatchWalker::new();
    w.push(&data[..cut]);
    w.push(&data[cut..]);
    let _ = w.finish();
    for (pos, header) in tsm_kafka_log::batch::batches(data) {
        let _ = (pos, header);
    }
    let _ = tsm_kafka_log::record::records(data);
});
