//! Claims on a real etcd (feature `etcd`), started here on 127.0.0.1 with free ports and a
//! temporary data dir, with real `flakeid gen` processes: a race for a pool, a holder
//! paused past its lease, `kill -9` and the next holder, the store stopped mid-run and
//! brought back, namespaces, and an unreachable store.
//!
//! Without an `etcd` binary each test prints why it skips; with `FLAKEID_REQUIRE_SERVERS`
//! set (CI sets it) a missing server fails the test instead.
#![cfg(feature = "etcd")]

#[path = "common/fleet.rs"]
mod fleet;
#[path = "common/procs.rs"]
mod procs;

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use fleet::{Server, available, free_port};

/// One server at a time: the tests pause and kill processes on a 2-core machine, and
/// their timing is their subject.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// An etcd server on loopback; stopped (and its data removed) on drop.
struct Etcd {
    child: Option<Child>,
    dir: PathBuf,
    client_port: u16,
    peer_port: u16,
}

impl Etcd {
    /// Starts a server, or says why not: `None` (the test skips) when there is no `etcd`
    /// binary, unless `FLAKEID_REQUIRE_SERVERS` is set.
    fn start(name: &str) -> Option<Etcd> {
        if !available(
            name,
            "etcd",
            &["--version"],
            "Debian: apt-get install etcd-server",
        ) {
            return None;
        }
        let dir = std::env::temp_dir().join(format!("flakeid-etcd-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut etcd = Etcd {
            child: None,
            dir,
            client_port: free_port(),
            peer_port: free_port(),
        };
        etcd.launch();
        Some(etcd)
    }

    /// Starts (or restarts) the server on the same ports and data, and waits (bounded)
    /// until it answers.
    fn launch(&mut self) {
        let client = format!("http://127.0.0.1:{}", self.client_port);
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("etcd.log"))
            .unwrap();
        let child = Command::new("etcd")
            .args(["--name", "flakeid-test", "--data-dir"])
            .arg(self.dir.join("data"))
            .args([
                "--listen-client-urls",
                &client,
                "--advertise-client-urls",
                &client,
            ])
            .args([
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
            ])
            .args(["--initial-cluster", &format!("flakeid-test={peer}")])
            .args(["--logger", "zap", "--log-level", "error"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let up = TcpStream::connect_timeout(
                &([127, 0, 0, 1], self.client_port).into(),
                Duration::from_millis(200),
            )
            .is_ok()
                && flakeid::claim::open(&self.url())
                    .and_then(|s| s.list("probe"))
                    .is_ok();
            if up {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "etcd did not answer within 20 s: {}",
                std::fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops the server (`kill -9`: no goodbye to its clients).
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Server for Etcd {
    fn url(&self) -> String {
        format!("etcd://127.0.0.1:{}", self.client_port)
    }

    fn stop(&mut self) {
        Etcd::stop(self);
    }

    fn launch(&mut self) {
        Etcd::launch(self);
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs a scenario on a fresh server, or skips without one.
fn on_etcd(name: &str, scenario: fn(&mut dyn Server)) {
    let _one = one_at_a_time();
    if let Some(mut etcd) = Etcd::start(name) {
        scenario(&mut etcd);
    }
}

#[test]
fn eight_processes_race_for_a_pool_of_eight() {
    on_etcd("race", fleet::eight_processes_race_for_a_pool_of_eight);
}

#[test]
fn a_holder_paused_past_its_lease_loses_the_id_and_never_overlaps() {
    on_etcd(
        "pause",
        fleet::a_holder_paused_past_its_lease_loses_the_id_and_never_overlaps,
    );
}

#[test]
fn a_killed_holder_is_followed_by_ids_above_all_of_its_own() {
    on_etcd(
        "kill",
        fleet::a_killed_holder_is_followed_by_ids_above_all_of_its_own,
    );
}

#[test]
fn a_new_holder_10s_behind_fails_with_the_distance_then_mints_above() {
    on_etcd(
        "behind",
        fleet::a_new_holder_10s_behind_fails_with_the_distance_then_mints_above,
    );
}

#[test]
fn the_store_stops_and_comes_back_under_a_running_holder() {
    on_etcd(
        "outage",
        fleet::the_store_stops_and_comes_back_under_a_running_holder,
    );
}

#[test]
fn namespaces_are_apart_and_claims_lists_the_holders() {
    on_etcd(
        "ns",
        fleet::namespaces_are_apart_and_claims_lists_the_holders,
    );
}

#[test]
fn an_unreachable_store_is_a_clear_error_within_the_bound() {
    let _one = one_at_a_time();
    fleet::an_unreachable_store_is_a_clear_error_within_the_bound("etcd");
}
