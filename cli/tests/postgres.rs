//! Claims on a real PostgreSQL 15 (feature `postgres`), started here on 127.0.0.1 as a
//! user of the tests' own, with real `flakeid gen` and `flakeid serve` processes: the
//! scenarios of `etcd.rs` (the `flakeid-fleet` harness); replies lost after a commit; the
//! database paused under two holders; and a failover from a primary to its synchronous
//! standby under holders that reach both through one multi-host URL.
//!
//! Without PostgreSQL each test prints why it skips; with `FLAKEID_REQUIRE_SERVERS` set
//! (CI sets it) a missing server fails the test instead.
#![cfg(feature = "postgres")]

use std::time::Duration;

use flakeid::claim::{NodeState, OpenOptions};
use flakeid_fleet::lost_replies;
use flakeid_fleet::postgres::Postgres;
use flakeid_fleet::procs::{self, spawn};
use flakeid_fleet::scenarios;
use flakeid_fleet::scenarios::{self as fleet, Server, gen_args};

scenarios!(Postgres::start, "postgres");

/// `gen`'s arguments for a holder of the one id of a pool, `n` IDs at 300 a second, with
/// a window of 1 s and a lease of 3 s, waiting up to 30 s for the id and for its clock.
fn one_id<'a>(n: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--nodes",
        "0..1",
        "--window",
        "1s",
        "--ttl",
        "3s",
        "--max-wait",
        "30s",
        "--pool-wait",
        "30s",
        "-n",
        n,
        "--rate",
        "300",
    ];
    args.extend_from_slice(extra);
    args
}

/// A claim whose reply was lost (the connection reset right after PostgreSQL committed
/// the row) is found by its token on the next attempt: the claim takes the id it made,
/// rather than a second one while the first stays held by nobody.
#[test]
fn a_lost_reply_to_a_claim_takes_the_claim_it_made() {
    let _one = fleet::one_at_a_time();
    let Some(pg) = Postgres::start("lost-claim-reply") else {
        return;
    };
    lost_replies::a_lost_reply_to_a_claim_takes_the_claim_it_made(
        flakeid_stores::open,
        &pg.url(),
        pg.port,
        b"INSERT INTO flakeid.nodes",
    );
}

/// A renewal whose reply was lost is not a lost claim: the next renewal matches the
/// claim's token, stores the larger reservation and goes on.
#[test]
fn a_lost_reply_to_a_renewal_does_not_lose_the_claim() {
    let _one = fleet::one_at_a_time();
    let Some(pg) = Postgres::start("lost-reply") else {
        return;
    };
    lost_replies::a_lost_reply_to_a_renewal_does_not_lose_the_claim(
        flakeid_stores::open,
        &pg.url(),
        pg.port,
        b"GREATEST",
    );
}

/// The database paused (`SIGSTOP`) past the holders' window and lease, then continued:
/// two holders mint nothing past their fences while it sleeps, and go on after; no ID
/// twice, each holder's IDs in order.
#[test]
fn the_database_paused_under_two_holders_costs_no_duplicate() {
    let _one = fleet::one_at_a_time();
    let Some(pg) = Postgres::start("paused") else {
        return;
    };
    let url = pg.url();
    let holders = procs::holders(
        &url,
        "paused",
        &[
            "--window",
            "1s",
            "--ttl",
            "4s",
            "--max-wait",
            "30s",
            "-n",
            "2000",
            "--rate",
            "300",
        ],
        2,
    );
    for h in &holders {
        h.wait_for_ids(100);
    }
    let now_ns = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    };
    pg.signal_all("STOP");
    // From here no process of the database runs: a reservation it stored was stored
    // before this instant.
    let stopped_at = now_ns();
    // The fault's length (past the window and the lease), not an order between processes.
    std::thread::sleep(Duration::from_secs(6));
    let continued_at = now_ns();
    pg.signal_all("CONT");
    let layout = flakeid::Layout::snowflake();
    // Nothing is minted past the reservations stored before the pause (at most a window
    // ahead of it) until the database answers again.
    let fence = stopped_at + 1_000_000_000;
    let mut all = Vec::new();
    for h in holders {
        let (status, ids) = h.finish(Duration::from_secs(60));
        assert!(status.success(), "a holder did not finish after the pause");
        assert_eq!(ids.len(), 2000);
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        let past_fence = ids
            .iter()
            .map(|&id| {
                layout
                    .unix_ns_of(layout.decompose(id).unwrap().ticks)
                    .unwrap() as u64
            })
            .filter(|&t| t >= fence && t < continued_at)
            .count();
        assert_eq!(
            past_fence, 0,
            "IDs minted past the fence while the database slept"
        );
        all.extend(ids);
    }
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), count, "a duplicate ID");
}

/// A primary whose standby streams to it synchronously (`None`: no PostgreSQL here), and
/// the multi-host URL that lists the primary first, then the standby.
fn synchronous_pair(name: &str) -> Option<(Postgres, Postgres, String)> {
    let primary = Postgres::start_with(name, "synchronous_standby_names = 'standby'")?;
    let standby = primary.standby(name);
    primary.wait_for_standbys("standby=sync");
    let url = format!(
        "postgres://flakeid@127.0.0.1:{},127.0.0.1:{}/postgres?password-file={}&sslmode=disable&target_session_attrs=read-write",
        primary.port,
        standby.port,
        primary.password_file.display()
    );
    Some((primary, standby, url))
}

/// A primary with a synchronous standby; two holders reach them through one multi-host
/// URL. The primary is killed and the standby promoted: the holders stop at their fences,
/// reconnect to the new primary and go on, their claims intact (every reservation they
/// minted below was on the standby before it was acknowledged). A third holder started
/// after takes the next id. No ID twice; per node id every earlier holder's IDs below
/// every later one's.
#[test]
fn a_failover_to_the_synchronous_standby_costs_no_duplicate() {
    let _one = fleet::one_at_a_time();
    let Some((mut primary, standby, url)) = synchronous_pair("failover") else {
        return;
    };
    let args = [
        "--nodes",
        "0..3",
        "--window",
        "1s",
        "--ttl",
        "6s",
        "--max-wait",
        "60s",
        "-n",
        "3000",
        "--rate",
        "200",
    ];
    let holders = procs::holders(&url, "failover", &args, 2);
    for h in &holders {
        h.wait_for_ids(100);
    }
    primary.stop();
    standby.promote();
    let third = spawn(&gen_args(&url, "failover", &args));
    let mut by_node: std::collections::BTreeMap<u64, Vec<Vec<u64>>> = Default::default();
    let mut all = Vec::new();
    for h in holders.into_iter().chain([third]) {
        let (status, ids) = h.finish(Duration::from_secs(90));
        assert!(status.success(), "a holder failed over badly");
        assert_eq!(ids.len(), 3000);
        let node = flakeid::Layout::snowflake().decompose(ids[0]).unwrap().node;
        all.extend(ids.iter().copied());
        by_node.entry(node).or_default().push(ids);
    }
    assert_eq!(
        by_node.len(),
        3,
        "the holders shared a node id: {:?}",
        by_node.keys()
    );
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), count, "a duplicate ID across the failover");
    let listed = flakeid_stores::open(&url, &OpenOptions::default())
        .unwrap()
        .list("failover")
        .unwrap();
    assert!(
        listed.iter().all(|i| i.state == NodeState::Released),
        "{listed:?}"
    );
}

/// A primary frozen whole (SIGSTOP: its sockets accept, nothing answers) and listed
/// first in the URL, its synchronous standby promoted: the holders reach the promoted
/// one past the frozen host, which stays frozen until they are done, and finish; no ID
/// twice. Their longest pause is printed. Then the old primary is continued beside the
/// promoted one (split brain): a new connect finds two hosts that take writes and is
/// refused, naming both.
#[test]
fn a_frozen_first_host_does_not_hold_up_the_failover() {
    let _one = fleet::one_at_a_time();
    let Some((primary, standby, url)) = synchronous_pair("frozen") else {
        return;
    };
    let args = [
        "--nodes",
        "0..2",
        "--window",
        "1s",
        "--ttl",
        "6s",
        "--max-wait",
        "60s",
        "-n",
        "3000",
        "--rate",
        "200",
    ];
    let holders = procs::holders(&url, "frozen", &args, 2);
    for h in &holders {
        h.wait_for_ids(100);
    }
    primary.signal_all("STOP");
    let promoting = std::time::Instant::now();
    standby.promote();
    let promote_took = promoting.elapsed();
    let mut all = Vec::new();
    for h in holders {
        let (status, ids) = h.finish(Duration::from_secs(90));
        assert!(status.success(), "a holder failed over badly");
        assert_eq!(ids.len(), 3000);
        let layout = flakeid::Layout::snowflake();
        let ms: Vec<u64> = ids
            .iter()
            .map(|&id| layout.decompose(id).unwrap().ticks)
            .collect();
        let pause = ms.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        eprintln!(
            "a holder's longest pause: {pause} ms (the promotion took {} ms; window 1 s)",
            promote_took.as_millis()
        );
        all.extend(ids);
    }
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), count, "a duplicate ID across the failover");
    primary.signal_all("CONT");
    assert!(
        flakeid_fleet::service::until(Duration::from_secs(30), || primary.answers()),
        "the old primary never answered again"
    );
    let err = flakeid_stores::open(&url, &OpenOptions::default()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("two hosts of the URL take writes")
            && text.contains(&format!("127.0.0.1:{}", primary.port))
            && text.contains(&format!("127.0.0.1:{}", standby.port)),
        "{text}"
    );
}

/// A holder cut off from the database (a partition: its bytes held in the proxy, nothing
/// closed) past its lease: it stops at its fence; a second holder, not cut off, takes the
/// id once the server's clock ends the first one's lease, and mints; then the partition
/// heals, the first holder's held-up renewals land late and change nothing, and it exits
/// with "claim lost". No ID twice; every ID of the second after every ID of the first.
#[test]
fn a_partitioned_holder_stops_at_its_fence_and_its_late_writes_change_nothing() {
    let _one = fleet::one_at_a_time();
    let Some(pg) = Postgres::start("partition") else {
        return;
    };
    let proxy = flakeid_fleet::proxy::Proxy::start(pg.port);
    let direct = pg.url();
    let cut = direct.replacen(&format!(":{}", pg.port), &format!(":{}", proxy.port), 1);
    let args = |instance, n| one_id(n, &["--instance", instance]);
    let a = spawn(&gen_args(&cut, "partition", &args("A", "1000000")));
    assert_eq!(a.claimed_node(), 0);
    a.wait_for_ids(100);
    proxy.set_blackholed(true);
    let b = spawn(&gen_args(&direct, "partition", &args("B", "600")));
    assert_eq!(b.claimed_node(), 0, "B never took the id");
    let (status_b, ids_b) = b.finish(Duration::from_secs(60));
    assert!(status_b.success());
    proxy.set_blackholed(false);
    let lost = a.line(Duration::from_secs(30));
    assert!(lost.contains("claim lost"), "{lost}");
    let (status_a, ids_a) = a.finish(Duration::from_secs(30));
    assert_eq!(status_a.code(), Some(2));
    let layout = flakeid::Layout::snowflake();
    let tick = |id: &u64| layout.decompose(*id).unwrap().ticks;
    let last_a = ids_a.iter().map(tick).max().unwrap();
    let first_b = ids_b.iter().map(tick).min().unwrap();
    assert!(
        last_a < first_b,
        "A minted tick {last_a}, B started at {first_b}"
    );
    let listed = flakeid_stores::open(&direct, &OpenOptions::default())
        .unwrap()
        .list("partition")
        .unwrap();
    assert_eq!(listed[0].state, NodeState::Released, "{listed:?}");
    assert!(
        listed[0].reserved_until_unix_ns >= layout.unix_ns_of(first_b).unwrap() as u64,
        "a late write of A lowered B's reservation: {listed:?}"
    );
}

/// Two holders whose clocks are 5 s apart hand one id over, both ways. Leases end on the
/// server's clock: the holder 5 s ahead, waiting, takes the id no sooner than the paused
/// holder's lease ends there (by its own clock the lease would have ended at once); the
/// holder 5 s behind takes it back the same way, and mints only once its clock passes
/// the reservation the other stored. Each paused holder, continued, finds its claim lost
/// and mints nothing more. Every ID of each holder lies above every ID of the one before.
#[test]
fn holders_whose_clocks_are_5s_apart_hand_over_on_the_servers_clock() {
    use std::time::Instant;
    let _one = fleet::one_at_a_time();
    let Some(pg) = Postgres::start("skew") else {
        return;
    };
    let url = pg.url();
    let holder = |clock_offset: Option<&str>, n: &str| {
        let offset: Vec<&str> = clock_offset
            .map(|o| ["--clock-offset", o])
            .into_iter()
            .flatten()
            .collect();
        spawn(&gen_args(&url, "skew", &one_id(n, &offset)))
    };
    // The least a lease runs on after its holder stops: the TTL less one renewal period
    // (a third of the window).
    let least_left = Duration::from_millis(3000 - 334);
    let hand_over = |from: &procs::Gen, to: &procs::Gen| {
        // Taken before the signal: the lease's last renewal came before the stop landed,
        // which is no earlier than this.
        let stopped = Instant::now();
        from.signal("STOP");
        assert_eq!(to.claimed_node(), 0);
        let took = stopped.elapsed();
        assert!(
            took >= least_left,
            "the id changed hands {took:?} after its holder stopped, inside its lease"
        );
    };
    let lost = |paused: procs::Gen| {
        paused.signal("CONT");
        let said = paused.line(Duration::from_secs(30));
        assert!(said.contains("claim lost"), "{said}");
        let (status, ids) = paused.finish(Duration::from_secs(30));
        assert_eq!(status.code(), Some(2));
        ids
    };
    let a = holder(None, "1000000");
    assert_eq!(a.claimed_node(), 0);
    a.wait_for_ids(100);
    let ahead = holder(Some("+5s"), "1000000");
    hand_over(&a, &ahead);
    ahead.wait_for_ids(100);
    let ids_a = lost(a);
    let behind = holder(None, "300");
    hand_over(&ahead, &behind);
    let (status, ids_behind) = behind.finish(Duration::from_secs(60));
    assert!(status.success());
    assert_eq!(ids_behind.len(), 300);
    let ids_ahead = lost(ahead);
    let layout = flakeid::Layout::snowflake();
    let ticks = |ids: &[u64]| {
        let t: Vec<u64> = ids
            .iter()
            .map(|&id| layout.decompose(id).unwrap().ticks)
            .collect();
        (*t.iter().min().unwrap(), *t.iter().max().unwrap())
    };
    let (a, ahead, behind) = (ticks(&ids_a), ticks(&ids_ahead), ticks(&ids_behind));
    assert!(a.1 < ahead.0, "ticks {a:?}, then {ahead:?}");
    assert!(ahead.1 < behind.0, "ticks {ahead:?}, then {behind:?}");
}

/// `flakeid claims --repair` through the tool (`flakeid_fleet::repair`), on a row whose
/// reservation was damaged by hand.
#[test]
fn claims_repair_stores_a_reservation_past_now_instead_of_a_reset() {
    let _one = fleet::one_at_a_time();
    let Some(pg) = Postgres::start("repair") else {
        return;
    };
    flakeid_fleet::repair::claims_repair_stores_a_reservation_past_now(&pg.url(), &|| {
        pg.sql(
            "postgres",
            "UPDATE flakeid.nodes SET reserved = -7 WHERE namespace = 'orders' AND node = 0",
        );
    });
}

/// Secrets hygiene (`flakeid_fleet::hygiene`): the role's password never shows.
#[test]
fn the_postgres_password_shows_nowhere() {
    let _one = fleet::one_at_a_time();
    let Some(pg) = Postgres::start("hygiene") else {
        return;
    };
    let without_password = format!(
        "postgres://flakeid@127.0.0.1:{}/postgres?sslmode=disable",
        pg.port
    );
    flakeid_fleet::hygiene::the_password_shows_nowhere(&flakeid_fleet::hygiene::Secured {
        url: &pg.url(),
        without_password: &without_password,
        password_file: &pg.password_file.display().to_string(),
        password: flakeid_fleet::postgres::PASSWORD,
    });
}
