//! Claims on a real ZooKeeper (feature `zookeeper`), started here in standalone mode on
//! 127.0.0.1 with a free port and a temporary config and data dir, with real `flakeid gen`
//! processes: the same scenarios as `tests/etcd.rs` (`tests/common/fleet.rs`).
//!
//! Without `java` and Debian's ZooKeeper jars each test prints why it skips; with
//! `FLAKEID_REQUIRE_SERVERS` set (CI sets it) a missing server fails the test instead.
#![cfg(feature = "zookeeper")]

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

/// One server at a time, as for etcd.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Debian's jars (`/usr/share/java`), the ZooKeeper server's among them.
fn classpath() -> Option<String> {
    let jars: Vec<String> = std::fs::read_dir("/usr/share/java")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jar"))
        .map(|p| p.display().to_string())
        .collect();
    jars.iter()
        .any(|j| j.contains("zookeeper"))
        .then(|| jars.join(":"))
}

/// A standalone ZooKeeper on loopback; stopped (and its data removed) on drop.
struct ZooKeeper {
    child: Option<Child>,
    dir: PathBuf,
    port: u16,
    classpath: String,
}

impl ZooKeeper {
    fn start(name: &str) -> Option<ZooKeeper> {
        if !available(
            name,
            "java",
            &["-version"],
            "Debian: apt-get install zookeeper",
        ) {
            return None;
        }
        let Some(classpath) = classpath() else {
            assert!(
                std::env::var_os("FLAKEID_REQUIRE_SERVERS").is_none(),
                "{name}: no ZooKeeper jars in /usr/share/java, and FLAKEID_REQUIRE_SERVERS is set: apt-get install zookeeper"
            );
            eprintln!(
                "skipping {name}: no ZooKeeper jars in /usr/share/java (Debian: apt-get install zookeeper)"
            );
            return None;
        };
        let dir = std::env::temp_dir().join(format!("flakeid-zk-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let port = free_port();
        // Ticks of 500 ms: sessions of 1 s to 30 s.
        let config = format!(
            "tickTime=500\nminSessionTimeout=1000\nmaxSessionTimeout=30000\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=ruok\n",
            dir.join("data").display()
        );
        std::fs::write(dir.join("zoo.cfg"), config).unwrap();
        let mut zk = ZooKeeper {
            child: None,
            dir,
            port,
            classpath,
        };
        zk.launch();
        Some(zk)
    }

    fn launch(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("zookeeper.log"))
            .unwrap();
        let child = Command::new("java")
            .args(["-Xmx256m", "-cp", &self.classpath])
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(self.dir.join("zoo.cfg"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            let up = TcpStream::connect_timeout(
                &([127, 0, 0, 1], self.port).into(),
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
                "ZooKeeper did not answer within 40 s: {}",
                std::fs::read_to_string(self.dir.join("zookeeper.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Server for ZooKeeper {
    fn url(&self) -> String {
        format!("zookeeper://127.0.0.1:{}", self.port)
    }

    fn stop(&mut self) {
        ZooKeeper::stop(self);
    }

    fn launch(&mut self) {
        ZooKeeper::launch(self);
    }
}

impl Drop for ZooKeeper {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs a scenario on a fresh server, or skips without one.
fn on_zookeeper(name: &str, scenario: fn(&mut dyn Server)) {
    let _one = one_at_a_time();
    if let Some(mut zk) = ZooKeeper::start(name) {
        scenario(&mut zk);
    }
}

#[test]
fn eight_processes_race_for_a_pool_of_eight() {
    on_zookeeper("race", fleet::eight_processes_race_for_a_pool_of_eight);
}

#[test]
fn a_holder_paused_past_its_lease_loses_the_id_and_never_overlaps() {
    on_zookeeper(
        "pause",
        fleet::a_holder_paused_past_its_lease_loses_the_id_and_never_overlaps,
    );
}

#[test]
fn a_killed_holder_is_followed_by_ids_above_all_of_its_own() {
    on_zookeeper(
        "kill",
        fleet::a_killed_holder_is_followed_by_ids_above_all_of_its_own,
    );
}

#[test]
fn a_new_holder_10s_behind_fails_with_the_distance_then_mints_above() {
    on_zookeeper(
        "behind",
        fleet::a_new_holder_10s_behind_fails_with_the_distance_then_mints_above,
    );
}

#[test]
fn the_store_stops_and_comes_back_under_a_running_holder() {
    on_zookeeper(
        "outage",
        fleet::the_store_stops_and_comes_back_under_a_running_holder,
    );
}

#[test]
fn namespaces_are_apart_and_claims_lists_the_holders() {
    on_zookeeper(
        "ns",
        fleet::namespaces_are_apart_and_claims_lists_the_holders,
    );
}

#[test]
fn an_unreachable_store_is_a_clear_error_within_the_bound() {
    let _one = one_at_a_time();
    fleet::an_unreachable_store_is_a_clear_error_within_the_bound("zookeeper");
}
