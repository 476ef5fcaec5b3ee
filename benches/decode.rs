//! Batch decoding against the per-ID loop and a memory-copy reference.
//! Run: `cargo bench --bench decode`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use flakeid::Layout;
use flakeid::decode::{Backend, ColumnBuffers, Columns, Decoder, Fields, Stores};

fn ids(layout: &Layout, n: usize) -> Vec<u64> {
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng & layout.max_id()
        })
        .collect()
}

type Cols = [Vec<u64>; 4];

fn columns(c: &mut Cols) -> Columns<'_> {
    let [t, m, s, n] = c;
    Columns {
        ticks: Some(t),
        unix_ms: Some(m),
        sequence: Some(s),
        node: Some(n),
    }
}

/// What a peer's per-ID API gives: decompose each ID, then its Unix time.
fn per_id_loop(layout: &Layout, ids: &[u64], c: &mut Cols) {
    let [t, m, s, n] = c;
    for (i, &id) in ids.iter().enumerate() {
        let p = layout.decompose(id).unwrap();
        t[i] = p.ticks;
        m[i] = layout.unix_ms_of(p.ticks).unwrap_or_default();
        s[i] = p.sequence;
        n[i] = p.node;
    }
}

fn decode(c: &mut Criterion) {
    let layout = Layout::snowflake();
    for (label, n) in [
        ("4Ki", 4_096usize),
        ("256Ki", 262_144),
        ("16Mi", 16_777_216),
    ] {
        let input = ids(&layout, n);
        let mut out: Cols = std::array::from_fn(|_| vec![0u64; n]);
        // Verify before timing: every backend's columns equal the per-ID loop's.
        let mut want: Cols = std::array::from_fn(|_| vec![0u64; n]);
        per_id_loop(&layout, &input, &mut want);
        for backend in Backend::available() {
            Decoder::with_backend(&layout, backend)
                .decode(&input, columns(&mut out))
                .unwrap();
            assert!(
                out == want,
                "{} differs from the per-ID loop",
                backend.name()
            );
        }

        let mut group = c.benchmark_group(format!("decode/{label}"));
        group.throughput(Throughput::Elements(n as u64));
        if n > 1_000_000 {
            group.sample_size(10);
        }
        group.bench_function("per_id_decompose", |b| {
            b.iter(|| per_id_loop(&layout, black_box(&input), &mut out))
        });
        for backend in Backend::available() {
            let d = Decoder::with_backend(&layout, backend);
            group.bench_function(BenchmarkId::new("batch", backend.name()), |b| {
                b.iter(|| d.decode(black_box(&input), columns(&mut out)).unwrap())
            });
        }
        // One column (timestamps only: the most common analytics case) on the measured
        // backend, against copying the same bytes (the goal: at most 1.3x).
        let fastest = Decoder::new(&layout);
        group.bench_function(
            format!("one_column_unix_ms/{}", fastest.backend().name()),
            |b| {
                b.iter(|| {
                    let cols = Columns {
                        unix_ms: Some(&mut out[1]),
                        ..Columns::default()
                    };
                    fastest.decode(black_box(&input), cols).unwrap()
                })
            },
        );
        // The decoder's own buffers (64-byte aligned, sequence and node as u32: 24 B out per
        // ID instead of 32), with ordinary and with non-temporal stores, on the measured
        // backend; all four columns, then timestamps alone.
        for (fields, what) in [(Fields::ALL, "all"), (Fields::UNIX_MS, "unix_ms")] {
            for (stores, how) in [
                (Stores::Cached, "cached"),
                (Stores::NonTemporal, "non_temporal"),
            ] {
                let mut buf = ColumnBuffers::new(fields).stores(stores);
                fastest.decode_into(&input, &mut buf).unwrap();
                if fields == Fields::ALL {
                    assert!(buf.unix_ms() == Some(&want[1][..]), "{how} differs");
                    assert!(
                        buf.node()
                            .unwrap()
                            .iter()
                            .zip(&want[3])
                            .all(|(&a, &b)| u64::from(a) == b)
                    );
                }
                group.bench_function(format!("buffers_{what}/{how}"), |b| {
                    b.iter(|| fastest.decode_into(black_box(&input), &mut buf).unwrap())
                });
            }
        }
        for backend in Backend::available() {
            let d = Decoder::with_backend(&layout, backend);
            group.bench_function(
                BenchmarkId::new("one_column_unix_ms_on", backend.name()),
                |b| {
                    b.iter(|| {
                        let cols = Columns {
                            unix_ms: Some(&mut out[1]),
                            ..Columns::default()
                        };
                        d.decode(black_box(&input), cols).unwrap()
                    })
                },
            );
        }
        group.bench_function("one_column_copy_reference", |b| {
            b.iter(|| out[1].copy_from_slice(black_box(&input)))
        });
        // Bandwidth reference: the same output bytes (four u64 columns) written by
        // `copy_from_slice` from the input.
        group.bench_function("copy_reference", |b| {
            b.iter(|| {
                for col in out.iter_mut() {
                    col.copy_from_slice(black_box(&input));
                }
            })
        });
        group.finish();
    }
}

/// Decimal text of 4,096 Snowflake IDs into one buffer (what the service's JSON batches and
/// the tool's rows write per ID): flakeid's writer beside `itoa`, std's `write!`, and the
/// digit-at-a-time loop `Encoding::Decimal` had before. Each writer's bytes are checked
/// against std's first.
fn decimal(c: &mut Criterion) {
    use std::io::Write;
    const N: usize = 4096;
    let layout = Layout::snowflake();
    let input = ids(&layout, N);
    let mut group = c.benchmark_group("decimal_4096");
    group.throughput(Throughput::Elements(N as u64));
    let mut out = Vec::with_capacity(N * 21);
    let std_text = |out: &mut Vec<u8>| {
        out.clear();
        for &id in &input {
            write!(out, "{id}").unwrap();
            out.push(b',');
        }
    };
    let flakeid_text = |out: &mut Vec<u8>| {
        out.clear();
        let mut buf = [0u8; flakeid::Encoding::MAX_LEN];
        for &id in &input {
            let len = flakeid::Encoding::Decimal.write(id, &mut buf);
            out.extend_from_slice(&buf[..len]);
            out.push(b',');
        }
    };
    let itoa_text = |out: &mut Vec<u8>| {
        out.clear();
        let mut buf = itoa::Buffer::new();
        for &id in &input {
            out.extend_from_slice(buf.format(id).as_bytes());
            out.push(b',');
        }
    };
    let digit_loop = |out: &mut Vec<u8>| {
        out.clear();
        for &id in &input {
            let mut tmp = [0u8; 20];
            let (mut at, mut n) = (20, id);
            loop {
                at -= 1;
                tmp[at] = b'0' + (n % 10) as u8;
                n /= 10;
                if n == 0 {
                    break;
                }
            }
            out.extend_from_slice(&tmp[at..]);
            out.push(b',');
        }
    };
    std_text(&mut out);
    let want = out.clone();
    type Writer<'a> = &'a dyn Fn(&mut Vec<u8>);
    let writers: [(&str, Writer); 4] = [
        ("flakeid Encoding::Decimal.write", &flakeid_text),
        ("itoa", &itoa_text),
        ("std write!", &std_text),
        ("digit at a time (Encoding::Decimal before)", &digit_loop),
    ];
    for (name, write) in writers {
        write(&mut out);
        assert_eq!(out, want, "{name}");
        group.bench_function(name, |b| b.iter(|| write(black_box(&mut out))));
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = decode, decimal
}
criterion_main!(benches);
