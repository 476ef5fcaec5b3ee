//! What one claim, one renewal and one release cost on the stores a URL names, for
//! BENCHMARKS.md: ROUNDS of each through the store, one at a time, in the namespace
//! `bench`; the median, the 90th percentile and the worst of each.
//!
//! `cargo run --release -p flakeid-stores --example claim_cost -- ROUNDS URL [URL...]` (start
//! the servers the URLs name first; the file store needs only a directory).

use std::time::{Duration, Instant};

use flakeid::claim::OpenOptions;
use flakeid::claim::store::ClaimRequest;

fn summary(mut times: Vec<Duration>) -> String {
    times.sort_unstable();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    format!(
        "{:.2} / {:.2} / {:.2} ms",
        at(0.5).as_secs_f64() * 1e3,
        at(0.9).as_secs_f64() * 1e3,
        at(1.0).as_secs_f64() * 1e3
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(50);
    println!("| store | claim | renewal | release |");
    println!("|---|---|---|---|");
    for url in args {
        let store = flakeid_stores::open(&url, &OpenOptions::default()).unwrap();
        let request = ClaimRequest {
            namespace: "bench",
            pool: 0..1,
            instance: "bench",
        };
        let (mut claims, mut renewals, mut releases) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds as u64 {
            let t = Instant::now();
            let c = store.claim(&request).unwrap();
            claims.push(t.elapsed());
            let t = Instant::now();
            store.renew(&c, c.not_before_unix_ns + 1 + round).unwrap();
            renewals.push(t.elapsed());
            let t = Instant::now();
            store.release(&c, c.not_before_unix_ns + 1 + round).unwrap();
            releases.push(t.elapsed());
        }
        let shown = url.split('?').next().unwrap_or(&url).to_string();
        println!(
            "| {shown} | {} | {} | {} |",
            summary(claims),
            summary(renewals),
            summary(releases)
        );
    }
}
