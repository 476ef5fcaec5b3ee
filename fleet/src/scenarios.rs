//! The fleet scenarios, written once over a [`Server`] (etcd, ZooKeeper):
//! real `flakeid gen` processes against a real coordinator the test started. Run by
//! `cli/tests/etcd.rs` and `cli/tests/zookeeper.rs`.

use std::collections::HashSet;
use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::procs::{Gen, spawn};
use flakeid::claim::{ClaimError, Claims, OpenOptions};
use flakeid::clock::{ManualClock, SystemClock};
use flakeid::{Clock, Generator, Layout};

/// The store a URL names, as the tool maps it: `etcd://` to flakeid-etcd, `zookeeper://` to
/// flakeid-zookeeper, the rest to the library's own.
pub fn open_with(
    url: &str,
    options: &OpenOptions,
) -> Result<std::sync::Arc<dyn flakeid::claim::ClaimStore>, ClaimError> {
    use flakeid::claim::store::{FromUrl, StoreUrl};
    let parsed = StoreUrl::parse(url)?;
    match parsed.scheme() {
        "etcd" | "etcds" => Ok(std::sync::Arc::new(flakeid_etcd::EtcdStore::from_url(
            &parsed, options,
        )?)),
        "zookeeper" => Ok(std::sync::Arc::new(
            flakeid_zookeeper::ZooKeeperStore::from_url(&parsed, options)?,
        )),
        _ => flakeid::claim::open_url(&parsed, options),
    }
}

/// [`open_with`] with the default options.
pub fn open(url: &str) -> Result<std::sync::Arc<dyn flakeid::claim::ClaimStore>, ClaimError> {
    open_with(url, &OpenOptions::default())
}

/// A coordinator the test runs: its URL, and stopping and starting it again on the same
/// address and data.
pub trait Server {
    fn url(&self) -> String;
    fn stop(&mut self);
    fn launch(&mut self);
    /// Takes a live claim of `node` in `namespace` away by hand, through the server's own
    /// client, as an operator (or any other rewrite of the store) would: its claim key
    /// `nodes/N` deleted, and where the store could attach the claim again while nobody
    /// touched the id (etcd) its reservation rewritten as it was.
    fn take_claim_away(&self, namespace: &str, node: u64) {
        panic!(
            "{}: this server's harness cannot delete {namespace}/nodes/{node} by hand",
            self.url()
        );
    }
}

/// One server at a time: the scenarios pause and kill processes on a 2-core machine, and
/// their timing is their subject.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// A server process a test runs: a fresh temporary directory (config, data, `server.log`)
/// and the child; killed, and the directory removed, on drop.
pub struct Process {
    pub dir: std::path::PathBuf,
    child: Option<std::process::Child>,
}

impl Process {
    /// A fresh, empty directory for server `kind` of test `name`.
    pub fn new(kind: &str, name: &str) -> Process {
        let dir =
            std::env::temp_dir().join(format!("flakeid-{kind}-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Process { dir, child: None }
    }

    /// Starts `command` (its output to `server.log`) and waits (bounded) until the server
    /// at `url` answers.
    pub fn spawn(&mut self, command: &mut Command, url: &str, port: u16, bound: Duration) {
        self.start(command);
        wait_until_answers(url, port, bound, &self.dir.join("server.log"));
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(std::process::Child::id)
    }

    /// Sends `signal` (`STOP`, `CONT`) to the server.
    pub fn signal(&self, signal: &str) {
        let pid = self.pid().expect("a running server");
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} {pid}");
    }

    /// Starts `command` (its output to `server.log`), without waiting.
    pub fn start(&mut self, command: &mut Command) {
        let log_path = self.dir.join("server.log");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .unwrap();
        let child = command
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    /// Stops the server (`kill -9`: no goodbye to its clients).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Waits (bounded) until the server at `url`, listening on `port`, answers a listing; on
/// timeout fails with the server's log.
pub fn wait_until_answers(url: &str, port: u16, bound: Duration, log: &std::path::Path) {
    let deadline = Instant::now() + bound;
    loop {
        let up = std::net::TcpStream::connect_timeout(
            &([127, 0, 0, 1], port).into(),
            Duration::from_millis(200),
        )
        .is_ok()
            && open(url).and_then(|s| s.list("probe")).is_ok();
        if up {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{url} did not answer within {bound:?}: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The `gen` scenarios as tests, each on a fresh server from `$start` (an
/// `fn(&str) -> Option<impl Server>`, `None` to skip), one at a time.
#[macro_export]
macro_rules! gen_scenarios {
    ($start:path) => {
        fn on_server(name: &str, scenario: fn(&mut dyn $crate::scenarios::Server)) {
            let _one = $crate::scenarios::one_at_a_time();
            if let Some(mut server) = $start(name) {
                scenario(&mut server);
            }
        }

        #[test]
        fn eight_processes_race_for_a_pool_of_eight() {
            on_server(
                "race",
                $crate::scenarios::eight_processes_race_for_a_pool_of_eight,
            );
        }

        #[test]
        fn a_holder_paused_past_its_lease_loses_the_id_and_never_overlaps() {
            on_server(
                "pause",
                $crate::scenarios::a_holder_paused_past_its_lease_loses_the_id_and_never_overlaps,
            );
        }

        #[test]
        fn a_killed_holder_is_followed_by_ids_above_all_of_its_own() {
            on_server(
                "kill",
                $crate::scenarios::a_killed_holder_is_followed_by_ids_above_all_of_its_own,
            );
        }

        #[test]
        fn a_new_holder_10s_behind_fails_with_the_distance_then_mints_above() {
            on_server(
                "behind",
                $crate::scenarios::a_new_holder_10s_behind_fails_with_the_distance_then_mints_above,
            );
        }

        #[test]
        fn the_store_stops_and_comes_back_under_a_running_holder() {
            on_server(
                "outage",
                $crate::scenarios::the_store_stops_and_comes_back_under_a_running_holder,
            );
        }

        #[test]
        fn namespaces_are_apart_and_claims_lists_the_holders() {
            on_server(
                "ns",
                $crate::scenarios::namespaces_are_apart_and_claims_lists_the_holders,
            );
        }

        #[test]
        fn when_the_window_runs_out_gen_says_what_happened_and_stops() {
            on_server(
                "window",
                $crate::scenarios::when_the_window_runs_out_gen_says_what_happened_and_stops,
            );
        }
    };
}

/// [`gen_scenarios`], the service's scenarios and the unreachable store.
#[macro_export]
macro_rules! scenarios {
    ($start:path, $scheme:literal) => {
        $crate::gen_scenarios!($start);

        #[test]
        fn serve_readiness_follows_the_store() {
            on_server(
                "serve-ready",
                $crate::serve_fleet::readiness_follows_the_store,
            );
        }

        #[test]
        fn serve_recovers_from_an_outage_past_its_lease_in_process() {
            on_server(
                "serve-outage",
                $crate::serve_fleet::a_server_recovers_from_an_outage_past_its_lease_in_process,
            );
        }

        #[test]
        fn serve_three_servers_under_kill_pause_and_restart() {
            on_server(
                "serve-chaos",
                $crate::serve_fleet::three_servers_under_kill_pause_and_restart,
            );
        }

        #[test]
        fn serve_a_lost_claims_release_never_reaches_the_re_claim() {
            on_server(
                "serve-again",
                $crate::serve_fleet::a_lost_claims_release_never_reaches_the_re_claim,
            );
        }

        #[test]
        fn an_unreachable_store_is_a_clear_error_within_the_bound() {
            let _one = $crate::scenarios::one_at_a_time();
            $crate::scenarios::an_unreachable_store_is_a_clear_error_within_the_bound($scheme);
        }
    };
}

/// `count` `flakeid gen` processes with `args` in namespace `ns` of `url`, each with its
/// claim taken and 20 IDs out.
pub fn holders(url: &str, ns: &str, args: &[&str], count: usize) -> Vec<Gen> {
    let holders: Vec<Gen> = (0..count)
        .map(|_| spawn(&gen_args(url, ns, args)))
        .collect();
    for h in &holders {
        h.claimed_node();
        h.wait_for_ids(20);
    }
    holders
}

/// Waits `span` while checking, every second, that each holder runs and printed more IDs
/// than a second before.
pub fn holders_keep_minting(holders: &[Gen], span: Duration, what: &str) {
    let started = Instant::now();
    let mut before: Vec<usize> = holders.iter().map(|h| h.ids_now().len()).collect();
    while started.elapsed() < span {
        std::thread::sleep(Duration::from_secs(1));
        for (i, h) in holders.iter().enumerate() {
            let now = h.ids_now().len();
            assert!(
                now > before[i],
                "{what}: holder {i} minted nothing for a second after {:?}; it said {:?}",
                started.elapsed(),
                h.lines_now()
            );
            before[i] = now;
        }
    }
}

/// The end of a holders' run: SIGTERM, each exits 143 having released its claim, and no ID
/// was printed twice.
pub fn stop_and_check_unique(holders: Vec<Gen>) {
    let mut all = Vec::new();
    for h in holders {
        h.signal("TERM");
        let (status, ids) = h.finish(Duration::from_secs(20));
        assert_eq!(status.code(), Some(143), "SIGTERM: {status:?}");
        all.extend(ids);
    }
    assert!(unique(&all), "a duplicate ID");
}

/// `flakeid claims --claim URL ARGS --json`: one JSON value per line.
pub fn claims_json(url: &str, args: &[&str]) -> Vec<serde_json::Value> {
    let out = Command::new(crate::binary())
        .args(["claims", "--claim", url, "--json"])
        .args(args)
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

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Whether `program` runs (`args` is a harmless call such as `--version`); if not, the
/// test skips with a printed reason, or fails when `FLAKEID_REQUIRE_SERVERS` is set.
pub fn available(test: &str, program: &str, args: &[&str], install: &str) -> bool {
    let found = Command::new(program)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("FLAKEID_REQUIRE_SERVERS").is_none(),
            "{test}: no {program}, and FLAKEID_REQUIRE_SERVERS is set: {install}"
        );
        eprintln!("skipping {test}: no {program} ({install})");
    }
    found
}

pub fn gen_args<'a>(url: &'a str, ns: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["gen", "--claim", url, "--namespace", ns];
    args.extend_from_slice(extra);
    args
}

fn layout() -> Layout {
    Layout::snowflake()
}

fn ticks(id: u64) -> u64 {
    layout().decompose(id).unwrap().ticks
}

fn unique(all: &[u64]) -> bool {
    all.iter().collect::<HashSet<_>>().len() == all.len()
}

/// Scenario 1: Eight processes race for a pool of eight: eight distinct nodes, every ID unique;
/// a ninth gets the pool-full error.
pub fn eight_processes_race_for_a_pool_of_eight(server: &mut dyn Server) {
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
pub fn a_holder_paused_past_its_lease_loses_the_id_and_never_overlaps(server: &mut dyn Server) {
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
pub fn a_killed_holder_is_followed_by_ids_above_all_of_its_own(server: &mut dyn Server) {
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
pub fn a_new_holder_10s_behind_fails_with_the_distance_then_mints_above(server: &mut dyn Server) {
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
    let store = open_with(&url, &options).unwrap();
    let reserved = store.list("behind").unwrap()[0].reserved_until_unix_ns;
    let claims = || {
        Claims::with_store(store.clone())
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
pub fn the_store_stops_and_comes_back_under_a_running_holder(server: &mut dyn Server) {
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
pub fn namespaces_are_apart_and_claims_lists_the_holders(server: &mut dyn Server) {
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
pub fn when_the_window_runs_out_gen_says_what_happened_and_stops(server: &mut dyn Server) {
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
