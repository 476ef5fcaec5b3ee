//! The service's fleet scenarios on a real coordinator (`etcd.rs`, `zookeeper.rs` run
//! them): readiness that follows the store, and three `flakeid serve` processes under
//! `kill -9`, SIGSTOP/SIGCONT past the lease, SIGTERM and restarts while clients keep
//! asking. Every wait is bounded.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use flakeid::Layout;

use crate::scenarios::Server;
use crate::service::{Served, client, serve};

pub(crate) const START: Duration = Duration::from_secs(60);

pub(crate) fn get(
    c: &reqwest::blocking::Client,
    url: &str,
) -> Option<(u16, reqwest::blocking::Response)> {
    let r = c.get(url).send().ok()?;
    Some((r.status().as_u16(), r))
}

/// The store stops under a running server: `/readyz` turns 503 while IDs can still be
/// minted (before the fence), then the mint routes answer 503 with `Retry-After` (never an
/// ID past the fence); when the store comes back both recover.
pub fn readiness_follows_the_store(server: &mut dyn Server, _: crate::scenarios::Open) {
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
pub fn a_server_recovers_from_an_outage_past_its_lease_in_process(
    server: &mut dyn Server,
    _: crate::scenarios::Open,
) {
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

/// Polls `f` every 20 ms until it is true; false after `bound`.
pub(crate) fn until(bound: Duration, f: impl FnMut() -> bool) -> bool {
    crate::service::until(bound, f)
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
pub fn a_lost_claims_release_never_reaches_the_re_claim(
    server: &mut dyn Server,
    open: crate::scenarios::Open,
) {
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
    let store = open(&url, &flakeid::claim::OpenOptions::default()).unwrap();
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
