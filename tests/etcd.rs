//! Claims on a real etcd (feature `etcd`), started here on 127.0.0.1 with free ports and a
//! temporary data dir, with real `flakeid gen` processes: a race for a pool, a holder
//! paused past its lease, `kill -9` and the next holder, the store stopped mid-run and
//! brought back, namespaces, and an unreachable store.
//!
//! Without an `etcd` binary each test prints why it skips; with `FLAKEID_REQUIRE_SERVERS`
//! set (CI sets it) a missing server fails the test instead.
#![cfg(feature = "etcd")]

#[path = "common/fleet.rs"]
#[macro_use]
mod fleet;
#[path = "common/procs.rs"]
mod procs;

use std::process::Command;
use std::time::Duration;

use fleet::{Process, Server, available, free_port};

/// An etcd server on loopback; stopped (and its data removed) on drop.
struct Etcd {
    process: Process,
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
        let mut etcd = Etcd {
            process: Process::new("etcd", name),
            client_port: free_port(),
            peer_port: free_port(),
        };
        etcd.launch();
        Some(etcd)
    }
}

impl Server for Etcd {
    fn url(&self) -> String {
        format!("etcd://127.0.0.1:{}", self.client_port)
    }

    fn stop(&mut self) {
        self.process.stop();
    }

    /// Starts (or restarts) the server on the same ports and data, and waits (bounded)
    /// until it answers.
    fn launch(&mut self) {
        let client = format!("http://127.0.0.1:{}", self.client_port);
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let mut command = Command::new("etcd");
        command
            .args(["--name", "flakeid-test", "--data-dir"])
            .arg(self.process.dir.join("data"))
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
            .args(["--logger", "zap", "--log-level", "error"]);
        let url = self.url();
        self.process.spawn(
            &mut command,
            &url,
            self.client_port,
            Duration::from_secs(20),
        );
    }
}

scenarios!(Etcd::start, "etcd");

#[path = "common/conformance.rs"]
mod conformance;

/// The store contract against the real etcd, through etcd's own client for the faults:
/// a lease revoked under its holder, a reservation key overwritten with garbage.
struct EtcdBackend {
    url: String,
    endpoint: String,
    runtime: tokio::runtime::Runtime,
}

impl EtcdBackend {
    fn client(&self) -> etcd_client::Client {
        self.runtime
            .block_on(etcd_client::Client::connect([self.endpoint.as_str()], None))
            .unwrap()
    }
}

impl conformance::Backend for EtcdBackend {
    fn handle(&self) -> std::sync::Arc<dyn flakeid::claim::ClaimStore> {
        flakeid::claim::open(&self.url).unwrap()
    }
    fn lose(
        &self,
        _: &std::sync::Arc<dyn flakeid::claim::ClaimStore>,
        claimed: &flakeid::claim::Claimed,
    ) {
        let mut client = self.client();
        self.runtime
            .block_on(client.lease_revoke(claimed.token as i64))
            .unwrap();
    }
    fn corrupt(&self, namespace: &str, node: u64) {
        let mut client = self.client();
        let key = format!("flakeid/{namespace}/reserved/{node}");
        self.runtime
            .block_on(client.put(key, "not a reservation", None))
            .unwrap();
    }
    fn raw(&self, namespace: &str, node: u64) -> Option<Vec<u8>> {
        let mut client = self.client();
        let key = format!("flakeid/{namespace}/reserved/{node}");
        let resp = self.runtime.block_on(client.get(key, None)).unwrap();
        resp.kvs().first().map(|kv| kv.value().to_vec())
    }
}

#[test]
fn the_etcd_store_keeps_the_contract() {
    let _one = fleet::one_at_a_time();
    let Some(server) = Etcd::start("contract") else {
        return;
    };
    let backend = EtcdBackend {
        url: server.url(),
        endpoint: format!("127.0.0.1:{}", server.client_port),
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap(),
    };
    conformance::run_all(&backend, "etcd");
}
