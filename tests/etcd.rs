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
