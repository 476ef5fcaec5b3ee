//! An etcd server on loopback for the tests: one member on free ports with its data in a
//! temporary directory ([`Etcd`]), and the command of a member of a cluster ([`member`]).

use std::process::Command;
use std::time::Duration;

use crate::scenarios::{Process, Server, available, free_port};

/// An etcd server on loopback; stopped (and its data removed) on drop.
pub struct Etcd {
    /// The server process and its directory.
    pub process: Process,
    /// The client port (`etcd://127.0.0.1:PORT`).
    pub client_port: u16,
    /// The peer port.
    pub peer_port: u16,
}

impl Etcd {
    /// Starts a server, or says why not: `None` (the test skips) when there is no `etcd`
    /// binary, unless `FLAKEID_REQUIRE_SERVERS` is set.
    pub fn start(name: &str) -> Option<Etcd> {
        if !etcd_available(name) {
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

    fn take_claim_away(&self, namespace: &str, node: u64) {
        let key = format!("flakeid/{namespace}/nodes/{node}");
        let endpoint = format!("http://127.0.0.1:{}", self.client_port);
        crate::block_on(async move {
            let mut client = etcd_client::Client::connect([endpoint], None)
                .await
                .unwrap();
            let deleted = client.delete(key.as_str(), None).await.unwrap().deleted();
            assert_eq!(deleted, 1, "{key} was not there to delete");
            let reserved = key.replace("/nodes/", "/reserved/");
            let got = client.get(reserved.as_str(), None).await.unwrap();
            let value = got.kvs()[0].value().to_vec();
            client.put(reserved, value, None).await.unwrap();
        });
    }

    /// Starts (or restarts) the server on the same ports and data, and waits (bounded)
    /// until it answers.
    fn launch(&mut self) {
        let peer = format!("flakeid-test=http://127.0.0.1:{}", self.peer_port);
        let mut command = member(
            &self.process,
            "flakeid-test",
            (self.client_port, self.peer_port),
            &peer,
            None,
        );
        let endpoint = format!("http://127.0.0.1:{}", self.client_port);
        self.process.spawn(
            &mut command,
            self.client_port,
            Duration::from_secs(20),
            || answers(&endpoint),
        );
    }
}

/// Whether the etcd member at `endpoint` (`http://127.0.0.1:PORT`) answers a read through
/// etcd's own client, within a second or two.
pub fn answers(endpoint: &str) -> bool {
    let options = etcd_client::ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(1))
        .with_timeout(Duration::from_secs(1));
    crate::block_on(async {
        match etcd_client::Client::connect([endpoint], Some(options)).await {
            Ok(mut client) => client.get("flakeid/probe", None).await.is_ok(),
            Err(_) => false,
        }
    })
}

/// The command that runs etcd member `name` of `initial_cluster` on loopback, its data in
/// `process`'s directory; with `tls`, its clients over TLS with a certificate its CA
/// signed (`--client-cert-auth`).
pub fn member(
    process: &Process,
    name: &str,
    (client_port, peer_port): (u16, u16),
    initial_cluster: &str,
    tls: Option<&crate::certs::Certs>,
) -> Command {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let client = format!("{scheme}://127.0.0.1:{client_port}");
    let peer = format!("http://127.0.0.1:{peer_port}");
    let mut command = Command::new("etcd");
    command
        .args(["--name", name, "--data-dir"])
        .arg(process.dir.join("data"))
        .args(["--listen-client-urls", &client])
        .args(["--advertise-client-urls", &client])
        .args(["--listen-peer-urls", &peer])
        .args(["--initial-advertise-peer-urls", &peer])
        .args(["--initial-cluster", initial_cluster])
        .args(["--logger", "zap", "--log-level", "error"]);
    if let Some(certs) = tls {
        command
            .arg("--cert-file")
            .arg(&certs.server_cert)
            .arg("--key-file")
            .arg(&certs.server_key)
            .arg("--trusted-ca-file")
            .arg(&certs.ca)
            .arg("--client-cert-auth");
    }
    command
}

/// Whether the `etcd` binary is there (else the test skips, or fails under
/// `FLAKEID_REQUIRE_SERVERS`).
pub fn etcd_available(test: &str) -> bool {
    available(
        test,
        "etcd",
        &["--version"],
        "Debian: apt-get install etcd-server",
    )
}
