//! The servers the fleet tests run: a coordinator ([`Server`]), its process
//! ([`Process`]), waiting until it answers, one at a time, free ports, and whether a
//! server's program is there. No store crate: a scenario that opens a store in process is
//! given `flakeid_stores::open` ([`Open`]).

use std::net::TcpListener;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use flakeid::claim::{ClaimError, ClaimStore, OpenOptions};

/// How a scenario opens a store by URL in its own process: `flakeid_stores::open`, given
/// by the tests, so that this kit depends on no store crate (the store crates' own tests
/// use its servers).
pub type Open = fn(&str, &OpenOptions) -> Result<Arc<dyn ClaimStore>, ClaimError>;

/// Whether the store at `url` answers a listing, opened by `open`: the readiness of a
/// server the tests reach through a store (TLS, users).
pub fn lists(open: Open, url: &str) -> bool {
    open(url, &OpenOptions::default())
        .and_then(|s| s.list("probe"))
        .is_ok()
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
    /// on `port` is `ready`.
    pub fn spawn(
        &mut self,
        command: &mut Command,
        port: u16,
        bound: Duration,
        ready: impl FnMut() -> bool,
    ) {
        self.start(command);
        wait_until_answers(port, bound, &self.dir.join("server.log"), ready);
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

/// Waits (bounded) until the server listening on `port` is `ready` (a request through its
/// client answered); on timeout fails with the server's log.
pub fn wait_until_answers(
    port: u16,
    bound: Duration,
    log: &std::path::Path,
    mut ready: impl FnMut() -> bool,
) {
    let deadline = Instant::now() + bound;
    loop {
        let up = std::net::TcpStream::connect_timeout(
            &([127, 0, 0, 1], port).into(),
            Duration::from_millis(200),
        )
        .is_ok()
            && ready();
        if up {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the server on port {port} did not answer within {bound:?}: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A free port on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A test that cannot run for want of `what` (a server, a runtime, a tool): it skips with a
/// printed reason, or fails when `FLAKEID_REQUIRE_SERVERS` is set (as `.ci/run` sets it),
/// saying how to `install` it.
pub fn cannot_run(test: &str, what: &str, install: &str) {
    assert!(
        std::env::var_os("FLAKEID_REQUIRE_SERVERS").is_none(),
        "{test}: {what}, and FLAKEID_REQUIRE_SERVERS is set: {install}"
    );
    eprintln!("skipping {test}: {what} ({install})");
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
        cannot_run(test, &format!("no {program}"), install);
    }
    found
}
