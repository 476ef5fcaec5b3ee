//! A standalone ZooKeeper on loopback for the tests ([`ZooKeeper`]): free port, temporary
//! config and data, Debian's jars; `super:test` as its superuser ([`SUPER_DIGEST`]).

use std::process::Command;
use std::time::Duration;

use crate::scenarios::{Process, Server, available, free_port};

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
pub struct ZooKeeper {
    /// The server process and its directory.
    pub process: Process,
    /// The client port (`zookeeper://127.0.0.1:PORT`).
    pub port: u16,
    /// The class path it runs with (Debian's jars).
    pub classpath: String,
}

impl ZooKeeper {
    /// Starts a server, or `None` (the test skips, saying why) without Java or the jars,
    /// unless `FLAKEID_REQUIRE_SERVERS` is set.
    pub fn start(name: &str) -> Option<ZooKeeper> {
        if !available(
            name,
            "java",
            &["-version"],
            "Debian: apt-get install zookeeper",
        ) {
            return None;
        }
        let Some(classpath) = classpath() else {
            crate::server::cannot_run(
                name,
                "no ZooKeeper jars in /usr/share/java",
                "Debian: apt-get install zookeeper",
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

    fn take_claim_away(&self, namespace: &str, node: u64) {
        let path = format!("/flakeid/{namespace}/nodes/{node}");
        let hosts = format!("127.0.0.1:{}", self.port);
        crate::block_on(async move {
            let client = zookeeper_client::Client::connect(&hosts).await.unwrap();
            client.delete(&path, None).await.unwrap();
        });
    }

    fn launch(&mut self) {
        let mut command = Command::new("java");
        // A super user ("super", password "test"), for the tests that repair ACLs as an
        // operator would.
        command
            .args(["-Xmx256m", "-cp", &self.classpath])
            .arg(format!(
                "-Dzookeeper.DigestAuthenticationProvider.superDigest={SUPER_DIGEST}"
            ))
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(self.process.dir.join("zoo.cfg"));
        let hosts = format!("127.0.0.1:{}", self.port);
        self.process
            .spawn(&mut command, self.port, Duration::from_secs(40), || {
                answers(&hosts)
            });
    }
}

/// Whether the ZooKeeper server at `hosts` (`127.0.0.1:PORT`) serves a session (it has
/// joined its quorum) and answers a read, within two seconds.
pub fn answers(hosts: &str) -> bool {
    crate::block_on(async {
        let read = async {
            let client = zookeeper_client::Client::connect(hosts).await.ok()?;
            client.check_stat("/").await.ok()
        };
        matches!(
            tokio::time::timeout(Duration::from_secs(2), read).await,
            Ok(Some(_))
        )
    })
}

/// ZooKeeper's digest of `super:test`.
pub const SUPER_DIGEST: &str = "super:D/InIHSb7yEEbrWz8b9l71RjZJU=";
