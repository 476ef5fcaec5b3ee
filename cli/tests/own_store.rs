//! A store written outside flakeid, registered by scheme with `flakeid_stores`, is reached
//! by a tool built on `flakeid_cli::main` through `gen --claim`, `claims` and `serve`, and
//! by `flakeid_stores::open`; the stock `flakeid` refuses its scheme and names the ones it
//! has.
//!
//! This test binary is that tool as well (run with `FLAKEID_OWN_STORE_TOOL` set), so it
//! has its own `main` (`harness = false`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, ExitCode, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use flakeid::Layout;
use flakeid::claim::store::{ClaimRequest, Claimed, FromUrl, Repaired, StoreUrl, Ticket, Waiter};
use flakeid::claim::{ClaimError, ClaimInfo, ClaimStore, FileStore, NamespaceInfo, OpenOptions};

/// `dir:PATH`: a store of its own scheme and URL that keeps its claims as the file store
/// does, in PATH.
#[derive(Debug)]
struct DirStore {
    path: String,
    files: FileStore,
}

impl FromUrl for DirStore {
    fn from_url(url: &StoreUrl, _: &OpenOptions) -> Result<DirStore, ClaimError> {
        url.only(&[])?;
        let path = url.location();
        Ok(DirStore {
            files: FileStore::open(&path)?,
            path,
        })
    }
}

impl ClaimStore for DirStore {
    fn url(&self) -> String {
        format!("dir:{}", self.path)
    }
    fn claim(&self, request: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        self.files.claim(request)
    }
    fn renew(&self, claimed: &Claimed, until: u64) -> Result<(), ClaimError> {
        self.files.renew(claimed, until)
    }
    fn release(&self, claimed: &Claimed, until: u64) -> Result<(), ClaimError> {
        self.files.release(claimed, until)
    }
    fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        self.files.list(namespace)
    }
    fn bind_layout(&self, namespace: &str, layout: &str) -> Result<(), ClaimError> {
        self.files.bind_layout(namespace, layout)
    }
    fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
        self.files.namespaces()
    }
    fn repair(&self, namespace: &str, node: u64, until: u64) -> Result<Repaired, ClaimError> {
        self.files.repair(namespace, node, until)
    }
    fn join_line(&self, namespace: &str, instance: &str) -> Result<Option<Ticket>, ClaimError> {
        self.files.join_line(namespace, instance)
    }
    fn line(&self, namespace: &str) -> Result<Vec<Waiter>, ClaimError> {
        self.files.line(namespace)
    }
    fn leave_line(&self, ticket: &Ticket) {
        self.files.leave_line(ticket);
    }
}

const TOOL: &str = "FLAKEID_OWN_STORE_TOOL";

fn main() -> ExitCode {
    flakeid_stores::register::<DirStore>("dir").expect("dir is free");
    if std::env::var_os(TOOL).is_some() {
        return flakeid_cli::main();
    }
    let tests: [(&str, fn()); 4] = [
        ("the_library_opens_a_registered_scheme", library_opens),
        ("gen_and_claims_reach_a_registered_store", gen_and_claims),
        ("serve_reaches_a_registered_store", serve),
        (
            "the_stock_tool_refuses_the_scheme_and_names_its_own",
            stock_refuses,
        ),
    ];
    for (name, test) in tests {
        eprintln!("test {name} ...");
        test();
        eprintln!("test {name} ... ok");
    }
    ExitCode::SUCCESS
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("flakeid-own-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The tool built with the `dir` store registered.
fn tool(args: &[&str]) -> Output {
    Command::new(std::env::current_exe().unwrap())
        .env(TOOL, "1")
        .args(args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn library_opens() {
    let dir = temp_dir("lib");
    let url = format!("dir:{}", dir.display());
    let store = flakeid_stores::open(&url, &OpenOptions::default()).unwrap();
    assert_eq!(store.url(), url);
    let held = store
        .claim(&ClaimRequest {
            namespace: "lib",
            pool: 0..4,
            instance: "here",
        })
        .unwrap();
    assert_eq!(held.node, 0);
    let listed = store.list("lib").unwrap();
    assert_eq!(listed.len(), 1);
    assert!(flakeid_stores::Schemes.all().contains(&"dir".to_owned()));
    // The registration is refused a second time, and for a built-in scheme.
    assert!(flakeid_stores::register::<DirStore>("dir").is_err());
    assert!(flakeid_stores::register::<DirStore>("file").is_err());
    assert!(flakeid_stores::register::<DirStore>("9x").is_err());
    let _ = std::fs::remove_dir_all(dir);
}

fn ids_of(out: &Output) -> Vec<u64> {
    text(&out.stdout)
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

fn gen_and_claims() {
    let dir = temp_dir("gen");
    let url = format!("dir:{}", dir.display());
    let out = tool(&["gen", "--claim", &url, "--namespace", "own", "-n", "5"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ids = ids_of(&out);
    assert_eq!(ids.len(), 5);
    let layout = Layout::snowflake();
    assert!(
        ids.iter()
            .all(|&id| layout.decompose(id).unwrap().node == 0)
    );
    let stderr = text(&out.stderr);
    assert!(stderr.contains(&format!("in {url}")), "{stderr}");
    assert!(
        namespace_on_disk(&dir, "own"),
        "the file store's data under {dir:?}"
    );
    let out = tool(&["claims", "--claim", &url, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("\"own\""),
        "{}",
        text(&out.stdout)
    );
    let _ = std::fs::remove_dir_all(dir);
}

fn namespace_on_disk(dir: &Path, namespace: &str) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .any(|e| e.path().join(namespace).exists() || e.file_name() == namespace)
}

fn serve() {
    let dir = temp_dir("serve");
    let url = format!("dir:{}", dir.display());
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(TOOL, "1")
        .args([
            "serve",
            "--claim",
            &url,
            "--namespace",
            "served",
            "--shards",
            "1",
        ])
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let mut http = None;
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(30)) {
        if let Some(at) = line.find("HTTP on ") {
            http = line[at + "HTTP on ".len()..]
                .split([',', ' ', '"'])
                .next()
                .map(str::to_owned);
        }
        let ready = line.contains("ready=true");
        seen.push(line);
        if ready {
            break;
        }
    }
    let http = http.unwrap_or_else(|| panic!("serve did not listen: {seen:?}"));
    let body = reqwest::blocking::get(format!("{http}/v1/id"))
        .and_then(|r| r.error_for_status())
        .and_then(|r| r.text())
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let id: u64 = body
        .trim()
        .trim_matches(|c: char| !c.is_ascii_digit())
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap_or_else(|e| panic!("{body}: {e}"));
    assert_eq!(Layout::snowflake().decompose(id).unwrap().node, 0);
    assert!(
        seen.iter().any(|l| l.contains(&url)),
        "the claim's store in the log: {seen:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

fn stock_refuses() {
    let out = Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(["gen", "--claim", "dir:/nowhere", "-n", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("unknown scheme \"dir\"") && stderr.contains("file:DIR"),
        "{stderr}"
    );
}
