//! Claims on a real ZooKeeper (feature `zookeeper`), started here in standalone mode on
//! 127.0.0.1 with a free port and a temporary config and data dir, with real `flakeid gen`
//! processes: the same scenarios as `tests/etcd.rs` (`tests/common/fleet.rs`).
//!
//! Without `java` and Debian's ZooKeeper jars each test prints why it skips; with
//! `FLAKEID_REQUIRE_SERVERS` set (CI sets it) a missing server fails the test instead.
#![cfg(feature = "zookeeper")]

#[path = "common/fleet.rs"]
#[macro_use]
mod fleet;
#[path = "common/procs.rs"]
mod procs;

use std::process::Command;
use std::time::Duration;

use fleet::{Process, Server, available, free_port};

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
    process: Process,
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
        let process = Process::new("zk", name);
        let dir = &process.dir;
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let port = free_port();
        // Ticks of 500 ms: sessions of 1 s to 30 s.
        let config = format!(
            "tickTime=500\nminSessionTimeout=1000\nmaxSessionTimeout=30000\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=ruok\n",
            dir.join("data").display()
        );
        std::fs::write(dir.join("zoo.cfg"), config).unwrap();
        let mut zk = ZooKeeper {
            process,
            port,
            classpath,
        };
        zk.launch();
        Some(zk)
    }
}

impl Server for ZooKeeper {
    fn url(&self) -> String {
        format!("zookeeper://127.0.0.1:{}", self.port)
    }

    fn stop(&mut self) {
        self.process.stop();
    }

    fn launch(&mut self) {
        let mut command = Command::new("java");
        command
            .args(["-Xmx256m", "-cp", &self.classpath])
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(self.process.dir.join("zoo.cfg"));
        let url = self.url();
        self.process
            .spawn(&mut command, &url, self.port, Duration::from_secs(40));
    }
}

scenarios!(ZooKeeper::start, "zookeeper");

#[path = "common/conformance.rs"]
mod conformance;

/// The store contract against the real ZooKeeper, through a client of the test's own for
/// the faults: a holder's ephemeral node deleted, a reservation overwritten with garbage.
struct ZkBackend {
    url: String,
    runtime: tokio::runtime::Runtime,
    client: zookeeper_client::Client,
}

impl ZkBackend {
    fn new(zk: &ZooKeeper) -> ZkBackend {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let endpoint = format!("127.0.0.1:{}", zk.port);
        let client = runtime
            .block_on(zookeeper_client::Client::connect(&endpoint))
            .unwrap();
        ZkBackend {
            url: zk.url(),
            runtime,
            client,
        }
    }
}

impl conformance::Backend for ZkBackend {
    fn handle(&self) -> std::sync::Arc<dyn flakeid::claim::ClaimStore> {
        flakeid::claim::open(&self.url).unwrap()
    }
    fn lose(
        &self,
        _: &std::sync::Arc<dyn flakeid::claim::ClaimStore>,
        claimed: &flakeid::claim::Claimed,
    ) {
        let path = format!("/flakeid/{}/nodes/{}", claimed.namespace, claimed.node);
        self.runtime
            .block_on(self.client.delete(&path, None))
            .unwrap();
    }
    fn corrupt(&self, namespace: &str, node: u64) {
        let path = format!("/flakeid/{namespace}/reserved/{node}");
        self.runtime
            .block_on(self.client.set_data(&path, b"not a reservation", None))
            .unwrap();
    }
    fn raw(&self, namespace: &str, node: u64) -> Option<Vec<u8>> {
        let path = format!("/flakeid/{namespace}/reserved/{node}");
        self.runtime
            .block_on(self.client.get_data(&path))
            .ok()
            .map(|(data, _)| data)
    }
}

#[test]
fn the_zookeeper_store_keeps_the_contract() {
    let _one = fleet::one_at_a_time();
    let Some(zk) = ZooKeeper::start("contract") else {
        return;
    };
    let backend = ZkBackend::new(&zk);
    conformance::run_all(&backend, "zookeeper");
}
