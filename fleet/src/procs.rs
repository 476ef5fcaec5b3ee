//! Real `flakeid gen` processes for the claim tests: spawned, watched, killed.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A running `flakeid gen`: its stderr lines as they come, its IDs as they are printed.
pub struct Gen {
    pub child: Child,
    stderr: Receiver<String>,
    pub ids: Arc<Mutex<Vec<u64>>>,
    reader: Option<JoinHandle<()>>,
}

pub fn spawn(args: &[&str]) -> Gen {
    let mut child = Command::new(crate::binary())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, stderr) = channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let ids = Arc::new(Mutex::new(Vec::new()));
    let out = child.stdout.take().unwrap();
    let sink = Arc::clone(&ids);
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            sink.lock()
                .unwrap()
                .push(line.trim().parse::<u64>().expect("an ID per line"));
        }
    });
    Gen {
        child,
        stderr,
        ids,
        reader: Some(reader),
    }
}

impl Gen {
    /// The next stderr line, within `bound`.
    /// Warnings (`flakeid: warning: ...`, such as a ZooKeeper store without a user) are
    /// passed over, and shown on the test's standard error.
    pub fn line(&self, bound: Duration) -> String {
        let deadline = Instant::now() + bound;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .stderr
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no stderr line within {bound:?}: {e}"));
            if !line.starts_with("flakeid: warning: ") {
                return line;
            }
            eprintln!("[gen] {line}");
        }
    }

    /// The node the process says it claimed.
    pub fn claimed_node(&self) -> u64 {
        let line = self.line(Duration::from_secs(10));
        let rest = line
            .strip_prefix("flakeid: claimed node ")
            .unwrap_or_else(|| panic!("not a claim line: {line}"));
        rest.split(' ').next().unwrap().parse().unwrap()
    }

    /// Waits (bounded) until it printed at least `n` IDs.
    pub fn wait_for_ids(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.ids.lock().unwrap().len() < n {
            assert!(Instant::now() < deadline, "fewer than {n} IDs within 20 s");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// `kill -9`, then every ID it printed.
    pub fn kill(mut self) -> Vec<u64> {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.reader.take().unwrap().join().unwrap();
        self.ids.lock().unwrap().clone()
    }

    /// Waits (bounded) for it to end; its exit status and every ID it printed.
    pub fn finish(mut self, bound: Duration) -> (std::process::ExitStatus, Vec<u64>) {
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > bound {
                self.child.kill().unwrap();
                self.child.wait().unwrap();
                panic!("still running after {bound:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        self.reader.take().unwrap().join().unwrap();
        (status, self.ids.lock().unwrap().clone())
    }
}

impl Drop for Gen {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Gen {
    /// Sends `signal` (`STOP`, `CONT`) to the process.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal}");
    }

    /// The stderr lines printed since the last read, without waiting.
    pub fn lines_now(&self) -> Vec<String> {
        self.stderr.try_iter().collect()
    }

    /// The IDs printed so far.
    pub fn ids_now(&self) -> Vec<u64> {
        self.ids.lock().unwrap().clone()
    }
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

/// The arguments of `flakeid gen` claiming in namespace `ns` of `url`, then `extra`.
pub fn gen_args<'a>(url: &'a str, ns: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["gen", "--claim", url, "--namespace", ns];
    args.extend_from_slice(extra);
    args
}

/// Whether no ID is in `all` twice.
pub(crate) fn unique(all: &[u64]) -> bool {
    all.iter().collect::<std::collections::HashSet<_>>().len() == all.len()
}
