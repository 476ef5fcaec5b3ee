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
#[path = "common/serve_fleet.rs"]
mod serve_fleet;
#[path = "common/service.rs"]
mod service;

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

#[path = "../../tests/common/conformance.rs"]
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

#[path = "common/proxy.rs"]
mod proxy;

use flakeid::claim::{ClaimRequest, Claims, OpenOptions};

/// 2027-01-15T08:00:00Z.
const T: u64 = 1_800_000_000_000_000_000;

/// Issue 23, item 8: a renewal whose write ZooKeeper applied but whose reply was lost (the
/// connection reset right after the request) left the remembered version stale; the next
/// renewal met BadVersion and reported the claim lost, for good. Now it reads back, sees
/// its session still owns the claim, adopts the version and goes on.
#[test]
fn a_lost_reply_to_a_renewal_does_not_lose_the_claim() {
    let _one = fleet::one_at_a_time();
    let Some(zk) = ZooKeeper::start("lost-reply") else {
        return;
    };
    let proxy = proxy::Proxy::start(zk.port);
    let url = format!("zookeeper://127.0.0.1:{}", proxy.port);
    let store = flakeid::claim::open_with(&url, &OpenOptions::default()).unwrap();
    let request = ClaimRequest {
        namespace: "lost",
        pool: 0..1,
        instance: "a",
    };
    let c = store.claim(&request).unwrap();
    store.renew(&c, T).unwrap();
    let mut last = T;
    for round in 1..=4u64 {
        proxy.cut_after_request_containing(b" held ");
        // Its reply is lost (the outcome may be either, as a client would see it).
        let _ = store.renew(&c, T + round * 1_000_000_000);
        last = T + round * 1_000_000_000 + 500_000_000;
        store
            .renew(&c, last)
            .unwrap_or_else(|e| panic!("round {round}: the renewal after a lost reply: {e}"));
    }
    assert!(proxy.cuts() >= 4, "the proxy cut {} times", proxy.cuts());
    let listed = store.list("lost").unwrap();
    assert_eq!(listed[0].reserved_until_unix_ns, last);
    assert_eq!(listed[0].state, flakeid::claim::NodeState::Held);
    store.release(&c, last).unwrap();
}

/// Issue 23, item 10: once its session expired, a `ZooKeeperStore` failed every later
/// claim. Now the claims of the expired session are lost (as they must be) and the next
/// claim opens a new session.
#[test]
fn a_store_whose_session_expired_claims_again_in_a_new_session() {
    let _one = fleet::one_at_a_time();
    let Some(zk) = ZooKeeper::start("expiry") else {
        return;
    };
    let proxy = proxy::Proxy::start(zk.port);
    let url = format!("zookeeper://127.0.0.1:{}", proxy.port);
    let options = OpenOptions::default().ttl(Duration::from_secs(2));
    let store = flakeid::claim::open_with(&url, &options).unwrap();
    let claims = || {
        Claims::with_store(store.clone())
            .namespace("expiry")
            .nodes(0..2)
            .window(Duration::from_secs(1))
            .pool_wait(Duration::from_secs(20))
            .manual_renewal()
    };
    let layout = flakeid::Layout::snowflake();
    let first = flakeid::Generator::builder(layout)
        .build_claimed(claims())
        .unwrap();
    proxy.set_down(true);
    std::thread::sleep(Duration::from_secs(5)); // past the 2 s session
    proxy.set_down(false);
    assert!(
        first.renew_claim().is_err(),
        "a claim of the expired session renewed"
    );
    let second = flakeid::Generator::builder(layout)
        .build_claimed(claims())
        .expect("a claim in a new session");
    second.next_id().unwrap();
    second.renew_claim().unwrap();
}

/// Issue 23, item 12 (ZooKeeper): a holder that exits without releasing (after "claim
/// lost", say) used to leave its ephemeral node for a whole session timeout. Dropping
/// the store now closes its session, so the node goes at once.
#[test]
fn dropping_the_store_closes_its_session_and_frees_its_ids() {
    let _one = fleet::one_at_a_time();
    let Some(zk) = ZooKeeper::start("close") else {
        return;
    };
    let url = zk.url();
    let options = OpenOptions::default().ttl(Duration::from_secs(20));
    let store = flakeid::claim::open_with(&url, &options).unwrap();
    let claimed = store
        .claim(&ClaimRequest {
            namespace: "close",
            pool: 0..1,
            instance: "gone",
        })
        .unwrap();
    assert_eq!(claimed.node, 0);
    drop(store);
    let other = flakeid::claim::open(&url).unwrap();
    let listed = other.list("close").unwrap();
    assert_ne!(
        listed[0].state,
        flakeid::claim::NodeState::Held,
        "the ephemeral node outlived its store (a 20 s session): {listed:?}"
    );
}
