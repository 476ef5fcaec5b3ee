//! The fleet scenarios, written once over a [`Server`] (etcd, ZooKeeper, PostgreSQL):
//! real `flakeid gen` processes against a real coordinator the test started. Run by
//! `cli/tests/etcd.rs`, `cli/tests/zookeeper.rs` and `cli/tests/postgres.rs`.

use std::collections::HashSet;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::procs::{Gen, spawn, unique};
pub use crate::procs::{
    claims_json, gen_args, holders, holders_keep_minting, stop_and_check_unique,
};
pub use crate::server::{
    Open, Process, Server, available, free_port, lists, one_at_a_time, wait_until_answers,
};

use flakeid::claim::{ClaimError, Claims, OpenOptions};
use flakeid::clock::{ManualClock, SystemClock};
use flakeid::{Clock, Generator, Layout};

fn layout() -> Layout {
    Layout::snowflake()
}

fn ticks(id: u64) -> u64 {
    layout().decompose(id).unwrap().ticks
}

/// Scenario 1: Eight processes race for a pool of eight: eight distinct nodes, every ID unique;
/// a ninth gets the pool-full error.
pub fn eight_processes_race_for_a_pool_of_eight(server: &mut dyn Server, _: Open) {
    let url = server.url();
    let gens: Vec<Gen> = (0..8)
        .map(|_| {
            spawn(&gen_args(
                &url,
                "race",
                &[
                    "--nodes", "0..8", "--window", "2s", "--ttl", "5s", "-n", "1500", "--rate",
                    "300",
                ],
            ))
        })
        .collect();
    let nodes: HashSet<u64> = gens.iter().map(Gen::claimed_node).collect();
    assert_eq!(nodes.len(), 8, "{nodes:?}");
    // The eight mint for 5 s: the ninth's wait for a free id (1 s) ends well before.
    let ninth = spawn(&gen_args(
        &url,
        "race",
        &["--nodes", "0..8", "--pool-wait", "1s", "-n", "1"],
    ));
    let line = ninth.line(Duration::from_secs(20));
    assert!(
        line.contains("pool full") && line.contains("8 held"),
        "{line}"
    );
    let (status, ids) = ninth.finish(Duration::from_secs(10));
    assert_eq!(status.code(), Some(2));
    assert!(ids.is_empty());
    let mut all = Vec::new();
    for g in gens {
        let (status, ids) = g.finish(Duration::from_secs(30));
        assert!(status.success());
        assert_eq!(ids.len(), 1500);
        all.extend(ids);
    }
    assert!(unique(&all), "a duplicate ID across the eight");
}

/// Scenario 2: Pool of one: holder A is stopped (`SIGSTOP`) past its lease; B claims the id and
/// mints; A is continued and mints until its fence at most, then exits non-zero with the
/// claim-lost message. No ID twice, and every tick of B's lies after every tick of A's.
pub fn a_holder_paused_past_its_lease_loses_the_id_and_never_overlaps(
    server: &mut dyn Server,
    _: Open,
) {
    let url = server.url();
    let a = spawn(&gen_args(
        &url,
        "pause",
        &[
            "--nodes",
            "0..1",
            "--window",
            "1s",
            "--ttl",
            "2s",
            "--max-wait",
            "5s",
            "-n",
            "1000000",
            "--rate",
            "200",
            "--instance",
            "A",
        ],
    ));
    assert_eq!(a.claimed_node(), 0);
    a.wait_for_ids(40);
    a.signal("STOP");
    std::thread::sleep(Duration::from_secs(4)); // past the 2 s lease
    let b = spawn(&gen_args(
        &url,
        "pause",
        &[
            "--nodes",
            "0..1",
            "--window",
            "1s",
            "--ttl",
            "2s",
            "-n",
            "200",
            "--rate",
            "1000",
            "--instance",
            "B",
        ],
    ));
    assert_eq!(b.claimed_node(), 0);
    let (status_b, ids_b) = b.finish(Duration::from_secs(20));
    assert!(status_b.success());
    a.signal("CONT");
    let lost = a.line(Duration::from_secs(15));
    assert!(
        lost.contains("claim lost") && lost.contains("node 0"),
        "{lost}"
    );
    let (status_a, ids_a) = a.finish(Duration::from_secs(10));
    assert_eq!(status_a.code(), Some(2));
    let last_a = ids_a.iter().map(|&id| ticks(id)).max().unwrap();
    let first_b = ids_b.iter().map(|&id| ticks(id)).min().unwrap();
    assert!(
        last_a < first_b,
        "A minted tick {last_a}, B started at {first_b}"
    );
    let all: Vec<u64> = ids_a.into_iter().chain(ids_b).collect();
    assert!(unique(&all));
}

/// Scenario 3: `kill -9` the holder and start another at once: it waits for the lease to run out
/// (bounded), and all its IDs are greater than every ID the killed one printed, which ran
/// on a clock 5 s ahead (more than the lease: only the stored reservation keeps the next
/// holder above).
pub fn a_killed_holder_is_followed_by_ids_above_all_of_its_own(server: &mut dyn Server, _: Open) {
    let url = server.url();
    let a = spawn(&gen_args(
        &url,
        "kill",
        &[
            "--nodes",
            "0..1",
            "--window",
            "1s",
            "--ttl",
            "2s",
            "-n",
            "1000000",
            "--rate",
            "300",
            "--clock-offset",
            "+5s",
        ],
    ));
    assert_eq!(a.claimed_node(), 0);
    a.wait_for_ids(30);
    let killed = a.kill();
    let started = Instant::now();
    let b = spawn(&gen_args(
        &url,
        "kill",
        &[
            "--nodes",
            "0..1",
            "--window",
            "1s",
            "--ttl",
            "2s",
            "--pool-wait",
            "10s",
            "--max-wait",
            "10s",
            "-n",
            "50",
        ],
    ));
    assert_eq!(b.claimed_node(), 0);
    let (status, ids) = b.finish(Duration::from_secs(30));
    assert!(status.success());
    println!(
        "the next holder waited {:?} for the lease and the reservation",
        started.elapsed()
    );
    let max_killed = *killed.iter().max().unwrap();
    assert!(ids.iter().all(|&id| id > max_killed));
}

/// Scenario 3, with the new holder's clock 10 s behind the old one's (the old one a process
/// on a clock 10 s ahead, killed; the new one a library generator on a manual clock): the
/// claim fails naming the distance; once its clock gets there, its IDs lie above.
pub fn a_new_holder_10s_behind_fails_with_the_distance_then_mints_above(
    server: &mut dyn Server,
    open: Open,
) {
    let url = server.url();
    // A: a process on a clock 10 s ahead, killed without a release.
    let a = spawn(&gen_args(
        &url,
        "behind",
        &[
            "--nodes",
            "0..1",
            "--window",
            "1s",
            "--ttl",
            "2s",
            "-n",
            "1000000",
            "--rate",
            "200",
            "--clock-offset",
            "+10s",
        ],
    ));
    assert_eq!(a.claimed_node(), 0);
    a.wait_for_ids(20);
    let ids_a = a.kill();
    let options = OpenOptions::default().ttl(Duration::from_secs(1));
    let store = open(&url, &options).unwrap();
    let reserved = store.list("behind").unwrap()[0].reserved_until_unix_ns;
    let claims = || {
        Claims::new(store.clone())
            .namespace("behind")
            .nodes(0..1)
            .window(Duration::from_secs(2))
            // Covers the killed holder's lease (2 s).
            .pool_wait(Duration::from_secs(5))
            .manual_renewal()
    };
    // B: the true clock, 10 s behind A's reservation, and a wait bound of 1 s.
    let clock_b = ManualClock::new(SystemClock.unix_ns());
    match Generator::builder(layout())
        .clock(clock_b.clone())
        .max_wait(Duration::from_secs(1))
        .build_claimed(claims())
    {
        Err(ClaimError::ClockBehind {
            node: 0, behind, ..
        }) => {
            assert!(behind >= Duration::from_secs(9), "{behind:?}");
        }
        other => panic!("expected ClockBehind, got {other:?}"),
    }
    clock_b.set(reserved);
    let b = Generator::builder(layout())
        .clock(clock_b)
        .build_claimed(claims())
        .unwrap();
    let first_b = b.next_id().unwrap().get();
    assert!(first_b > *ids_a.iter().max().unwrap());
}

/// Scenario 4: The store is stopped mid-run: minting goes on to the end of the window, then
/// stops (fails closed: nothing is minted past it); the store comes back, the renewal
/// resumes and minting continues. No duplicate over the whole run.
pub fn the_store_stops_and_comes_back_under_a_running_holder(server: &mut dyn Server, _: Open) {
    let url = server.url();
    let g = spawn(&gen_args(
        &url,
        "outage",
        &[
            "--window",
            "1s",
            "--ttl",
            "15s",
            "--max-wait",
            "30s",
            "-n",
            "1500",
            "--rate",
            "300",
        ],
    ));
    g.claimed_node();
    g.wait_for_ids(100);
    server.stop();
    let stopped_at = SystemClock.unix_ns();
    std::thread::sleep(Duration::from_secs(3));
    let before_restart = g.ids_now().len();
    // Taken before the relaunch: from here on a renewal can land (possibly before
    // `launch` returns, which waits for its own probe), so this is where the outage ends.
    let relaunched_at = SystemClock.unix_ns();
    server.launch();
    let (status, ids) = g.finish(Duration::from_secs(40));
    assert!(
        status.success(),
        "the holder did not finish after the store came back"
    );
    assert_eq!(ids.len(), 1500);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert!(
        before_restart < 1500,
        "minting never stopped for the outage"
    );
    // Nothing was minted past the window the store had accepted before it went away.
    let fence = stopped_at + 1_000_000_000;
    let during: Vec<u64> = ids
        .iter()
        .map(|&id| layout().unix_ns_of(ticks(id)).unwrap() as u64)
        .filter(|&t| t >= fence && t < relaunched_at)
        .collect();
    assert!(
        during.is_empty(),
        "{} IDs minted past the fence during the outage",
        during.len()
    );
}

/// Scenario 5: Two namespaces do not see each other's claims, and `flakeid claims` shows the
/// holders, states and reservations the processes report.
pub fn namespaces_are_apart_and_claims_lists_the_holders(server: &mut dyn Server, _: Open) {
    let url = server.url();
    let one = spawn(&gen_args(
        &url,
        "one",
        &[
            "--nodes",
            "0..2",
            "--instance",
            "in-one",
            "-n",
            "100000",
            "--rate",
            "50",
        ],
    ));
    let two = spawn(&gen_args(
        &url,
        "two",
        &[
            "--nodes",
            "0..2",
            "--instance",
            "in-two",
            "-n",
            "100000",
            "--rate",
            "50",
        ],
    ));
    assert_eq!((one.claimed_node(), two.claimed_node()), (0, 0));
    for (ns, holder) in [("one", "in-one"), ("two", "in-two")] {
        let rows = claims_json(&url, &["--namespace", ns]);
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0]["node"], 0);
        assert_eq!(rows[0]["state"], "held");
        assert_eq!(rows[0]["holder"], holder);
        assert!(rows[0]["reserved_until_unix_ns"].as_u64().unwrap() > SystemClock.unix_ns());
    }
    // Without --namespace: every namespace, with its layout and held ids.
    let namespaces = claims_json(&url, &[]);
    for ns in ["one", "two"] {
        let row = namespaces
            .iter()
            .find(|r| r["namespace"] == ns)
            .unwrap_or_else(|| panic!("{ns} not listed: {namespaces:?}"));
        assert_eq!(row["layout_name"], "snowflake", "{row}");
        assert_eq!(row["held"], serde_json::json!([0]), "{row}");
    }
    let out = Command::new(crate::binary())
        .args(["claims", "--claim", &url])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("namespace \"one\": layout snowflake (time=41,seq=12,node=10,")
            && table.contains("namespace \"two\": layout snowflake"),
        "{table}"
    );
    // One namespace is one ID space: a generator of another layout is refused, naming both.
    let out = Command::new(crate::binary())
        .args(gen_args(&url, "one", &["--layout", "sonyflake", "-n", "1"]))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr.contains("--layout")
            && stderr.contains("holds IDs of layout snowflake")
            && stderr.contains("this claim's layout is sonyflake"),
        "{stderr}"
    );
    drop((one, two));
}

/// Claims id 0 of namespace `slow` on `store` as `instance`, then renews the claim to a
/// second past now: a store that opened works end to end (the slow-link tests of etcd and
/// PostgreSQL, once their connect is through).
pub fn claims_and_renews<S: flakeid::claim::ClaimStore + ?Sized>(store: &S, instance: &str) {
    let claimed = store
        .claim(&flakeid::claim::store::ClaimRequest {
            namespace: "slow",
            pool: 0..1,
            instance,
        })
        .unwrap();
    let now = SystemClock.unix_ns();
    store
        .renew(
            &claimed,
            claimed.not_before_unix_ns.max(now) + 1_000_000_000,
        )
        .unwrap();
}

/// An unreachable store at start is a clear error naming the URL, within the bound.
pub fn an_unreachable_store_is_a_clear_error_within_the_bound(scheme: &str) {
    let port = free_port(); // nothing listens there
    let url = format!("{scheme}://127.0.0.1:{port}");
    let started = Instant::now();
    let out = Command::new(crate::binary())
        .args(["gen", "--claim", &url, "-n", "1"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&url) && stderr.contains("cannot be reached"),
        "{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "took {:?}",
        started.elapsed()
    );
}

/// The store goes away for longer than `--max-wait`: `gen` writes out what it minted and
/// stops with a message that says what happened (not that minting resumes by itself).
pub fn when_the_window_runs_out_gen_says_what_happened_and_stops(server: &mut dyn Server, _: Open) {
    let url = server.url();
    let g = spawn(&gen_args(
        &url,
        "window",
        &[
            "--window",
            "1s",
            "--ttl",
            "15s",
            "--max-wait",
            "1s",
            "-n",
            "100000",
            "--rate",
            "200",
        ],
    ));
    g.claimed_node();
    g.wait_for_ids(50);
    server.stop();
    let message = g.line(Duration::from_secs(20));
    assert!(
        message.contains("reserved window ran out")
            && message.contains("--max-wait")
            && !message.contains("resumes by itself"),
        "{message}"
    );
    let (status, ids) = g.finish(Duration::from_secs(10));
    assert_eq!(status.code(), Some(2));
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
}
