//! A `flakeid serve` process for the service's tests: started on free loopback ports (the
//! addresses read from its first line on standard error), called with a real HTTP client,
//! signalled, and killed on drop. Every wait is bounded.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub struct Served {
    /// The lines on standard error up to and with the one naming the listeners.
    pub before: Vec<String>,
    pub child: Option<Child>,
    pub http: String,
    pub grpc: Option<String>,
    /// Standard error, line by line, as it comes.
    pub stderr: mpsc::Receiver<String>,
}

/// Starts `flakeid serve ARGS --listen 127.0.0.1:0` and waits (at most `bound`) for the
/// line that names its listeners, then for the one that says it is ready (its node ids
/// claimed).
pub fn serve(args: &[&str], bound: Duration) -> Served {
    serve_env(args, &[], bound)
}

/// [`serve`] with environment variables set (and `--listen` only if ARGS has none).
pub fn serve_env(args: &[&str], env: &[(&str, &str)], bound: Duration) -> Served {
    let mut s = serve_listening(args, env, bound);
    let deadline = Instant::now() + bound;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match s.stderr.recv_timeout(left) {
            Ok(line) => {
                let ready = line.contains("ready=true") || line.contains("\"ready\":true");
                s.before.push(line);
                if ready {
                    return s;
                }
            }
            Err(e) => {
                let status = s.child.as_mut().and_then(|c| {
                    let _ = c.kill();
                    c.wait().ok()
                });
                panic!(
                    "flakeid serve {args:?} listened but was not ready ({e:?} within {bound:?}, {status:?}): {:?}",
                    s.before
                );
            }
        }
    }
}

/// Starts `flakeid serve` as [`serve_env`] does and returns once it listens, before its
/// node ids are claimed.
pub fn serve_listening(args: &[&str], env: &[(&str, &str)], bound: Duration) -> Served {
    let listen: &[&str] = if args.contains(&"--listen") {
        &[]
    } else {
        &["--listen", "127.0.0.1:0"]
    };
    let mut child = Command::new(crate::binary())
        .arg("serve")
        .args(args)
        .args(listen)
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start flakeid serve");
    let (tx, rx) = mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            eprintln!("[serve {}] {line}", std::process::id());
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + bound;
    let mut seen: Vec<String> = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match rx.recv_timeout(left) {
            Ok(line) => line,
            Err(e) => {
                let _ = child.kill();
                let status = child.wait().ok();
                panic!(
                    "flakeid serve {args:?} did not start ({e:?} within {bound:?}, {status:?}): {seen:?}"
                );
            }
        };
        seen.push(line.clone());
        if let Some(at) = line.find("HTTP on ") {
            let rest = &line[at + "HTTP on ".len()..];
            let http = rest.split([',', ' ', '"']).next().unwrap().to_string();
            let scheme = if http.starts_with("https://") {
                "https"
            } else {
                "http"
            };
            let grpc = line.find("gRPC on ").map(|g| {
                line[g + "gRPC on ".len()..]
                    .split([' ', '"'])
                    .next()
                    .unwrap()
                    .trim()
                    .to_string()
            });
            return Served {
                before: seen,
                child: Some(child),
                http,
                grpc: grpc.map(|g| format!("{scheme}://{g}")),
                stderr: rx,
            };
        }
    }
}

impl Served {
    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal}");
    }

    /// Whether the process has exited, without waiting.
    pub fn exited(&mut self) -> bool {
        self.child
            .as_mut()
            .is_none_or(|c| c.try_wait().unwrap().is_some())
    }

    /// Waits (at most `bound`) for the process to exit; its status, and the rest of its
    /// standard error.
    pub fn wait(&mut self, bound: Duration) -> (std::process::ExitStatus, Vec<String>) {
        let mut child = self.child.take().unwrap();
        let deadline = Instant::now() + bound;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("flakeid serve did not exit within {bound:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut lines = Vec::new();
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_millis(200)) {
            lines.push(line);
        }
        (status, lines)
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.http)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// An HTTP/1.1 client with a bound on every request.
pub fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// An HTTPS client that trusts only the CA in the PEM file `ca` (and, with `http1`, speaks
/// only HTTP/1.1, keeping its connection for the next request), with a bound on every
/// request.
pub fn https_client(ca: &std::path::Path, http1: bool) -> reqwest::blocking::Client {
    let ca = reqwest::Certificate::from_pem(&std::fs::read(ca).unwrap()).unwrap();
    let mut b = reqwest::blocking::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(ca)
        .timeout(Duration::from_secs(10));
    if http1 {
        b = b.http1_only();
    }
    b.build().unwrap()
}

/// IDs from a JSON array of decimal strings.
pub fn ids_of_json(body: &str) -> Vec<u64> {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {body}"))
        .iter()
        .map(|x| x.as_str().unwrap().parse().unwrap())
        .collect()
}

/// A series' value in Prometheus text (`name{labels}` exactly as rendered, or a bare
/// name); `None` if absent.
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (key, value) = l.rsplit_once(' ')?;
        (key == series).then(|| value.parse().ok())?
    })
}

/// The sum of every series of a metric whose labels include all of `labels` (`k="v"`).
pub fn metric_sum(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(key, _)| {
            key.split('{').next() == Some(name) && labels.iter().all(|want| key.contains(want))
        })
        .filter_map(|(_, v)| v.parse::<f64>().ok())
        .sum()
}

/// The process's open descriptors (Linux: `/proc/PID/fd`).
pub fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// The CPU time the process has used, user and system (Linux: `/proc/PID/stat`).
pub fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command (which may hold spaces) in parentheses.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the command.
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 1000 / clock_ticks())
}

/// Clock ticks per second (`getconf CLK_TCK`, 100 on Linux).
fn clock_ticks() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// Polls `f` every 20 ms until it is true; false after `bound`.
pub fn until(bound: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + bound;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads `child`'s standard error line by line until one contains `pattern` (at most
/// `bound`); the lines read, that one last. Panics if it never comes.
pub fn lines_until(child: &mut Child, pattern: &str, bound: Duration) -> Vec<String> {
    let err = child.stderr.take().expect("standard error piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + bound;
    let mut lines = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                let found = line.contains(pattern);
                lines.push(line);
                if found {
                    return lines;
                }
            }
            Err(e) => panic!("no line with {pattern:?} ({e:?} within {bound:?}): {lines:?}"),
        }
    }
}
