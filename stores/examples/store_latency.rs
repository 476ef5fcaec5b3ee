//! Claim, renewal and release latency on every coordinator side by side, for
//! BENCHMARKS.md: starts an etcd 3.4, a ZooKeeper 3.8 and two PostgreSQL 15 servers (one
//! plain, one that takes only TLS with a client certificate and a password) on loopback
//! through the fleet kit (PostgreSQL with `fsync` on, as the others fsync), then runs ROUNDS of claim, renewal and release through each
//! store, one at a time, interleaved round by round, after one round to warm up; prints
//! the median / 90th percentile / worst of each and the ratio to etcd's median.
//!
//! `cargo run --release -p flakeid-stores --example store_latency -- [ROUNDS]` (needs
//! etcd, java with ZooKeeper's jars and PostgreSQL installed; run it as root or as a user
//! PostgreSQL may run as).

use std::time::{Duration, Instant};

use flakeid::claim::store::ClaimRequest;
use flakeid::claim::{ClaimStore, OpenOptions};
use flakeid_fleet::scenarios::Server;

fn quantiles(mut times: Vec<Duration>) -> [f64; 3] {
    times.sort_unstable();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3;
    [at(0.5), at(0.9), at(1.0)]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|r| r.parse().ok())
        .unwrap_or(100);
    let etcd = flakeid_fleet::etcd::Etcd::start("latency").expect("etcd");
    let zk = flakeid_fleet::zookeeper::ZooKeeper::start("latency").expect("ZooKeeper");
    // Durable as etcd and ZooKeeper are (the tests' servers skip fsync).
    const DURABLE: &str = "fsync = on\nfull_page_writes = on";
    let pg = flakeid_fleet::postgres::Postgres::start_with("latency", DURABLE).expect("PostgreSQL");
    let dir = std::env::temp_dir().join(format!("flakeid-latency-certs-{}", std::process::id()));
    let certs = flakeid_fleet::certs::make(&dir, "latency", "flakeid");
    let pg_tls = flakeid_fleet::postgres::Postgres::start_tls_with("latency-tls", &certs, DURABLE)
        .expect("PostgreSQL");
    let tls_url = format!(
        "postgres://flakeid@127.0.0.1:{}/postgres?password-file={}&sslmode=verify-full&sslrootcert={}&sslcert={}&sslkey={}",
        pg_tls.port,
        pg_tls.password_file.display(),
        certs.ca.display(),
        certs.client_cert.display(),
        certs.client_key.display()
    );
    let stores: Vec<(&str, std::sync::Arc<dyn ClaimStore>)> = [
        ("etcd", etcd.url()),
        ("ZooKeeper", zk.url()),
        ("PostgreSQL", pg.url()),
        ("PostgreSQL, TLS + client certificate + password", tls_url),
    ]
    .into_iter()
    .map(|(name, url)| {
        (
            name,
            flakeid_stores::open(&url, &OpenOptions::default()).unwrap(),
        )
    })
    .collect();
    let request = ClaimRequest {
        namespace: "latency",
        pool: 0..1,
        instance: "latency",
    };
    let mut times = vec![[Vec::new(), Vec::new(), Vec::new()]; stores.len()];
    for round in 0..=rounds as u64 {
        for (i, (_, store)) in stores.iter().enumerate() {
            let t = Instant::now();
            let c = store.claim(&request).unwrap();
            let claim = t.elapsed();
            let t = Instant::now();
            store.renew(&c, c.not_before_unix_ns + 1 + round).unwrap();
            let renewal = t.elapsed();
            let t = Instant::now();
            store.release(&c, c.not_before_unix_ns + 1 + round).unwrap();
            let release = t.elapsed();
            if round > 0 {
                for (k, d) in [claim, renewal, release].into_iter().enumerate() {
                    times[i][k].push(d);
                }
            }
        }
    }
    println!("{rounds} rounds; median / 90th percentile / worst, ms; (median / etcd's median)");
    println!();
    println!("| store | claim | renewal | release |");
    println!("|---|---|---|---|");
    let all: Vec<[[f64; 3]; 3]> = times.into_iter().map(|t| t.map(quantiles)).collect();
    for ((name, _), q) in stores.iter().zip(&all) {
        let cell = |k: usize| {
            let [m, p90, worst] = q[k];
            format!("{m:.2} / {p90:.2} / {worst:.2} ({:.2}x)", m / all[0][k][0])
        };
        println!("| {name} | {} | {} | {} |", cell(0), cell(1), cell(2));
    }
    drop(stores);
    let _ = std::fs::remove_dir_all(dir);
}
