//! Claim latency and renewal cost against a claim store, and `next_id` of a fenced
//! generator beside an unfenced one, in one run (a measurement, not a test).
//!
//! ```sh
//! etcd --data-dir /tmp/flakeid-etcd --listen-client-urls http://127.0.0.1:23790 \
//!      --advertise-client-urls http://127.0.0.1:23790 --listen-peer-urls http://127.0.0.1:23800 &
//! cargo run --release --features etcd --example claim_latency -- etcd://127.0.0.1:23790
//! cargo run --release --example claim_latency -- file:/tmp/flakeid-claims
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use flakeid::claim::Claims;
use flakeid::clock::CoarseClock;
use flakeid::{Generator, Layout};

fn summary(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "{name}: median {:?}, worst {:?} (of {})",
        samples[samples.len() / 2],
        samples[samples.len() - 1],
        samples.len()
    );
}

fn main() {
    let url = std::env::args()
        .nth(1)
        .expect("give a claim store URL, e.g. etcd://127.0.0.1:2379");
    let layout: Layout = "seq=22,node=4,epoch=2025-01-01T00:00:00Z".parse().unwrap();
    let claims = || {
        Claims::open(&url)
            .unwrap()
            .namespace("latency")
            .manual_renewal()
    };

    // A claim is the store's claim, the first reservation and, on drop, the release.
    let mut claim = Vec::new();
    let mut release = Vec::new();
    for _ in 0..50 {
        let started = Instant::now();
        let g = Generator::builder(layout).build_claimed(claims()).unwrap();
        claim.push(started.elapsed());
        let started = Instant::now();
        drop(g);
        release.push(started.elapsed());
    }
    summary("claim (claim + first reservation)", claim);
    summary("release", release);

    let g = Generator::builder(layout).build_claimed(claims()).unwrap();
    let renew = (0..50)
        .map(|_| {
            let started = Instant::now();
            g.renew_claim().unwrap();
            started.elapsed()
        })
        .collect();
    summary("renewal (one conditional write)", renew);
    drop(g);

    // Fenced beside unfenced, same clock kind, interleaved rounds.
    let fenced = Generator::builder(layout)
        .clock(CoarseClock::new())
        .build_claimed(Claims::open(&url).unwrap().namespace("latency"))
        .unwrap();
    let plain = Generator::builder(layout)
        .node(15)
        .clock(CoarseClock::new())
        .build()
        .unwrap();
    const N: u32 = 5_000_000;
    let (mut f, mut p) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..3 {
        let started = Instant::now();
        for _ in 0..N {
            black_box(fenced.next_id().unwrap());
        }
        f += started.elapsed();
        let started = Instant::now();
        for _ in 0..N {
            black_box(plain.next_id().unwrap());
        }
        p += started.elapsed();
    }
    let per = |d: Duration| d.as_secs_f64() * 1e9 / f64::from(3 * N);
    println!(
        "next_id (CoarseClock): fenced {:.2} ns, unfenced {:.2} ns, fenced / unfenced {:.3}x",
        per(f),
        per(p),
        per(f) / per(p)
    );
}
