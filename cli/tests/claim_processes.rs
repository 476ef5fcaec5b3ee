//! `flakeid gen --claim file:DIR` as real processes: racing for a pool, a full pool,
//! `kill -9` and the next holder, `flakeid claims` against what the processes report.

use flakeid_fleet::procs;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use procs::{Gen, spawn};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flakeid-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn gen_args<'a>(url: &'a str, instance: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "gen",
        "--claim",
        url,
        "--namespace",
        "orders",
        "--nodes",
        "0..4",
        "--window",
        "1s",
        "--instance",
        instance,
    ];
    args.extend_from_slice(extra);
    args
}

fn node_of(id: u64) -> u64 {
    flakeid::Layout::snowflake().decompose(id).unwrap().node
}

fn claims_json(dir: &Path) -> Vec<serde_json::Value> {
    claims_json_in(dir, "orders")
}

fn claims_json_in(dir: &Path, namespace: &str) -> Vec<serde_json::Value> {
    let url = format!("file:{}", dir.display());
    let out = Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args([
            "claims",
            "--claim",
            &url,
            "--namespace",
            namespace,
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Four processes race for a pool of four: four distinct nodes, and `flakeid claims`
/// shows each held by the instance that says it claimed it. A fifth gets the pool-full
/// error. `kill -9` one; a new process takes the freed id, and every ID it mints is
/// greater than every ID the killed one printed. No ID appears twice across all.
#[test]
fn four_processes_a_full_pool_and_a_killed_holder() {
    let dir = temp_dir("claim-procs");
    let url = format!("file:{}", dir.display());
    let names: Vec<String> = (0..4).map(|i| format!("proc-{i}")).collect();
    // The first runs on a clock 2 s ahead: the next holder of its id, on the true clock,
    // stays above its IDs only by starting after the reservation it left.
    let gens: Vec<Gen> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let offset = if i == 0 { "+2s" } else { "+0s" };
            spawn(&gen_args(
                &url,
                name,
                &["-n", "100000", "--rate", "500", "--clock-offset", offset],
            ))
        })
        .collect();
    let nodes: Vec<u64> = gens.iter().map(Gen::claimed_node).collect();
    let distinct: HashSet<_> = nodes.iter().collect();
    assert_eq!(distinct.len(), 4, "nodes {nodes:?}");
    assert!(nodes.iter().all(|&n| n < 4));

    // `flakeid claims` agrees with what each process said.
    let listed = claims_json(&dir);
    assert_eq!(listed.len(), 4, "{listed:?}");
    for (name, node) in names.iter().zip(&nodes) {
        let entry = listed.iter().find(|v| v["node"] == *node).unwrap();
        assert_eq!(entry["state"], "held", "{entry}");
        assert_eq!(entry["holder"], name.as_str(), "{entry}");
        assert!(entry["reserved_until_unix_ns"].as_u64().unwrap() > 0);
    }

    // A fifth finds the pool full, says so, and ends by itself.
    let fifth = spawn(&gen_args(&url, "proc-5", &["-n", "1"]));
    let (status, ids) = fifth.finish(Duration::from_secs(20));
    assert!(!status.success());
    assert!(ids.is_empty());

    for g in &gens {
        g.wait_for_ids(20);
    }
    let mut gens = gens;
    let victim = gens.remove(0);
    let victim_node = nodes[0];
    let killed_ids = victim.kill();
    assert!(killed_ids.len() >= 20);
    assert!(killed_ids.iter().all(|&id| node_of(id) == victim_node));

    // The next process takes the freed id at once, starting after the reservation the
    // killed one left (it waits for the rest of that window).
    let next = spawn(&gen_args(
        &url,
        "proc-next",
        &["-n", "50", "--rate", "1000", "--max-wait", "10s"],
    ));
    assert_eq!(next.claimed_node(), victim_node);
    let (status, next_ids) = next.finish(Duration::from_secs(20));
    assert!(status.success());
    assert_eq!(next_ids.len(), 50);
    let killed_max = *killed_ids.iter().max().unwrap();
    assert!(
        next_ids.iter().all(|&id| id > killed_max),
        "an ID of the next holder is not above {killed_max}"
    );

    let mut all: Vec<u64> = killed_ids.into_iter().chain(next_ids).collect();
    for g in gens {
        all.extend(g.kill());
    }
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "a duplicate ID across processes");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The fifth process's message: it names the pool, the namespace and how many are held.
#[test]
fn a_full_pool_is_a_clear_error() {
    let dir = temp_dir("claim-full");
    let url = format!("file:{}", dir.display());
    let holder = spawn(&[
        "gen", "--claim", &url, "--nodes", "3..4", "-n", "100000", "--rate", "100",
    ]);
    assert_eq!(holder.claimed_node(), 3);
    let out = Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(["gen", "--claim", &url, "--nodes", "3..4"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr.contains("pool full") && stderr.contains("3..4") && stderr.contains("1 held"),
        "{stderr}"
    );
    drop(holder);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A holder whose claim is lost (here: its lock file is removed under it, so its next
/// renewal finds it no longer owns the id) mints to the end of its window, flushes every
/// ID it minted, and exits non-zero naming the node and what happened.
#[test]
fn a_lost_claim_flushes_and_exits_non_zero() {
    let dir = temp_dir("claim-lost");
    let url = format!("file:{}", dir.display());
    let g = spawn(&[
        "gen",
        "--claim",
        &url,
        "--nodes",
        "2..3",
        "--window",
        "300ms",
        "--max-wait",
        "200ms",
        "-n",
        "1000000",
        "--rate",
        "300",
    ]);
    assert_eq!(g.claimed_node(), 2);
    g.wait_for_ids(10);
    std::fs::remove_file(dir.join("default/node-2.lock")).unwrap();
    let removed_at = flakeid::clock::SystemClock.unix_ns_now();
    let line = g.line(Duration::from_secs(10));
    assert!(
        line.contains("claim lost") && line.contains("node 2"),
        "{line}"
    );
    let (status, ids) = g.finish(Duration::from_secs(10));
    assert_eq!(status.code(), Some(2));
    assert!(ids.len() >= 10);
    // Nothing past the reservation in force when the claim was lost: at most a window
    // (and the renewal period before it) after the file went.
    let layout = flakeid::Layout::snowflake();
    let last = layout.decompose(*ids.last().unwrap()).unwrap().ticks;
    let last_ns = layout.unix_ns_of(last).unwrap() as u64;
    assert!(
        last_ns < removed_at + 300_000_000,
        "minted {}ms past the loss",
        (last_ns - removed_at) / 1_000_000
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

trait NowNs {
    fn unix_ns_now(&self) -> u64;
}
impl NowNs for flakeid::clock::SystemClock {
    fn unix_ns_now(&self) -> u64 {
        flakeid::Clock::unix_ns(self)
    }
}

/// Bad claim flags: each is a clear error naming its flag, exit status 2, no ID, and
/// nothing written.
#[test]
fn bad_claim_flags_are_clear_errors_and_write_nothing() {
    let dir = temp_dir("claim-bad");
    let url = format!("file:{}", dir.display());
    let not_a_dir = temp_dir("claim-bad-file");
    std::fs::write(&not_a_dir, "a file").unwrap();
    let under_a_file = format!("file:{}/sub", not_a_dir.display());
    let on_a_file = format!("file:{}", not_a_dir.display());
    let cases: &[(&[&str], &str, &str)] = &[
        (&["--claim", "bogus:x"], "--claim", "unknown scheme"),
        (
            &["--claim", "zookeeper:127.0.0.1:2181"],
            "--claim",
            "zookeeper",
        ),
        (&["--claim", "etcd:127.0.0.1:2379"], "--claim", "etcd"),
        (&["--claim", &on_a_file], "--claim", "not a directory"),
        (
            &["--claim", &under_a_file],
            "--claim",
            "a regular file, not a directory",
        ),
        (
            &["--claim", &url, "--namespace", "a/b"],
            "--namespace",
            "contains '/'",
        ),
        (
            &["--claim", &url, "--nodes", "0..5000"],
            "--nodes",
            "does not fit the layout",
        ),
        (&["--claim", &url, "--nodes", "4..4"], "--nodes", "empty"),
        (
            &["--claim", &url, "--window", "100us"],
            "--window",
            "shorter than the layout's tick",
        ),
        (&["--claim", &url, "--node", "3"], "--node", "not both"),
        (
            &["--claim", &url, "--window", "999999999999s"],
            "--window",
            "longer than the limit",
        ),
        (
            &["--claim", &url, "--ttl", "2s"],
            "--ttl",
            "no lease to time out",
        ),
        (&["--nodes", "0..4"], "--claim", ""),
    ];
    for (flags, flag, want) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_flakeid"))
            .arg("gen")
            .args(*flags)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{flags:?}");
        assert!(
            stderr.contains(flag) && stderr.contains(want),
            "{flags:?}: {stderr}"
        );
    }
    assert!(!dir.exists(), "a refused claim wrote {}", dir.display());
    assert_eq!(std::fs::read_to_string(&not_a_dir).unwrap(), "a file");
    std::fs::remove_file(&not_a_dir).unwrap();
}

/// `gen --claim` releases its claim on SIGTERM (how Kubernetes stops a pod) and on a closed
/// stdout (`| head -1`), as on SIGINT: the state file says released, its reservation is cut
/// to what was minted (well before the 10 minute window), and the next holder takes the id
/// at once.
#[test]
fn sigterm_and_a_closed_stdout_release_the_claim() {
    let dir = temp_dir("release-on-exit");
    let url = format!("file:{}", dir.display());
    let args = |instance: &'static str| {
        vec![
            "gen",
            "--claim",
            &url,
            "--namespace",
            "exit",
            "--nodes",
            "0..1",
            "--window",
            "10m",
            "--instance",
            instance,
            "-n",
            "100000000",
            "--rate",
            "200",
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>()
    };
    let released = |what: &str| {
        let rows = claims_json_in(&dir, "exit");
        assert_eq!(rows.len(), 1, "{what}: {rows:?}");
        assert_eq!(rows[0]["state"], "released", "{what}: {rows:?}");
        let reserved = rows[0]["reserved_until_unix_ns"].as_u64().unwrap();
        let now = flakeid::Clock::unix_ns(&flakeid::clock::SystemClock);
        assert!(
            reserved < now + 60_000_000_000,
            "{what}: the reservation was not cut to what was minted: {reserved} vs now {now}"
        );
    };
    // SIGTERM.
    let argv = args("term");
    let g = spawn(&argv.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(g.claimed_node(), 0);
    g.wait_for_ids(20);
    g.signal("TERM");
    let (status, ids) = g.finish(Duration::from_secs(10));
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert!(!ids.is_empty());
    released("after SIGTERM");
    // A closed stdout: read one line, then close the pipe.
    let mut child = Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(args("pipe"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut out, &mut first).unwrap();
    assert!(first.trim().parse::<u64>().is_ok(), "{first}");
    drop(out);
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "gen kept running"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status:?}");
    released("after a closed stdout");
    // The next holder takes the id at once.
    let out = Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args([
            "gen",
            "--claim",
            &url,
            "--namespace",
            "exit",
            "--nodes",
            "0..1",
        ])
        .args(["--pool-wait", "0s", "--max-wait", "1s", "-n", "3"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One corrupt id does not block the namespace: the claim takes the next free id, and `flakeid claims` lists the corrupt one with what is wrong.
#[test]
fn a_corrupt_id_is_skipped_and_claims_lists_it() {
    let dir = temp_dir("corrupt-cli");
    let ns = dir.join("default");
    std::fs::create_dir_all(&ns).unwrap();
    std::fs::write(ns.join("node-0.lock"), b"").unwrap();
    std::fs::write(ns.join("node-0.state"), b"garbage\n").unwrap();
    let url = format!("file:{}", dir.display());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(["gen", "--claim", &url, "--nodes", "0..4", "-n", "1"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("claimed node 1"), "{stderr}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(["claims", "--claim", &url])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("0 ") && l.contains("corrupt")),
        "{table}"
    );
    assert!(table.contains("node-0.state"), "{table}");
    // One namespace of two node ids: counted in words that agree with the numbers.
    assert!(table.contains(": 1 namespace\n"), "{table}");
    assert!(table.contains("; 2 node ids,"), "{table}");
    assert_eq!(
        std::fs::read(ns.join("node-0.state")).unwrap(),
        b"garbage\n"
    );
    // A store directory that does not exist is an error, not an empty list.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(["claims", "--claim", "file:/nonexistent/flakeid"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    std::fs::remove_dir_all(dir).unwrap();
}

/// The repair the corrupt message offers (`flakeid_fleet::repair`), on a file store whose
/// state file is damaged.
#[test]
fn claims_repair_stores_a_reservation_past_now_instead_of_a_reset() {
    let dir = temp_dir("repair-cli");
    let url = format!("file:{}", dir.display());
    flakeid_fleet::repair::claims_repair_stores_a_reservation_past_now(&url, &|| {
        std::fs::write(dir.join("orders/node-0.state"), b"garbage\n").unwrap()
    });
    std::fs::remove_dir_all(dir).unwrap();
}
