//! The service's fleet scenarios on a real coordinator (`etcd.rs`, `zookeeper.rs` run
//! them): readiness that follows the store, and three `flakeid serve` processes under
//! `kill -9`, SIGSTOP/SIGCONT past the lease, SIGTERM and restarts while clients keep
//! asking. Every wait is bounded.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flakeid::Layout;

use crate::scenarios::Server;
use crate::service::{Served, client, serve};

const START: Duration = Duration::from_secs(60);

fn get(c: &reqwest::blocking::Client, url: &str) -> Option<(u16, reqwest::blocking::Response)> {
    let r = c.get(url).send().ok()?;
    Some((r.status().as_u16(), r))
}

/// The store stops under a running server: `/readyz` turns 503 while IDs can still be
/// minted (before the fence), then the mint routes answer 503 with `Retry-After` (never an
/// ID past the fence); when the store comes back both recover.
pub fn readiness_follows_the_store(server: &mut dyn Server) {
    let url = server.url();
    let s = serve(
        &[
            "--claim",
            &url,
            "--namespace",
            "ready",
            "--nodes",
            "0..4",
            "--shards",
            "1",
            "--window",
            "3s",
            "--ttl",
            "20s",
        ],
        START,
    );
    let c = client();
    assert_eq!(get(&c, &s.url("/readyz")).unwrap().0, 200);
    assert_eq!(get(&c, &s.url("/v1/id")).unwrap().0, 200);
    server.stop();
    let stopped = Instant::now();
    // Not ready, with the fence still ahead: an ID right after is still minted.
    assert!(
        until(Duration::from_secs(10), || get(&c, &s.url("/readyz"))
            .unwrap()
            .0
            == 503),
        "/readyz stayed 200 with the store down"
    );
    let (status, _) = get(&c, &s.url("/v1/id")).unwrap();
    assert_eq!(status, 200, "not ready only once the fence was reached");
    let (_, ready) = get(&c, &s.url("/readyz")).unwrap();
    let why = ready.text().unwrap();
    assert!(why.contains("renewals are late"), "{why}");
    // Then the fence: 503 with Retry-After.
    let mut refused = None;
    assert!(
        until(Duration::from_secs(10), || {
            let (status, r) = get(&c, &s.url("/v1/id")).unwrap();
            if status == 503 {
                refused = Some(r);
                true
            } else {
                false
            }
        }),
        "IDs kept coming {:?} after the store stopped (window 3 s)",
        stopped.elapsed()
    );
    let r = refused.unwrap();
    assert!(r.headers().contains_key("retry-after"));
    let body = r.text().unwrap();
    assert!(body.contains("error"), "{body}");
    assert_eq!(
        get(&c, &s.url("/healthz")).unwrap().0,
        200,
        "alive all along"
    );
    server.launch();
    assert!(
        until(Duration::from_secs(40), || get(&c, &s.url("/readyz"))
            .unwrap()
            .0
            == 200),
        "/readyz did not recover after the store came back"
    );
    assert_eq!(get(&c, &s.url("/v1/id")).unwrap().0, 200);
}

/// The JSON log lines of a server, parsed.
fn events(lines: &[String]) -> Vec<serde_json::Value> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .collect()
}

fn has(events: &[serde_json::Value], level: &str, message: &str) -> bool {
    events
        .iter()
        .any(|e| e["level"] == level && e["message"].as_str().is_some_and(|m| m == message))
}

/// The store stops for three times the lease TTL while a server runs (JSON logs), then
/// comes back. The same process recovers without a restart: its renewal recovers if the
/// store kept the lease, or, when the store ended it (ZooKeeper's session expires), it
/// claims again in process and serves. Its logs say each step (a renewal failed, not
/// ready, then recovered or lost and re-claimed, ready); every ID after the outage lies
/// above every ID before it on the same node, and none is handed out twice.
pub fn a_server_recovers_from_an_outage_past_its_lease_in_process(server: &mut dyn Server) {
    let url = server.url();
    let ttl = 4;
    let mut s = serve(
        &[
            "--claim",
            &url,
            "--namespace",
            "outage",
            "--nodes",
            "0..4",
            "--shards",
            "1",
            "--window",
            "3s",
            "--ttl",
            &format!("{ttl}s"),
            "--log-format",
            "json",
        ],
        START,
    );
    let pid = s.pid();
    let c = client();
    let mint = |c: &reqwest::blocking::Client, s: &Served| {
        let r = c.get(s.url("/v1/ids?count=100")).send().ok()?;
        if r.status() != 200 {
            return None;
        }
        Some(crate::service::ids_of_json(&r.text().ok()?))
    };
    let before = mint(&c, &s).expect("IDs before the outage");
    server.stop();
    let stopped = Instant::now();
    assert!(
        until(Duration::from_secs(20), || get(&c, &s.url("/readyz"))
            .is_some_and(|r| r.0 == 503)),
        "still ready with the store down"
    );
    std::thread::sleep(Duration::from_secs(3 * ttl).saturating_sub(stopped.elapsed()));
    server.launch();
    assert!(
        until(Duration::from_secs(90), || get(&c, &s.url("/readyz"))
            .is_some_and(|r| r.0 == 200)),
        "not ready again after the store came back"
    );
    let after = mint(&c, &s).expect("IDs after the outage");
    assert!(!s.exited() && s.pid() == pid, "the server was restarted");
    s.signal("TERM");
    let (status, rest) = s.wait(Duration::from_secs(30));
    assert!(status.success(), "{rest:?}");
    let lines: Vec<String> = s.before.iter().chain(&rest).cloned().collect();
    let log = events(&lines);
    assert!(has(&log, "WARN", "claim renewal failed"), "{lines:#?}");
    assert!(has(&log, "WARN", "not ready"), "{lines:#?}");
    let recovered = has(&log, "INFO", "claim renewal recovered");
    let reclaimed = has(
        &log,
        "INFO",
        "re-claimed node ids after a lost claim; serving again",
    );
    eprintln!("{url}: recovered {recovered}, re-claimed {reclaimed}");
    assert!(recovered || reclaimed, "{lines:#?}");
    if reclaimed {
        assert!(has(&log, "ERROR", "claim lost"), "{lines:#?}");
    }
    let layout = Layout::snowflake();
    let all: HashSet<u64> = before.iter().chain(&after).copied().collect();
    assert_eq!(all.len(), before.len() + after.len(), "an ID twice");
    for a in &after {
        let node = layout.decompose(*a).unwrap().node;
        for b in before
            .iter()
            .filter(|b| layout.decompose(**b).unwrap().node == node)
        {
            assert!(
                a > b,
                "node {node}: {a} after the outage is below {b} before it"
            );
        }
    }
}

/// Polls `f` every 50 ms until it is true; false after `bound`.
fn until(bound: Duration, f: impl FnMut() -> bool) -> bool {
    crate::service::until(bound, f)
}

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
pub fn three_servers_under_kill_pause_and_restart(server: &mut dyn Server) {
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

/// The next line of `s`'s standard error that contains `pattern` (the lines before it
/// kept in `seen`), within `bound`.
fn line_with(s: &Served, pattern: &str, bound: Duration, seen: &mut Vec<String>) -> bool {
    let deadline = Instant::now() + bound;
    while let Ok(line) = s
        .stderr
        .recv_timeout(deadline.saturating_duration_since(Instant::now()))
    {
        let found = line.contains(pattern);
        seen.push(line);
        if found {
            return true;
        }
    }
    false
}

/// A lost claim never reaches a later one of the same server: a server of two shards
/// loses one claim (its `nodes/N` taken away by hand) while a gRPC `Stream` holds its old
/// shards; it claims again in process (the same session, the same instance name) and gets
/// that id back. When the stream ends the old shards are released: the lost claim's
/// release is refused and changes nothing, so the later claim stays held by the server
/// and its reservation is never lowered (a release that reached it would delete its
/// claim key and write the old, lower reservation, and a waiting holder would mint what
/// the server still mints).
pub fn a_lost_claims_release_never_reaches_the_re_claim(server: &mut dyn Server) {
    use flakeid::claim::NodeState;
    use flakeid_serve::grpc::v1::StreamRequest;
    use flakeid_serve::grpc::v1::id_service_client::IdServiceClient;

    let url = server.url();
    let ns = "again";
    let s = serve(
        &[
            "--claim",
            &url,
            "--namespace",
            ns,
            "--nodes",
            "0..3",
            "--shards",
            "2",
            "--window",
            "2s",
            "--ttl",
            "4s",
            "--grpc-listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
        ],
        START,
    );
    let store = crate::scenarios::open(&url).unwrap();
    let held = |node: u64| {
        store
            .list(ns)
            .unwrap()
            .into_iter()
            .find(|i| i.node == node)
            .unwrap_or_else(|| panic!("node {node} is not listed"))
    };
    assert_eq!(held(1).state, NodeState::Held);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let grpc = s.grpc.clone().expect("a gRPC listener");
    // A stream that is read once, then not at all: it holds the old shards.
    let layout = Layout::snowflake();
    let (grpc_client, stream, home) = rt.block_on(async {
        let mut c = IdServiceClient::connect(grpc).await.unwrap();
        let mut stream = c
            .stream(StreamRequest {
                count: 100_000_000,
                batch: 10_000,
            })
            .await
            .unwrap()
            .into_inner();
        let first = stream.message().await.unwrap().expect("a first message");
        let home = layout.decompose(first.ids[0]).unwrap().node;
        (c, stream, home)
    });
    // The stream stalls (the client does not read): its task waits to send, minting
    // nothing, and holds the old shards. Seen as the minted count standing still.
    let c = client();
    let minted_total = || {
        let (_, r) = get(&c, &s.url("/metrics")).unwrap();
        crate::service::metric(&r.text().unwrap(), "flakeid_ids_minted_total").unwrap_or(0.0)
    };
    let (mut last, mut still) = (minted_total(), 0);
    assert!(
        until(Duration::from_secs(20), || {
            let now = minted_total();
            still = if std::mem::replace(&mut last, now) == now {
                still + 1
            } else {
                0
            };
            still >= 10
        }),
        "the stream did not stall"
    );
    // The claim taken away is the other shard's: the stream goes on minting on its own
    // (a stream on the lost shard fails and lets go of the old shards at once).
    let lost = 1 - home;
    eprintln!("the stream mints on node {home}; node {lost}'s claim is taken away");
    server.take_claim_away(ns, lost);
    let mut seen = Vec::new();
    assert!(
        line_with(
            &s,
            "re-claimed node ids after a lost claim; serving again",
            Duration::from_secs(60),
            &mut seen,
        ),
        "no re-claim after node {lost}'s claim was taken away: {seen:#?}"
    );
    // The later claims: the lost id again (free since the loss) and node 2 (the other is
    // still the stream's).
    let later = held(lost);
    assert_eq!(later.state, NodeState::Held, "{later:?}");
    assert_eq!(held(2).state, NodeState::Held, "{:?}", store.list(ns));
    let (status, minted) = get(&c, &s.url("/v1/ids?count=100")).unwrap();
    assert_eq!(status, 200);
    let minted = crate::service::ids_of_json(&minted.text().unwrap());
    // The stream ends: the old shards go, and their claims are released.
    drop((grpc_client, stream));
    drop(rt);
    assert!(
        until(Duration::from_secs(30), || held(home).state
            != NodeState::Held),
        "node {home} was not released when the stream ended: {:?}",
        held(home)
    );
    for node in [lost, 2] {
        let now = held(node);
        assert_eq!(
            now.state,
            NodeState::Held,
            "the old shards' release took node {node} from the later claim: {now:?}"
        );
    }
    let now = held(lost);
    assert!(
        now.reserved_until_unix_ns >= later.reserved_until_unix_ns,
        "the lost claim's release lowered node {lost}'s reservation: {later:?} then {now:?}"
    );
    // The server still mints on the later claims, above what it minted before, and
    // nobody else can take their ids.
    let (status, after) = get(&c, &s.url("/v1/ids?count=100")).unwrap();
    assert_eq!(status, 200);
    let after = crate::service::ids_of_json(&after.text().unwrap());
    assert!(after.iter().all(|a| minted.iter().all(|b| a > b)));
    assert!(after.iter().chain(&minted).all(|id| {
        let node = layout.decompose(*id).unwrap().node;
        node == lost || node == 2
    }));
    for node in [lost, 2] {
        let request = flakeid::claim::store::ClaimRequest {
            namespace: ns,
            pool: node..node + 1,
            instance: "waiting-holder",
        };
        match store.claim(&request) {
            Err(flakeid::claim::ClaimError::PoolFull { .. }) => {}
            other => panic!("another holder could take node {node}: {other:?}"),
        }
    }
}
