//! The decode pipeline per ID, IDs to text, on the two kinds of input real columns hold:
//! dense (minted at the cap, 4,096 IDs a tick, so runs of rows share a tick's text) and
//! sparse (each ID its own random tick in one year: IDs minted now and then across a
//! fleet). Each is decoded by the batch decoder and written by `RowWriter::rows` in each
//! format, 4,096 IDs a batch as the tool does; `sparse / dense` is the cost of the text
//! no row shares.
//!
//! ```sh
//! cargo bench -p flakeid-text --bench rows
//! ```

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use flakeid::Layout;
use flakeid::decode::Decoder;
use flakeid_text::batch::Batch;
use flakeid_text::rows::{RowFormat, RowWriter};

const N: usize = 4096;

/// The two inputs, of Twitter's layout around 2026.
fn inputs() -> [(&'static str, Vec<u64>); 2] {
    let layout = Layout::snowflake();
    let now_ticks = 1_793_448_000_000 - layout.epoch_unix_ms();
    let dense = (0..N as u64)
        .map(|i| layout.compose(now_ticks, i, 113).unwrap())
        .collect();
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let year = 365 * 86_400_000;
    let sparse = (0..N)
        .map(|_| {
            let ticks = now_ticks - next() % year;
            layout.compose(ticks, next() & 4095, next() & 1023).unwrap()
        })
        .collect();
    [("dense", dense), ("sparse", sparse)]
}

fn rows(c: &mut Criterion) {
    let layout = Layout::snowflake();
    let mut group = c.benchmark_group("rows");
    group.throughput(Throughput::Elements(N as u64));
    for (format, name) in [
        (RowFormat::Json, "json"),
        (RowFormat::Table, "table"),
        (RowFormat::Csv, "csv"),
    ] {
        for (input, ids) in inputs() {
            let mut batch = Batch::new(Decoder::new(&layout));
            let mut writer = RowWriter::new(&layout, format);
            // Reused, cleared, as the tool reuses its buffer: its capacity stays.
            let mut out = Vec::new();
            group.bench_function(format!("{name}/{input}"), |b| {
                b.iter(|| {
                    out.clear();
                    batch.decode_slice(black_box(&ids)).unwrap();
                    black_box(writer.rows(&mut out, &batch))
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, rows);
criterion_main!(benches);
