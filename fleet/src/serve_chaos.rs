//! The service's fault campaign in small: three `flakeid serve` on one store, killed,
//! paused past their lease, stopped and started again under client load; no ID twice, and
//! each node id's holders in order.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flakeid::Layout;

use crate::scenarios::Server;
use crate::serve_fleet::START;
use crate::service::{Served, serve};

/// A tiny xorshift: a scenario's choices, seeded from the clock (printed, to replay).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Every 200 answer: the holder that gave it, and its IDs.
type Answers = Vec<(usize, Vec<u64>)>;

/// One server slot of the fleet: the running process (if any) and its serial number (each
/// start is a new holder).
struct Slot {
    served: Option<Served>,
    holder: usize,
}

/// Three servers on one store; clients spread requests over them for `seconds` while one
/// server at a time is killed (`kill -9`), paused past its lease and resumed (it must find
/// its claim lost and exit 3, or, on a store that lets it, take its id again, nobody having
/// taken it), stopped with SIGTERM (exit 0), and started again. Then: no
/// ID was handed out twice, and for each node id every ID of an earlier holder lies below
/// every ID of a later one.
pub fn three_servers_under_kill_pause_and_restart(
    server: &mut dyn Server,
    _: crate::scenarios::Open,
) {
    let seconds: u64 = std::env::var("FLAKEID_CHAOS_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let url = server.url();
    let ttl = 3u64;
    let args = move || {
        vec![
            "--claim".to_string(),
            url.clone(),
            "--namespace".into(),
            "chaos".into(),
            "--nodes".into(),
            "0..3".into(),
            "--shards".into(),
            "1".into(),
            "--window".into(),
            "2s".into(),
            "--ttl".into(),
            format!("{ttl}s"),
            // A paused server ends when its claim is lost, so that each holder is one
            // process (the in-process re-claim has a scenario of its own).
            "--on-claim-lost".into(),
            "exit".into(),
        ]
    };
    let start = |holder: usize| -> Served {
        let a = args();
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        let s = serve(&refs, START);
        eprintln!("holder {holder}: {}", s.http);
        s
    };
    let slots: Arc<Mutex<Vec<Slot>>> = Arc::new(Mutex::new(
        (0..3)
            .map(|h| Slot {
                served: Some(start(h)),
                holder: h,
            })
            .collect(),
    ));
    let mut next_holder = 3;
    // (holder, ids) of every 200 answer.
    let got: Arc<Mutex<Answers>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..2)
        .map(|k| {
            let slots = Arc::clone(&slots);
            let got = Arc::clone(&got);
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let c = reqwest::blocking::Client::builder()
                    .timeout(Duration::from_secs(2))
                    .build()
                    .unwrap();
                let mut turn = k;
                while !done.load(Ordering::Relaxed) {
                    turn += 1;
                    let target = {
                        let slots = slots.lock().unwrap();
                        let slot = &slots[turn % slots.len()];
                        slot.served
                            .as_ref()
                            .map(|s| (slot.holder, s.url("/v1/ids?count=50")))
                    };
                    let Some((holder, url)) = target else {
                        continue;
                    };
                    if let Ok(r) = c.get(&url).send()
                        && r.status() == 200
                        && let Ok(text) = r.text()
                    {
                        got.lock()
                            .unwrap()
                            .push((holder, crate::service::ids_of_json(&text)));
                    }
                }
            })
        })
        .collect();

    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("chaos seed {seed}");
    let mut rng = Rng(seed);
    let (mut kills, mut pauses, mut terms, mut resumes) = (0, 0, 0, 0);
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(Duration::from_millis(500 + rng.below(1500)));
        let i = rng.below(3) as usize;
        let action = rng.below(3);
        let mut old = slots.lock().unwrap()[i].served.take().unwrap();
        match action {
            0 => {
                old.signal("KILL");
                let _ = old.wait(Duration::from_secs(10));
                kills += 1;
            }
            1 => {
                old.signal("STOP");
                std::thread::sleep(Duration::from_secs(ttl + 3));
                old.signal("CONT");
                pauses += 1;
                // Its lease is gone; nobody could take its id (the pool is full): it
                // either ends (exit 3, claim lost: ZooKeeper's session expired), or takes
                // the id again, nobody having written its reservation since (etcd), and
                // serves on.
                let deadline = Instant::now() + Duration::from_secs(20);
                let ready = crate::service::client();
                let resumed = loop {
                    if old.exited() {
                        break false;
                    }
                    let up = ready
                        .get(old.url("/readyz"))
                        .send()
                        .is_ok_and(|r| r.status() == 200);
                    if up {
                        break true;
                    }
                    assert!(
                        Instant::now() < deadline,
                        "a paused server neither ended nor came back"
                    );
                    std::thread::sleep(Duration::from_millis(50));
                };
                if resumed {
                    resumes += 1;
                    slots.lock().unwrap()[i].served = Some(old);
                    continue;
                }
                let (status, lines) = old.wait(Duration::from_secs(20));
                assert_eq!(
                    status.code(),
                    Some(3),
                    "a server paused past its lease did not exit 3: {lines:?}"
                );
            }
            _ => {
                old.signal("TERM");
                let (status, lines) = old.wait(Duration::from_secs(20));
                assert_eq!(status.code(), Some(0), "SIGTERM: {lines:?}");
                terms += 1;
            }
        }
        let fresh = start(next_holder);
        let mut slots = slots.lock().unwrap();
        slots[i] = Slot {
            served: Some(fresh),
            holder: next_holder,
        };
        next_holder += 1;
    }
    done.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }
    drop(slots);

    let got = got.lock().unwrap();
    let total: usize = got.iter().map(|(_, ids)| ids.len()).sum();
    eprintln!(
        "{seconds} s: {kills} kills, {pauses} pauses ({resumes} came back), {terms} SIGTERMs, {} holders, {total} IDs",
        next_holder
    );
    assert!(total > 10_000, "too few IDs handed out: {total}");
    let mut seen = HashSet::with_capacity(total);
    for (_, ids) in got.iter() {
        for &id in ids {
            assert!(seen.insert(id), "ID {id} was handed out twice");
        }
    }
    // Per node id, holders in the order they first answered: each one's IDs all lie
    // above every ID of the ones before.
    let layout = Layout::snowflake();
    let mut by_node: HashMap<u64, Vec<(usize, u64, u64)>> = HashMap::new();
    let mut ranges: HashMap<(u64, usize), (u64, u64)> = HashMap::new();
    for (holder, ids) in got.iter() {
        for &id in ids {
            let node = layout.decompose(id).unwrap().node;
            let r = ranges.entry((node, *holder)).or_insert((id, id));
            r.0 = r.0.min(id);
            r.1 = r.1.max(id);
        }
    }
    for ((node, holder), (lo, hi)) in ranges {
        by_node.entry(node).or_default().push((holder, lo, hi));
    }
    for (node, mut holders) in by_node {
        holders.sort_by_key(|&(_, lo, _)| lo);
        for w in holders.windows(2) {
            let ((a, _, a_hi), (b, b_lo, _)) = (w[0], w[1]);
            assert!(
                a_hi < b_lo && a < b,
                "node {node}: holder {a}'s IDs reach {a_hi}, holder {b}'s start at {b_lo}: \
                 an earlier holder's IDs must all lie below a later one's"
            );
        }
    }
}
