//! A fault campaign of the tests' own ([`campaign`]): three `flakeid serve` processes (two
//! shards each, the default in-process re-claim) on a three-member coordinator reached
//! through proxies, with HTTP clients and gRPC streams held open, while, at random, one
//! thing at a time: a server is killed (`kill -9`) and started again, or paused (SIGSTOP)
//! and resumed, sometimes past its lease; a member is killed and started again, or
//! partitioned away and healed; a claim's `nodes/N` is deleted by hand; on etcd, a
//! claim's lease is revoked. At the end no ID was handed out twice. `etcd.rs` and
//! `zookeeper.rs` run it (`cargo test -- --ignored campaign`, for
//! `FLAKEID_CAMPAIGN_SECONDS`, 120 by default).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::serve_chaos::Rng;
use crate::service::{Served, serve};

/// A three-member coordinator behind proxies, as the campaign breaks it.
pub trait Ensemble {
    /// The store URL, through the proxies.
    fn url(&self) -> String;
    /// Kills member `i` (`kill -9`).
    fn kill_member(&mut self, i: usize);
    /// Starts member `i` again on its data; returns once it answers.
    fn restart_member(&mut self, i: usize);
    /// Cuts member `i` off from the clients (its proxy holds every byte), or heals it.
    fn set_partitioned(&self, i: usize, cut: bool);
    /// Deletes `nodes/N` of `namespace` by hand, if it exists.
    fn take_claim_away(&self, namespace: &str, node: u64);
    /// Revokes the lease `nodes/N` is bound to, where claims are leases; `false` if the
    /// store has none (the campaign then deletes the node instead).
    fn revoke_lease(&self, namespace: &str, node: u64) -> bool {
        let _ = (namespace, node);
        false
    }
}

/// What the campaign did, for its report.
#[derive(Debug, Default)]
struct Tally {
    server_kills: u32,
    pauses: u32,
    long_pauses: u32,
    member_kills: u32,
    partitions: u32,
    deletions: u32,
    revocations: u32,
}

const NS: &str = "campaign";

/// Runs the campaign on `ensemble` for `FLAKEID_CAMPAIGN_SECONDS` (120 by default) and
/// asserts that no ID was handed out twice; prints what it did and how many IDs it saw.
pub fn campaign(ensemble: &mut dyn Ensemble) {
    use flakeid_serve::grpc::v1::StreamRequest;
    use flakeid_serve::grpc::v1::id_service_client::IdServiceClient;

    let seconds: u64 = std::env::var("FLAKEID_CAMPAIGN_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    let ttl = 4u64;
    let url = ensemble.url();
    let start = {
        let url = url.clone();
        move || -> Served {
            let ttl = format!("{ttl}s");
            serve(
                &[
                    "--claim",
                    &url,
                    "--namespace",
                    NS,
                    "--nodes",
                    "0..8",
                    "--shards",
                    "2",
                    "--window",
                    "2s",
                    "--ttl",
                    &ttl,
                    "--grpc-listen",
                    "127.0.0.1:0",
                ],
                Duration::from_secs(120),
            )
        }
    };
    let slots: Arc<Mutex<Vec<Option<Served>>>> =
        Arc::new(Mutex::new((0..3).map(|_| Some(start())).collect()));
    let got: Arc<Mutex<Vec<u64>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let streams_opened = Arc::new(AtomicUsize::new(0));
    let target = |slots: &Mutex<Vec<Option<Served>>>, turn: usize| {
        let slots = slots.lock().unwrap();
        slots[turn % slots.len()]
            .as_ref()
            .map(|s| (s.url("/v1/ids?count=50"), s.grpc.clone()))
    };
    let mut clients = Vec::new();
    for k in 0..2 {
        let (slots, got, done) = (Arc::clone(&slots), Arc::clone(&got), Arc::clone(&done));
        clients.push(std::thread::spawn(move || {
            let c = reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(2))
                .build()
                .unwrap();
            let mut turn = k;
            while !done.load(Ordering::Relaxed) {
                turn += 1;
                let Some((url, _)) = target(&slots, turn) else {
                    std::thread::yield_now();
                    continue;
                };
                if let Ok(r) = c.get(&url).send()
                    && r.status() == 200
                    && let Ok(text) = r.text()
                {
                    got.lock()
                        .unwrap()
                        .extend(crate::service::ids_of_json(&text));
                }
            }
        }));
    }
    // Streams held open: each reads its messages as they come, up to its count, or until
    // its server goes; every ID read counts.
    for k in 0..3 {
        let (slots, got, done) = (Arc::clone(&slots), Arc::clone(&got), Arc::clone(&done));
        let opened = Arc::clone(&streams_opened);
        clients.push(std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let mut turn = k;
            while !done.load(Ordering::Relaxed) {
                turn += 1;
                let Some((_, Some(grpc))) = target(&slots, turn) else {
                    std::thread::yield_now();
                    continue;
                };
                let done = Arc::clone(&done);
                let read: Vec<u64> = rt.block_on(async {
                    let mut ids = Vec::new();
                    let connect = tokio::time::timeout(
                        Duration::from_secs(2),
                        IdServiceClient::connect(grpc),
                    );
                    let Ok(Ok(mut c)) = connect.await else {
                        return ids;
                    };
                    let request = StreamRequest {
                        count: 20_000,
                        batch: 1 + (turn as u32 % 3) * 49,
                    };
                    let Ok(Ok(stream)) =
                        tokio::time::timeout(Duration::from_secs(2), c.stream(request)).await
                    else {
                        return ids;
                    };
                    opened.fetch_add(1, Ordering::Relaxed);
                    let mut stream = stream.into_inner();
                    while !done.load(Ordering::Relaxed) {
                        match tokio::time::timeout(Duration::from_secs(3), stream.message()).await {
                            Ok(Ok(Some(m))) => ids.extend(m.ids),
                            _ => break,
                        }
                    }
                    ids
                });
                got.lock().unwrap().extend(read);
            }
        }));
    }

    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("campaign seed {seed}, {seconds} s");
    let mut rng = Rng(seed);
    let mut tally = Tally::default();
    let started = Instant::now();
    let nap = |ms: u64| std::thread::sleep(Duration::from_millis(ms));
    while started.elapsed() < Duration::from_secs(seconds) {
        nap(300 + rng.below(1200));
        let i = rng.below(3) as usize;
        match rng.below(6) {
            0 => {
                let old = slots.lock().unwrap()[i].take();
                if let Some(mut old) = old {
                    old.signal("KILL");
                    let _ = old.wait(Duration::from_secs(10));
                }
                tally.server_kills += 1;
                let fresh = start();
                slots.lock().unwrap()[i] = Some(fresh);
            }
            1 => {
                // Paused, sometimes past its lease: it mints nothing past its fence, and
                // on waking either renews or finds its claims lost and claims again.
                let pause = 500 + rng.below((ttl + 2) * 1000);
                let pid = slots.lock().unwrap()[i].as_ref().map(Served::pid);
                if let Some(pid) = pid {
                    signal(pid, "STOP");
                    nap(pause);
                    signal(pid, "CONT");
                    tally.pauses += 1;
                    if pause > ttl * 1000 {
                        tally.long_pauses += 1;
                    }
                }
            }
            2 => {
                ensemble.kill_member(i);
                nap(1000 + rng.below(3000));
                ensemble.restart_member(i);
                tally.member_kills += 1;
            }
            3 => {
                ensemble.set_partitioned(i, true);
                nap(1000 + rng.below(3000));
                ensemble.set_partitioned(i, false);
                tally.partitions += 1;
            }
            4 => {
                ensemble.take_claim_away(NS, rng.below(8));
                tally.deletions += 1;
            }
            _ => {
                let node = rng.below(8);
                if ensemble.revoke_lease(NS, node) {
                    tally.revocations += 1;
                } else {
                    ensemble.take_claim_away(NS, node);
                    tally.deletions += 1;
                }
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }
    for s in slots.lock().unwrap().iter_mut().flatten() {
        s.signal("TERM");
        let _ = s.wait(Duration::from_secs(20));
    }
    let mut got = got.lock().unwrap();
    eprintln!(
        "campaign: {tally:?}, {} gRPC streams opened, {} IDs",
        streams_opened.load(Ordering::Relaxed),
        got.len()
    );
    assert!(got.len() > 10_000, "too few IDs handed out: {}", got.len());
    got.sort_unstable();
    let twice: Vec<u64> = got
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0])
        .collect();
    assert!(
        twice.is_empty(),
        "{} IDs were handed out twice, the first {:?}",
        twice.len(),
        &twice[..twice.len().min(10)]
    );
    eprintln!("campaign: no ID twice among {}", got.len());
}

fn signal(pid: u32, signal: &str) {
    let _ = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status();
}
