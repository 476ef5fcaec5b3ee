//! `flakeid serve` with real clients: every HTTP route and form over HTTP/1.1 and HTTP/2,
//! the errors and what they say, a batch across exhausted ticks, the gRPC service (tonic's
//! generated client, health, reflection), and SIGTERM releasing the claims. Coordinators
//! are in `etcd.rs` and `zookeeper.rs`.

use flakeid_fleet::service;

use std::collections::HashSet;
use std::time::Duration;

use flakeid::Layout;
use service::{client, ids_of_json, serve};

const START: Duration = Duration::from_secs(20);

fn strictly_increasing(ids: &[u64]) -> bool {
    ids.windows(2).all(|w| w[0] < w[1])
}

#[test]
fn every_http_route_answers_in_each_form() {
    let s = serve(&["--node", "1", "--shards", "2"], START);
    let c = client();
    let layout = Layout::snowflake();
    let nodes = [1u64, 2];

    // One ID.
    let r = c.get(s.url("/v1/id")).send().unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    let v: serde_json::Value = serde_json::from_str(&r.text().unwrap()).unwrap();
    let one: u64 = v["id"].as_str().unwrap().parse().unwrap();
    assert!(nodes.contains(&layout.decompose(one).unwrap().node));

    // A batch, as JSON strings, as lines, packed.
    let json = ids_of_json(
        &c.get(s.url("/v1/ids?count=1000"))
            .send()
            .unwrap()
            .text()
            .unwrap(),
    );
    assert_eq!(json.len(), 1000);
    assert!(strictly_increasing(&json), "JSON batch not increasing");
    let lines: Vec<u64> = c
        .get(s.url("/v1/ids?count=500"))
        .header("Accept", "text/plain")
        .send()
        .unwrap()
        .text()
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(lines.len(), 500);
    assert!(strictly_increasing(&lines));
    let r = c
        .get(s.url("/v1/ids?count=2000"))
        .header("Accept", "application/octet-stream")
        .send()
        .unwrap();
    assert_eq!(r.headers()["content-type"], "application/octet-stream");
    let bytes = r.bytes().unwrap();
    assert_eq!(bytes.len(), 2000 * 8);
    let packed: Vec<u64> = bytes
        .chunks(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert!(strictly_increasing(&packed));
    for id in json.iter().chain(&lines).chain(&packed) {
        assert!(nodes.contains(&layout.decompose(*id).unwrap().node));
    }
    let all: HashSet<u64> = [one]
        .iter()
        .chain(&json)
        .chain(&lines)
        .chain(&packed)
        .copied()
        .collect();
    assert_eq!(
        all.len(),
        1 + 1000 + 500 + 2000,
        "a duplicate across requests"
    );

    // Decode: a JSON array of strings and numbers, and lines; the fields of decode --json.
    let r = c
        .post(s.url("/v1/decode"))
        .body(r#"["2116500430648709162", 2116500430648709163]"#)
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let rows: serde_json::Value = serde_json::from_str(&r.text().unwrap()).unwrap();
    assert_eq!(rows[0]["id"], "2116500430648709162");
    assert_eq!(rows[0]["time"], "2026-10-31T12:00:00.000Z");
    assert_eq!(rows[0]["sequence"], 42);
    assert_eq!(rows[0]["datacenter"], 3);
    assert_eq!(rows[0]["worker"], 17);
    assert_eq!(rows[1]["sequence"], 43);
    let tool = std::process::Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(["decode", "--json", "2116500430648709162"])
        .output()
        .unwrap();
    let ndjson = c
        .post(s.url("/v1/decode"))
        .header("Accept", "application/x-ndjson")
        .body("2116500430648709162\n")
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert_eq!(
        ndjson,
        String::from_utf8(tool.stdout).unwrap(),
        "not decode --json's row"
    );

    // The layout and the node ids.
    let v: serde_json::Value =
        serde_json::from_str(&c.get(s.url("/v1/layout")).send().unwrap().text().unwrap()).unwrap();
    assert_eq!(v["layout"]["preset"], "snowflake");
    let served: Vec<u64> = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["node"].as_u64().unwrap())
        .collect();
    assert_eq!(served, nodes);
    assert!(v["nodes"][0]["claim"].is_null());

    // Probes and metrics.
    assert_eq!(c.get(s.url("/healthz")).send().unwrap().status(), 200);
    assert_eq!(c.get(s.url("/readyz")).send().unwrap().status(), 200);
    let metrics = c.get(s.url("/metrics")).send().unwrap().text().unwrap();
    assert!(
        metrics.contains("flakeid_ids_minted_total 3501"),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"flakeid_http_requests_total{route="/v1/ids",status="200"} 3"#),
        "{metrics}"
    );
    assert!(
        metrics.contains("flakeid_http_request_duration_seconds_bucket"),
        "{metrics}"
    );

    // HTTP/2 (prior knowledge, as gRPC-style clients and proxies speak it).
    let h2 = reqwest::blocking::Client::builder()
        .http2_prior_knowledge()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let r = h2.get(s.url("/v1/ids?count=10")).send().unwrap();
    assert_eq!(r.version(), reqwest::Version::HTTP_2);
    assert!(strictly_increasing(&ids_of_json(&r.text().unwrap())));
}

#[test]
fn bad_requests_are_400_and_say_what_to_send() {
    let s = serve(&["--node", "1", "--shards", "1"], START);
    let c = client();
    for (path, says) in [
        ("/v1/ids", "no count: give count=N with N from 1 to 100000"),
        ("/v1/ids?count=0", "count=0 asks for nothing"),
        ("/v1/ids?count=100001", "more than one request may ask for"),
        ("/v1/ids?count=ten", "is not a number"),
    ] {
        let r = c.get(s.url(path)).send().unwrap();
        assert_eq!(r.status(), 400, "{path}");
        let body = r.text().unwrap();
        assert!(body.contains(says), "{path}: {body}");
    }
    for (body, says) in [
        ("123\nnot-an-id\n", "line 2: not an ID"),
        (
            r#"["1", true]"#,
            "element 1 of the array: neither a string nor a number",
        ),
        (r#"["1", -5]"#, "element 1 of the array"),
        ("[1, 2", "not a JSON array of IDs"),
        (&*u64::MAX.to_string(), "send IDs of the server's layout"),
    ] {
        let r = c
            .post(s.url("/v1/decode"))
            .body(body.to_string())
            .send()
            .unwrap();
        assert_eq!(r.status(), 400, "{body}");
        let text = r.text().unwrap();
        assert!(text.contains(says), "{body}: {text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(v["error"].is_string());
    }
    let r = c.get(s.url("/v2/nothing")).send().unwrap();
    assert_eq!(r.status(), 404);
    assert!(r.text().unwrap().contains("GET /v1/id"));
}

/// 16 IDs a tick: a batch of 5,000 waits across at least 312 tick boundaries, and stays
/// strictly increasing and unique.
#[test]
fn a_batch_spans_exhausted_ticks() {
    let layout = "seq=4,node=2,time=50,epoch=2025-01-01T00:00:00Z";
    let s = serve(&["--node", "1", "--shards", "1", "--layout", layout], START);
    let r = client().get(s.url("/v1/ids?count=5000")).send().unwrap();
    assert_eq!(r.status(), 200);
    let ids = ids_of_json(&r.text().unwrap());
    assert_eq!(ids.len(), 5000);
    assert!(strictly_increasing(&ids));
    let l: Layout = layout.parse().unwrap();
    let first = l.decompose(ids[0]).unwrap().ticks;
    let last = l.decompose(ids[4999]).unwrap().ticks;
    assert!(last - first >= 312, "spanned {} ticks", last - first);
}

#[test]
fn grpc_next_stream_decode_health_and_reflection() {
    use flakeid_serve::grpc::v1::id_service_client::IdServiceClient;
    use flakeid_serve::grpc::v1::{DecodeRequest, NextRequest, StreamRequest};
    use tokio_stream::StreamExt;

    let s = serve(
        &[
            "--node",
            "3",
            "--shards",
            "2",
            "--grpc-listen",
            "127.0.0.1:0",
        ],
        START,
    );
    let grpc = s.grpc.clone().expect("a gRPC listener");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut c = IdServiceClient::connect(grpc.clone()).await.unwrap();
        let one = c
            .next(NextRequest { count: 0 })
            .await
            .unwrap()
            .into_inner()
            .ids;
        assert_eq!(one.len(), 1);
        let many = c
            .next(NextRequest { count: 1000 })
            .await
            .unwrap()
            .into_inner()
            .ids;
        assert_eq!(many.len(), 1000);
        assert!(strictly_increasing(&many) && many[0] > one[0]);
        let e = c.next(NextRequest { count: 100_001 }).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument);
        assert!(e.message().contains("use Stream"), "{}", e.message());

        let mut stream = c
            .stream(StreamRequest {
                count: 10_000,
                batch: 1000,
            })
            .await
            .unwrap()
            .into_inner();
        let mut streamed = Vec::new();
        let mut messages = 0;
        while let Some(m) = stream.next().await {
            let m = m.unwrap();
            assert!(m.ids.len() <= 1000);
            streamed.extend(m.ids);
            messages += 1;
        }
        assert_eq!((streamed.len(), messages), (10_000, 10));
        assert!(strictly_increasing(&streamed));
        // One rule for Next and Stream: a count of 0 (unset) is one ID.
        let mut zero = c
            .stream(StreamRequest { count: 0, batch: 0 })
            .await
            .unwrap()
            .into_inner();
        let mut got = Vec::new();
        while let Some(m) = zero.next().await {
            got.extend(m.unwrap().ids);
        }
        assert_eq!(got.len(), 1, "Stream(count=0) as Next(count=0)");

        let decoded = c
            .decode(DecodeRequest {
                ids: vec![2116500430648709162],
            })
            .await
            .unwrap()
            .into_inner()
            .ids;
        let d = &decoded[0];
        assert_eq!(
            (d.sequence, d.datacenter, d.worker),
            (42, Some(3), Some(17))
        );
        assert_eq!(d.time, "2026-10-31T12:00:00.000Z");
        let e = c
            .decode(DecodeRequest {
                ids: vec![u64::MAX],
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument);

        // The standard health service, for the ID service by name.
        let channel = tonic::transport::Channel::from_shared(grpc.clone())
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
        let status = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: "flakeid.v1.IdService".into(),
            })
            .await
            .unwrap()
            .into_inner()
            .status;
        assert_eq!(
            status,
            tonic_health::pb::health_check_response::ServingStatus::Serving as i32
        );

        // Server reflection lists the service, so generic clients (grpcurl) can call it.
        use tonic_reflection::pb::v1::ServerReflectionRequest;
        use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
        use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
        use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
        let mut reflection = ServerReflectionClient::new(channel);
        let request = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        };
        let mut answers = reflection
            .server_reflection_info(tokio_stream::iter([request]))
            .await
            .unwrap()
            .into_inner();
        let answer = answers.next().await.unwrap().unwrap();
        let Some(MessageResponse::ListServicesResponse(list)) = answer.message_response else {
            panic!("no service list: {answer:?}");
        };
        let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
        assert!(
            names.contains(&"flakeid.v1.IdService".to_string()),
            "{names:?}"
        );
    });
}

/// SIGTERM: the server stops accepting, finishes, releases its claims and exits 0; a
/// successor on the same pool starts at once (no waiting out the 30 s window) and mints
/// above every ID of the first.
#[test]
fn sigterm_releases_the_claims_and_a_successor_starts_at_once() {
    let dir = std::env::temp_dir().join(format!("flakeid-serve-term-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("file:{}", dir.display());
    let args = [
        "--claim",
        &url,
        "--nodes",
        "0..1",
        "--shards",
        "1",
        "--window",
        "30s",
        "--pool-wait",
        "0s",
    ];
    let mut first = serve(&args, START);
    let c = client();
    let before = ids_of_json(
        &c.get(first.url("/v1/ids?count=100"))
            .send()
            .unwrap()
            .text()
            .unwrap(),
    );
    first.signal("TERM");
    let (status, lines) = first.wait(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0), "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("stopped")), "{lines:?}");

    let started = std::time::Instant::now();
    let second = serve(&args, START);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the successor waited"
    );
    let after = ids_of_json(
        &c.get(second.url("/v1/ids?count=100"))
            .send()
            .unwrap()
            .text()
            .unwrap(),
    );
    let l = Layout::snowflake();
    assert_eq!(l.decompose(after[0]).unwrap().node, 0);
    assert!(after[0] > *before.last().unwrap());
    drop(second);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_node_or_a_claim_is_required_and_flags_have_environment_variables() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("give --node N") && err.contains("--claim URL"),
        "{err}"
    );
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for var in [
        "FLAKEID_LISTEN",
        "FLAKEID_GRPC_LISTEN",
        "FLAKEID_CLAIM",
        "FLAKEID_NODE",
    ] {
        assert!(help.contains(var), "--help lacks {var}");
    }
    // The environment variable works as the flag does.
    let s = std::process::Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("FLAKEID_NODE", "not-a-number")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&s.stderr).contains("non-negative integer"));
}

/// With a token, the mint and decode routes (HTTP and gRPC) answer 401 / UNAUTHENTICATED
/// without it or with a wrong one; the probes, /metrics, gRPC health stay open; and the
/// token shows up in no output: not on standard error, in no answer, not in /metrics.
#[test]
fn a_token_guards_mint_and_decode_and_never_shows() {
    const SECRET: &str = "tok-Zx81-9f3c-secret";
    let file = std::env::temp_dir().join(format!("flakeid-token-{}", std::process::id()));
    flakeid_fleet::write_secret(&file, &format!("{SECRET}\n"));
    let path = file.display().to_string();
    let mut s = serve(
        &[
            "--node",
            "1",
            "--shards",
            "1",
            "--grpc-listen",
            "127.0.0.1:0",
            "--token-file",
            &path,
        ],
        START,
    );
    let c = client();
    let mut seen = String::new();
    for route in ["/v1/id", "/v1/ids?count=2", "/v1/layout"] {
        for auth in [None, Some("Bearer wrong"), Some("tok-Zx81-9f3c-secret")] {
            let mut r = c.get(s.url(route));
            if let Some(a) = auth {
                r = r.header("Authorization", a);
            }
            let r = r.send().unwrap();
            assert_eq!(r.status(), 401, "{route} with {auth:?}");
            assert_eq!(r.headers()["www-authenticate"], "Bearer");
            seen += &r.text().unwrap();
        }
        let r = c
            .get(s.url(route))
            .header("Authorization", format!("Bearer {SECRET}"))
            .send()
            .unwrap();
        assert_eq!(r.status(), 200, "{route} with the token");
        seen += &r.text().unwrap();
    }
    let r = c
        .post(s.url("/v1/decode"))
        .body("2116500430648709162")
        .send()
        .unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.text().unwrap().contains("Authorization: Bearer <token>"));
    for open in ["/healthz", "/readyz", "/metrics"] {
        let r = c.get(s.url(open)).send().unwrap();
        assert_eq!(r.status(), 200, "{open} must stay open for probes");
        seen += &r.text().unwrap();
    }

    let grpc = s.grpc.clone().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use flakeid_serve::grpc::v1::NextRequest;
        use flakeid_serve::grpc::v1::id_service_client::IdServiceClient;
        let channel = tonic::transport::Channel::from_shared(grpc)
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut plain = IdServiceClient::new(channel.clone());
        let e = plain.next(NextRequest { count: 1 }).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unauthenticated);
        seen += e.message();
        let bearer: tonic::metadata::MetadataValue<_> = format!("Bearer {SECRET}").parse().unwrap();
        let mut authed =
            IdServiceClient::with_interceptor(channel.clone(), move |mut r: tonic::Request<()>| {
                r.metadata_mut().insert("authorization", bearer.clone());
                Ok(r)
            });
        let ids = authed
            .next(NextRequest { count: 3 })
            .await
            .unwrap()
            .into_inner()
            .ids;
        assert_eq!(ids.len(), 3);
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
        health
            .check(tonic_health::pb::HealthCheckRequest {
                service: String::new(),
            })
            .await
            .expect("health stays open");
    });

    s.signal("TERM");
    let (status, after) = s.wait(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0));
    let stderr = s.before.join("\n") + &after.join("\n");
    for (what, text) in [("standard error", &stderr), ("answers and /metrics", &seen)] {
        assert!(!text.contains(SECRET), "the token shows in {what}");
    }
    assert!(
        !stderr.contains("WARNING"),
        "a loopback server with a token: {stderr}"
    );

    // The same from FLAKEID_TOKEN; a wrong token file is a clear error naming the file.
    let s = service::serve_env(
        &["--node", "1", "--shards", "1"],
        &[("FLAKEID_TOKEN", SECRET)],
        START,
    );
    assert_eq!(c.get(s.url("/v1/id")).send().unwrap().status(), 401);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(["serve", "--node", "1", "--token-file", "/nonexistent/token"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/token"));
    // A token file other users may read is refused, with what to do, and not shown.
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(["serve", "--node", "1", "--token-file", &path])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("lets other users read or change it: chmod 600"),
        "{err}"
    );
    assert!(!err.contains(SECRET), "{err}");
    std::fs::remove_file(&file).ok();
}

/// A listener other hosts can reach, with no token (and no TLS), starts with a loud
/// warning.
#[test]
fn a_reachable_listener_without_a_token_is_a_loud_warning() {
    let s = serve(
        &["--node", "1", "--shards", "1", "--listen", "0.0.0.0:0"],
        START,
    );
    let warned = s.before.join("\n");
    assert!(
        warned.contains("WARNING") && warned.contains("without TLS and without a token"),
        "{warned}"
    );
}

/// A decode of the most IDs one request may carry answers every row, in order; one more
/// is a 400 that says the limit.
#[test]
fn a_full_decode_batch_answers_every_row() {
    let s = serve(&["--node", "1", "--shards", "1"], START);
    let c = client();
    let ids = ids_of_json(
        &c.get(s.url("/v1/ids?count=100000"))
            .send()
            .unwrap()
            .text()
            .unwrap(),
    );
    let body = ids
        .iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    let r = c
        .post(s.url("/v1/decode"))
        .body(body.clone())
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let rows: serde_json::Value = serde_json::from_str(&r.text().unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 100_000);
    for (row, id) in rows.iter().zip(&ids).step_by(9_999) {
        assert_eq!(row["id"], id.to_string());
        assert_eq!(row["node"], 1);
    }
    let r = c
        .post(s.url("/v1/decode"))
        .body(format!("{body}\n{}", ids[0]))
        .send()
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().unwrap().contains("send at most 100000"));
}

/// Every series of `flakeid_serve::SERIES` is on `/metrics` right after the start (the
/// process's `process_*` too, and `flakeid_build_info` with the version); `HEAD` mints
/// nothing; gRPC calls are counted by method and code.
#[test]
fn every_documented_series_is_there_from_the_start() {
    let s = serve(
        &[
            "--node",
            "1",
            "--shards",
            "1",
            "--grpc-listen",
            "127.0.0.1:0",
        ],
        START,
    );
    let c = client();
    let scrape = || c.get(s.url("/metrics")).send().unwrap().text().unwrap();
    let first = scrape();
    for &(name, kind, labels, _) in flakeid_serve::SERIES {
        // Per-node series come with claimed node ids; the clock-behind histogram with its
        // first event; the latency histograms with the first request.
        if labels == "node" || name == "flakeid_clock_behind_seconds" {
            continue;
        }
        if kind == flakeid_serve::metrics::Kind::Histogram {
            continue;
        }
        assert!(
            first.contains(&format!("# TYPE {name} ")),
            "{name} is not on /metrics at the start:\n{first}"
        );
    }
    for name in [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
    ] {
        assert!(first.contains(name), "{name}");
    }
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        first.contains(&format!(
            "flakeid_build_info{{version=\"{version}\",layout=\"snowflake\"}} 1"
        )),
        "{first}"
    );
    // Snowflake's layout runs out in 2080: more than 50 years left.
    let left = service::metric(&first, "flakeid_layout_seconds_left").unwrap();
    assert!(left > 50.0 * 365.0 * 86_400.0, "{left}");
    assert!(first.contains("# TYPE flakeid_ids_minted_total counter"));
    let minted = |m: &str| service::metric(m, "flakeid_ids_minted_total").unwrap();
    let before = minted(&first);
    for path in ["/v1/id", "/v1/ids?count=100"] {
        let r = c.head(s.url(path)).send().unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["cache-control"], "no-store");
    }
    assert_eq!(minted(&scrape()), before, "HEAD minted IDs");
    let r = c.get(s.url("/v1/id")).send().unwrap();
    assert_eq!(r.headers()["cache-control"], "no-store");
    assert_eq!(minted(&scrape()), before + 1.0);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let grpc = s.grpc.clone().unwrap();
    rt.block_on(async {
        use flakeid_serve::grpc::v1::NextRequest;
        use flakeid_serve::grpc::v1::id_service_client::IdServiceClient;
        let mut g = IdServiceClient::connect(grpc).await.unwrap();
        g.next(NextRequest { count: 3 }).await.unwrap();
        g.next(NextRequest { count: 100_001 }).await.unwrap_err();
    });
    let m = scrape();
    assert_eq!(
        service::metric(
            &m,
            r#"flakeid_grpc_requests_total{method="flakeid.v1.IdService/Next",code="OK"}"#
        ),
        Some(1.0),
        "{m}"
    );
    assert_eq!(
        service::metric(
            &m,
            r#"flakeid_grpc_requests_total{method="flakeid.v1.IdService/Next",code="INVALID_ARGUMENT"}"#
        ),
        Some(1.0),
        "{m}"
    );
    assert!(m.contains(
        "flakeid_grpc_request_duration_seconds_bucket{method=\"flakeid.v1.IdService/Next\""
    ));
    assert!(m.contains("flakeid_http_request_duration_seconds_bucket{route=\"/v1/id\""));
}

/// The gRPC extras: a `Layout` call that gives a gRPC-only client what it needs to decode
/// locally; reflection in v1alpha as in v1; the client's `grpc-timeout` ending an endless
/// stream with DEADLINE_EXCEEDED; and forty streams of many messages on a two-shard
/// server, each strictly increasing across its messages.
#[test]
fn grpc_layout_reflection_deadlines_and_stream_order() {
    use flakeid_serve::grpc::v1::id_service_client::IdServiceClient;
    use flakeid_serve::grpc::v1::{LayoutRequest, StreamRequest};
    use tokio_stream::StreamExt;
    let s = serve(
        &[
            "--node",
            "3",
            "--shards",
            "2",
            "--grpc-listen",
            "127.0.0.1:0",
            "--streams-per-connection",
            "64",
        ],
        START,
    );
    let grpc = s.grpc.clone().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut c = IdServiceClient::connect(grpc.clone()).await.unwrap();
        let l = c.layout(LayoutRequest {}).await.unwrap().into_inner();
        let snowflake = Layout::snowflake();
        assert_eq!(l.layout.parse::<Layout>().unwrap(), snowflake);
        assert_eq!(l.preset.as_deref(), Some("snowflake"));
        assert_eq!((l.time_bits, l.sequence_bits, l.node_bits), (41, 12, 10));
        assert_eq!((l.datacenter_bits, l.worker_bits), (5, 5));
        assert_eq!((l.unit_ns, l.epoch_unix_ms), (1_000_000, 1_288_834_974_657));
        assert_eq!(l.order, "time|node|sequence");
        assert_eq!(l.nodes, [3, 4]);
        assert!(l.json.contains("\"max_nodes\":1024"));

        // Reflection v1alpha, as older grpcurl and Python clients ask.
        use tonic_reflection::pb::v1alpha::ServerReflectionRequest;
        use tonic_reflection::pb::v1alpha::server_reflection_client::ServerReflectionClient;
        use tonic_reflection::pb::v1alpha::server_reflection_request::MessageRequest;
        use tonic_reflection::pb::v1alpha::server_reflection_response::MessageResponse;
        let channel = tonic::transport::Channel::from_shared(grpc.clone())
            .unwrap()
            .connect()
            .await
            .unwrap();
        let request = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        };
        let answer = ServerReflectionClient::new(channel)
            .server_reflection_info(tokio_stream::iter([request]))
            .await
            .unwrap()
            .into_inner()
            .next()
            .await
            .unwrap()
            .unwrap();
        let Some(MessageResponse::ListServicesResponse(list)) = answer.message_response else {
            panic!("no service list: {answer:?}");
        };
        assert!(
            list.service
                .iter()
                .any(|s| s.name == "flakeid.v1.IdService")
        );

        // An endless stream with a 300 ms deadline ends with DEADLINE_EXCEEDED.
        let mut request = tonic::Request::new(StreamRequest {
            count: u64::MAX,
            batch: 100,
        });
        request.set_timeout(Duration::from_millis(300));
        let started = std::time::Instant::now();
        let mut stream = c.stream(request).await.unwrap().into_inner();
        let end = loop {
            match stream.next().await {
                Some(Ok(_)) => continue,
                Some(Err(e)) => break e,
                None => panic!("the stream ended without a status"),
            }
        };
        assert_eq!(end.code(), tonic::Code::DeadlineExceeded, "{end}");
        assert!(started.elapsed() < Duration::from_secs(30));

        // Forty streams at once, each increasing across its messages.
        let tasks: Vec<_> = (0..40)
            .map(|k| {
                let mut c = c.clone();
                tokio::spawn(async move {
                    let mut s = c
                        .stream(StreamRequest {
                            count: 2_000,
                            batch: 50,
                        })
                        .await
                        .unwrap()
                        .into_inner();
                    let mut last = 0;
                    while let Some(m) = s.next().await {
                        for id in m.unwrap().ids {
                            assert!(id > last, "stream {k} stepped down");
                            last = id;
                        }
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
}

/// A gRPC `Stream` of one ID per message, read by a tonic client slower than the server
/// writes, is served whole: the messages ready at once go out together in a few DATA
/// frames, so the client's h2 guard against floods of small frames (which ends the
/// connection with `too_many_data_frames` once some ten thousand small frames wait unread)
/// never trips. Four such streams on one connection, 25,000 IDs each, left unread until
/// the server minted them all (its metric says so), then read: all arrive, increasing.
#[test]
fn a_slow_reader_of_one_id_per_message_gets_the_whole_stream() {
    use flakeid_serve::grpc::v1::StreamRequest;
    use flakeid_serve::grpc::v1::id_service_client::IdServiceClient;
    use tokio_stream::StreamExt;

    let s = serve(&["--node", "3", "--grpc-listen", "127.0.0.1:0"], START);
    let grpc = s.grpc.clone().expect("a gRPC listener");
    let scrape = || {
        let text = client()
            .get(s.url("/metrics"))
            .send()
            .unwrap()
            .text()
            .unwrap();
        service::metric(&text, "flakeid_ids_minted_total").unwrap()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let before = scrape();
    let mut streams = rt.block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(grpc)
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut streams = Vec::new();
        for _ in 0..4 {
            let mut c = IdServiceClient::new(channel.clone());
            let stream = c
                .stream(StreamRequest {
                    count: 25_000,
                    batch: 1,
                })
                .await
                .unwrap()
                .into_inner();
            streams.push(stream);
        }
        streams
    });
    // The client reads nothing while the server writes every message.
    assert!(
        service::until(Duration::from_secs(30), || scrape() - before >= 100_000.0),
        "the server minted {} of the 100,000 IDs with nobody reading",
        scrape() - before
    );
    rt.block_on(async {
        for stream in &mut streams {
            let mut got = Vec::new();
            while let Some(m) = stream.next().await {
                let m = m
                    .unwrap_or_else(|e| panic!("the stream failed after {} IDs: {e:?}", got.len()));
                got.extend(m.ids);
            }
            assert_eq!(got.len(), 25_000);
            assert!(strictly_increasing(&got));
        }
    });
}
