//! `flakeid serve`'s lifecycle with a supervisor's eyes: it listens before its node ids
//! are claimed (alive, not ready, gRPC health NOT_SERVING for `""` and the service), a
//! SIGTERM while it claims ends it with exit 0 holding nothing, the default shard count
//! follows the CPUs it may use, the token file is reloaded on SIGHUP and on change, logs
//! come as JSON with levels and RFC 3339 timestamps, and every documented metric is there
//! from the start.

use flakeid_fleet::service;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use flakeid::claim::{ClaimStore, Claims, FileStore, NodeState};
use flakeid::{Generator, Layout};
use service::{client, serve, serve_listening, until};

const START: Duration = Duration::from_secs(20);

fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flakeid-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The gRPC health of `service` ("" for the whole server).
fn health(rt: &tokio::runtime::Runtime, grpc: &str, service: &str) -> i32 {
    rt.block_on(async {
        let channel = tonic::transport::Channel::from_shared(grpc.to_string())
            .unwrap()
            .connect()
            .await
            .unwrap();
        tonic_health::pb::health_client::HealthClient::new(channel)
            .check(tonic_health::pb::HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner()
            .status
    })
}

/// While its only node id is held by another, the server listens: `/healthz` 200,
/// `/readyz` 503 saying it is claiming, the mint routes a JSON 503, gRPC health
/// NOT_SERVING for the whole server (`""`, what probes ask by default) and for the ID
/// service. Once the id comes free it claims it and both say SERVING.
#[test]
fn it_listens_while_claiming_and_health_follows_readiness() {
    use tonic_health::pb::health_check_response::ServingStatus;
    let dir = temp_dir("serve-claiming");
    let store = FileStore::open(&dir).unwrap();
    let other = Generator::builder(Layout::snowflake())
        .build_claimed(Claims::new(store).namespace("wait").nodes(0..1))
        .unwrap();
    let url = format!("file:{}", dir.display());
    let args = [
        "--claim",
        &url,
        "--namespace",
        "wait",
        "--nodes",
        "0..1",
        "--shards",
        "1",
        "--grpc-listen",
        "127.0.0.1:0",
    ];
    let s = serve_listening(&args, &[], START);
    let c = client();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let grpc = s.grpc.clone().unwrap();
    assert_eq!(c.get(s.url("/healthz")).send().unwrap().status(), 200);
    let r = c.get(s.url("/readyz")).send().unwrap();
    assert_eq!(r.status(), 503);
    assert!(r.text().unwrap().contains("claiming"));
    let r = c.get(s.url("/v1/id")).send().unwrap();
    assert_eq!(r.status(), 503);
    assert!(r.headers().contains_key("retry-after"));
    let v: serde_json::Value = serde_json::from_str(&r.text().unwrap()).unwrap();
    assert!(v["error"].as_str().unwrap().contains("claiming"), "{v}");
    for name in ["", "flakeid.v1.IdService"] {
        assert_eq!(
            health(&rt, &grpc, name),
            ServingStatus::NotServing as i32,
            "health of {name:?} while claiming"
        );
    }
    drop(other);
    assert!(
        until(Duration::from_secs(30), || c
            .get(s.url("/readyz"))
            .send()
            .is_ok_and(|r| r.status() == 200)),
        "never ready after the id came free"
    );
    assert!(until(Duration::from_secs(5), || {
        ["", "flakeid.v1.IdService"]
            .iter()
            .all(|n| health(&rt, &grpc, n) == ServingStatus::Serving as i32)
    }));
    assert_eq!(c.get(s.url("/v1/id")).send().unwrap().status(), 200);
    drop(s);
    std::fs::remove_dir_all(&dir).ok();
}

/// SIGTERM while the server waits for node ids (three shards, one of three ids held by
/// another, a pool wait of two minutes) ends it at once with exit 0 (the claim called
/// off, not waited out within the drain bound of a minute), and it holds none of the ids
/// it was waiting for.
#[test]
fn sigterm_while_claiming_exits_0_holding_nothing() {
    let dir = temp_dir("serve-term-claiming");
    let store = FileStore::open(&dir).unwrap();
    let other = Generator::builder(Layout::snowflake())
        .build_claimed(
            Claims::new(FileStore::open(&dir).unwrap())
                .namespace("t")
                .nodes(1..2),
        )
        .unwrap();
    let url = format!("file:{}", dir.display());
    let mut s = serve_listening(
        &[
            "--claim",
            &url,
            "--namespace",
            "t",
            "--nodes",
            "0..3",
            "--shards",
            "3",
            "--pool-wait",
            "120s",
            "--drain",
            "60s",
        ],
        &[],
        START,
    );
    s.signal("TERM");
    let asked = Instant::now();
    let (status, lines) = s.wait(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{lines:?}");
    assert!(
        asked.elapsed() < Duration::from_secs(20),
        "took {:?}",
        asked.elapsed()
    );
    let held: Vec<u64> = store
        .list("t")
        .unwrap()
        .into_iter()
        .filter(|i| i.state == NodeState::Held)
        .map(|i| i.node)
        .collect();
    assert_eq!(held, [1], "only the other holder's id is held");
    drop(other);
    std::fs::remove_dir_all(&dir).ok();
}

/// The shard count: with no `--shards`, the CPUs the process may use. Under a CPU quota
/// of one CPU (a cgroup the test makes, as root), or pinned to one core with `taskset`
/// where it cannot, the server runs one shard, and its log says why.
#[test]
fn the_default_shard_count_follows_the_cpus_it_may_use() {
    let bin = flakeid_fleet::binary();
    let name = format!("flakeid-test-{}", std::process::id());
    // cgroup v2 (cpu.max), else v1's cpu controller (cfs quota and period).
    let v2 = PathBuf::from("/sys/fs/cgroup").join(&name);
    let v1 = PathBuf::from("/sys/fs/cgroup/cpu").join(&name);
    let made = |dir: &PathBuf, files: &[(&str, &str)]| {
        let ok = std::fs::create_dir(dir).is_ok()
            && files
                .iter()
                .all(|(f, v)| std::fs::write(dir.join(f), v).is_ok());
        if !ok {
            let _ = std::fs::remove_dir(dir);
        }
        ok
    };
    // Only where /sys/fs/cgroup is itself cgroup v2 (on a hybrid host it is a tmpfs).
    let unified = std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    let cgroup = if unified && made(&v2, &[("cpu.max", "100000 100000")]) {
        Some(v2)
    } else if made(
        &v1,
        &[
            ("cpu.cfs_period_us", "100000"),
            ("cpu.cfs_quota_us", "100000"),
        ],
    ) {
        Some(v1)
    } else {
        None
    };
    let quota = cgroup.is_some();
    let cgroup = cgroup.unwrap_or_default();
    let mut command = if quota {
        eprintln!("a cgroup of one CPU: {}", cgroup.display());
        let mut c = std::process::Command::new("sh");
        c.arg("-c").arg(format!(
            "echo $$ > {}/cgroup.procs && exec {} serve --node 1 --listen 127.0.0.1:0",
            cgroup.display(),
            bin.display()
        ));
        c
    } else {
        eprintln!("no cgroup to make here: pinned to one core with taskset instead");
        let mut c = std::process::Command::new("taskset");
        c.args(["-c", "0"])
            .arg(&bin)
            .args(["serve", "--node", "1", "--listen", "127.0.0.1:0"]);
        c
    };
    let mut child = command
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = service::lines_until(&mut child, "HTTP on", START);
    let _ = child.kill();
    let _ = child.wait();
    if quota {
        let _ = std::fs::remove_dir(&cgroup);
    }
    let line = lines.last().unwrap();
    assert!(line.contains("1 shard of"), "{lines:?}");
    assert!(line.contains("cgroup CPU quota"), "{line}");
}

/// A token file is read again on SIGHUP (two tokens during a rollover, both accepted)
/// and when it changes (the old token then refused), each reload logged; a file that no
/// longer reads keeps the tokens in use.
#[test]
fn the_token_file_is_reloaded_on_sighup_and_on_change() {
    let dir = temp_dir("serve-token-reload");
    let file = dir.join("token");
    flakeid_fleet::write_secret(&file, "old-token-1\n");
    let path = file.display().to_string();
    let mut s = serve(
        &["--node", "1", "--shards", "1", "--token-file", &path],
        START,
    );
    let c = client();
    let status = |token: &str| {
        c.get(s.url("/v1/id"))
            .header("Authorization", format!("Bearer {token}"))
            .send()
            .unwrap()
            .status()
    };
    assert_eq!(status("old-token-1"), 200);
    assert_eq!(status("new-token-2"), 401);
    std::fs::write(&file, "old-token-1\nnew-token-2\n").unwrap();
    s.signal("HUP");
    assert!(until(Duration::from_secs(10), || status("new-token-2") == 200));
    assert_eq!(
        status("old-token-1"),
        200,
        "both tokens during the rollover"
    );
    // No signal: the change is seen by itself.
    std::fs::write(&file, "new-token-2\n").unwrap();
    assert!(
        until(Duration::from_secs(10), || status("old-token-1") == 401),
        "the changed file was not reloaded"
    );
    std::fs::write(&file, "a\nb\nc\n").unwrap();
    s.signal("HUP");
    s.signal("TERM");
    let (_, after) = s.wait(Duration::from_secs(20));
    let log = s.before.join("\n") + "\n" + &after.join("\n");
    assert!(log.contains("token file reloaded"), "{log}");
    assert!(log.contains("token file reload failed"), "{log}");
    for token in ["old-token-1", "new-token-2"] {
        assert!(!log.contains(token), "a token shows in the log");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `--log-format json`: one JSON object a line, with an RFC 3339 UTC timestamp, a level,
/// a target and the event's fields: the listeners, readiness, the drain; with
/// `--access-log`, a line per request with its route, status and request id.
/// `FLAKEID_LOG=warn` keeps the info lines out.
#[test]
fn logs_are_json_lines_with_levels_and_timestamps() {
    let mut s = serve(
        &[
            "--node",
            "1",
            "--shards",
            "1",
            "--log-format",
            "json",
            "--access-log",
        ],
        START,
    );
    let c = client();
    let r = c
        .get(s.url("/v1/id"))
        .header("x-request-id", "trace-42")
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-request-id"], "trace-42");
    // A client's id of 8 KB (or with odd characters) is not echoed or logged: the server
    // makes its own.
    for odd in ["x".repeat(8 << 10), "a b".into()] {
        let r = c
            .get(s.url("/v1/id"))
            .header("x-request-id", &odd)
            .send()
            .unwrap();
        assert_eq!(r.status(), 200);
        let echoed = r.headers()["x-request-id"].to_str().unwrap().to_string();
        assert!(echoed != odd && echoed.len() <= 32, "{echoed}");
    }
    s.signal("TERM");
    let (status, after) = s.wait(Duration::from_secs(20));
    assert!(status.success());
    let events: Vec<serde_json::Value> = s
        .before
        .iter()
        .chain(&after)
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    for e in &events {
        let t = e["timestamp"].as_str().unwrap();
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{t}");
        assert!(["INFO", "WARN", "ERROR", "DEBUG"].contains(&e["level"].as_str().unwrap()));
        assert!(e["target"].is_string());
    }
    let find = |message: &str| {
        events
            .iter()
            .find(|e| e["message"].as_str().is_some_and(|m| m.contains(message)))
            .unwrap_or_else(|| panic!("no {message:?} event: {events:?}"))
    };
    assert!(find("HTTP on")["shards"] == 1);
    assert_eq!(find("ready")["ready"], true);
    let access = find("request");
    assert_eq!(
        (access["route"].as_str(), access["status"].as_u64()),
        (Some("/v1/id"), Some(200))
    );
    assert_eq!(access["request_id"], "trace-42");
    // The peer as an address, not a Rust Debug form.
    let peer = access["peer"].as_str().unwrap();
    assert!(
        peer.starts_with("127.0.0.1:") && peer.parse::<std::net::SocketAddr>().is_ok(),
        "{peer}"
    );
    for e in events.iter().filter(|e| e["message"] == "request") {
        assert!(e["request_id"].as_str().unwrap().len() <= 32, "{e}");
    }
    assert!(find("draining")["drain_ms"].is_u64());
    find("stopped");

    // A filter by target: the tool's own lines at info, the service's at warn only.
    let mut quiet = serve_listening(
        &["--node", "1", "--shards", "1"],
        &[("FLAKEID_LOG", "warn,flakeid::serve=info")],
        START,
    );
    let c = client();
    assert!(until(START, || c
        .get(quiet.url("/readyz"))
        .send()
        .is_ok_and(|r| r.status() == 200)));
    quiet.signal("TERM");
    let (_, after) = quiet.wait(Duration::from_secs(20));
    let lines: Vec<&String> = quiet.before.iter().chain(&after).collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("stopped; every claim released")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .all(|l| !(l.contains("INFO") && l.contains("flakeid_serve:"))),
        "{lines:?}"
    );
}

/// A namespace moved away under a running server is not made again from nothing: the
/// renewal finds the claim lost, the in-process re-claim finds the namespace gone and
/// stays not ready, saying so and what to do (restore it, or `claims --repair`), without
/// creating the namespace; once it is restored the server claims and serves again, above
/// every ID it minted before.
#[test]
fn a_namespace_moved_away_is_not_made_again_from_nothing() {
    let dir = temp_dir("vanished");
    let url = format!("file:{}", dir.display());
    let mut s = serve(
        &[
            "--claim",
            &url,
            "--namespace",
            "moved",
            "--nodes",
            "0..4",
            "--shards",
            "1",
            "--window",
            "2s",
        ],
        Duration::from_secs(30),
    );
    let c = client();
    let mint = |c: &reqwest::blocking::Client| -> Option<Vec<u64>> {
        let r = c.get(s.url("/v1/ids?count=100")).send().ok()?;
        (r.status() == 200).then(|| service::ids_of_json(&r.text().unwrap()))
    };
    let before = mint(&c).expect("IDs before the move");
    let (ns, aside) = (dir.join("moved"), dir.join("moved-aside"));
    std::fs::rename(&ns, &aside).unwrap();
    let mut seen = Vec::new();
    let refused = loop {
        let line = s
            .stderr
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("no refusal of the re-claim ({e}): {seen:#?}"));
        if line.contains("claiming node ids failed") {
            break line;
        }
        seen.push(line);
    };
    assert!(
        refused.contains("is gone") && refused.contains("--repair"),
        "{refused}"
    );
    assert!(!ns.exists(), "the re-claim made the namespace again");
    let r = c.get(s.url("/readyz")).send().unwrap();
    assert_eq!(r.status(), 503);
    let why = r.text().unwrap();
    assert!(why.contains("is gone"), "{why}");
    assert_eq!(c.get(s.url("/v1/id")).send().unwrap().status(), 503);
    // Restored: claims go on.
    std::fs::rename(&aside, &ns).unwrap();
    assert!(
        until(Duration::from_secs(60), || mint(&c).is_some()),
        "not serving after the namespace was restored"
    );
    let after = mint(&c).unwrap();
    assert!(after.iter().all(|a| before.iter().all(|b| a > b)));
    s.signal("TERM");
    let (status, _) = s.wait(Duration::from_secs(30));
    assert!(status.success());
    let _ = std::fs::remove_dir_all(&dir);
}
