//! The service's routes in process (no binary, no socket): the router of a `Service` over a
//! plain sharded generator inside its edge (`flakeid_serve::app`), called as a tower
//! service. The same routes through the built
//! binary and real clients are in `cli/tests/serve.rs`. The runtime is multi-threaded, as
//! the server's is.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode, header};
use flakeid::{Layout, ShardedGenerator};
use flakeid_serve::{Limits, Minter, Service, Token, Tokens};
use tower::ServiceExt;

fn minter(layout: Layout, shards: usize) -> Minter {
    let g = ShardedGenerator::builder(layout)
        .nodes(4..4 + shards as u64)
        .shards(shards)
        .max_wait(Duration::from_secs(30))
        .build()
        .unwrap();
    Minter::plain(g)
}

fn service(token: Option<Token>) -> Arc<Service> {
    let mut b = Service::builder(Layout::snowflake()).minter(minter(Layout::snowflake(), 2));
    if let Some(t) = token {
        b = b.tokens(Tokens::fixed(t));
    }
    b.build()
}

/// One request through the router: its status, headers and body.
async fn call(
    service: &Arc<Service>,
    request: Request<Body>,
) -> (StatusCode, axum::http::HeaderMap, String) {
    let response = flakeid_serve::app(Arc::clone(service))
        .oneshot(request)
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = to_bytes(response.into_body(), 1 << 26).await.unwrap();
    (status, headers, String::from_utf8(body.to_vec()).unwrap())
}

fn get(uri: &str) -> Request<Body> {
    Request::get(uri).body(Body::empty()).unwrap()
}

/// Quoted decimal IDs in a JSON text, in order.
fn ids_in(text: &str) -> Vec<u64> {
    text.split('"')
        .filter_map(|s| s.parse::<u64>().ok())
        .filter(|&v| v > 1 << 22)
        .collect()
}

/// An error answer: JSON `{"error": ...}`, the message non-empty.
fn error_of(status: StatusCode, headers: &axum::http::HeaderMap, body: &str) -> String {
    assert_eq!(
        headers[header::CONTENT_TYPE],
        "application/json",
        "{status}: {body}"
    );
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    let m = v["error"].as_str().unwrap_or_else(|| panic!("{body}"));
    assert!(!m.is_empty());
    m.to_string()
}

/// `/v1/id` and `/v1/ids` mint strictly increasing IDs on the service's node ids, which
/// `/v1/decode` decodes back to those nodes; the health routes answer; mint answers are
/// never cached; each answer has a request id, the client's own if it sent one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_routes_mint_decode_and_answer_health_in_process() {
    let s = service(None);
    let (status, headers, body) = call(&s, get("/v1/id")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(headers[header::CACHE_CONTROL], "no-store");
    assert!(headers.contains_key("x-request-id"));
    let first = ids_in(&body);
    assert_eq!(first.len(), 1, "{body}");
    let (status, headers, body) = call(&s, get("/v1/ids?count=50")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(headers[header::CACHE_CONTROL], "no-store");
    let many = ids_in(&body);
    assert_eq!(many.len(), 50, "{body}");
    assert!(many.windows(2).all(|w| w[0] < w[1]), "{many:?}");
    let layout = Layout::snowflake();
    let decode = Request::post("/v1/decode")
        .header(header::CONTENT_TYPE, "application/json")
        .header("x-request-id", "my-trace-7")
        .body(Body::from(format!("[\"{}\",\"{}\"]", first[0], many[49])))
        .unwrap();
    let (status, headers, body) = call(&s, decode).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(headers["x-request-id"], "my-trace-7");
    for id in [first[0], many[49]] {
        let node = layout.decompose(id).unwrap().node;
        assert!((4..6).contains(&node), "{id} on node {node}");
        assert!(body.contains(&format!("\"node\":{node}")), "{body}");
    }
    assert_eq!(call(&s, get("/healthz")).await.0, StatusCode::OK);
    assert_eq!(call(&s, get("/readyz")).await.0, StatusCode::OK);
    s.drain();
    let (status, _, body) = call(&s, get("/readyz")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.contains("draining"), "{body}");
}

/// With tokens, the mint routes refuse a request without one (401, `WWW-Authenticate`)
/// and serve one with either token of a rollover, the scheme in any case.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_guards_the_routes() {
    let s = service(Some(Token::new("sesame").unwrap()));
    let (status, headers, body) = call(&s, get("/v1/id")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(headers[header::WWW_AUTHENTICATE], "Bearer");
    assert!(error_of(status, &headers, &body).contains("Authorization: Bearer"));
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let authorized = Request::get("/v1/id")
            .header(header::AUTHORIZATION, format!("{scheme} sesame"))
            .body(Body::empty())
            .unwrap();
        assert_eq!(call(&s, authorized).await.0, StatusCode::OK, "{scheme}");
    }
    // The probes stay open.
    assert_eq!(call(&s, get("/readyz")).await.0, StatusCode::OK);
    // The router alone, as an embedding server mounts it, keeps the token too.
    let bare = flakeid_serve::router(Arc::clone(&s))
        .oneshot(get("/v1/ids?count=1"))
        .await
        .unwrap();
    assert_eq!(bare.status(), StatusCode::UNAUTHORIZED);
}

/// Every error the service answers is `{"error": ...}` with its status: 400 for a bad
/// count or query, 404, 405 with `Allow`, 413 past the decode body limit, 414 past the
/// request target limit, 431 past the header limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_error_is_json_with_its_status() {
    let mut limits = Limits::default();
    limits.max_decode = 10;
    let s = Service::builder(Layout::snowflake())
        .minter(minter(Layout::snowflake(), 1))
        .limits(limits.clone())
        .build();
    let too_long = format!("/v1/ids?count=1&pad={}", "x".repeat(limits.max_uri));
    let big_header = Request::get("/v1/id")
        .header("x-padding", "y".repeat(limits.max_headers))
        .body(Body::empty())
        .unwrap();
    let big_body = Request::post("/v1/decode")
        .body(Body::from("1\n".repeat(limits.decode_body_limit())))
        .unwrap();
    let put = Request::put("/v1/id").body(Body::empty()).unwrap();
    let cases: Vec<(Request<Body>, StatusCode, &str)> = vec![
        (
            get("/v1/ids?count=0"),
            StatusCode::BAD_REQUEST,
            "count=0 asks for nothing",
        ),
        (
            get("/v1/ids?count=1&count=2"),
            StatusCode::BAD_REQUEST,
            "give count=N",
        ),
        (get("/v2/nothing"), StatusCode::NOT_FOUND, "GET /v1/id"),
        (put, StatusCode::METHOD_NOT_ALLOWED, "PUT is not served"),
        (
            big_body,
            StatusCode::PAYLOAD_TOO_LARGE,
            "send at most 10 IDs",
        ),
        (
            get(&too_long),
            StatusCode::URI_TOO_LONG,
            "shorter request target",
        ),
        (
            big_header,
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "fewer or shorter headers",
        ),
    ];
    for (request, want, says) in cases {
        let what = format!("{} {}", request.method(), request.uri().path());
        let (status, headers, body) = call(&s, request).await;
        assert_eq!(status, want, "{what}: {body}");
        let message = error_of(status, &headers, &body);
        assert!(message.contains(says), "{what}: {message}");
        if status == StatusCode::METHOD_NOT_ALLOWED {
            assert_eq!(headers[header::ALLOW], "GET,HEAD");
        }
    }
    // Eleven IDs fit the body limit and are one too many: a 400 that says the limit.
    let eleven = Request::post("/v1/decode")
        .body(Body::from("2116500430648709162\n".repeat(11)))
        .unwrap();
    let (status, headers, body) = call(&s, eleven).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error_of(status, &headers, &body).contains("send at most 10"));
}

/// The documented decode batch, 100,000 IDs, fits the body limit in the service's own
/// batch form (a JSON array of quoted decimals, as `/v1/ids` answers, even pretty-printed);
/// a body past the limit is a JSON 413 that says how many IDs to send.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_decode_batch_fits_in_every_form() {
    let s = service(None);
    let id = 2116500430648709162u64; // the largest IDs are 19-20 digits
    let n = flakeid_serve::MAX_DECODE;
    let compact = format!(
        "[{}]",
        vec![format!("\"{}\"", u64::MAX / 2 + id / 4); n].join(",")
    );
    let pretty = format!(
        "[\n{}\n]",
        vec![format!("    \"{}\"", u64::MAX / 2 + id / 4); n].join(",\n")
    );
    for body in [compact, pretty] {
        let request = Request::post("/v1/decode").body(Body::from(body)).unwrap();
        let (status, headers, text) = call(&s, request).await;
        // The IDs are past the layout's time: a 400 naming the first, not a 413.
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "{}",
            &text[..200.min(text.len())]
        );
        assert!(error_of(status, &headers, &text).contains("element 0"));
    }
    let ok = format!("[{}]", vec![format!("\"{id}\""); n].join(", "));
    let (status, _, text) = call(
        &s,
        Request::post("/v1/decode").body(Body::from(ok)).unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let rows: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), n);
    let limit = s.limits().decode_body_limit();
    let over = Request::post("/v1/decode")
        .body(Body::from(" ".repeat(limit + 1)))
        .unwrap();
    let (status, headers, text) = call(&s, over).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(error_of(status, &headers, &text).contains("send at most 100000 IDs"));
}

/// `HEAD` on a mint route answers the headers a `GET` would and mints nothing: with one
/// shard and hour-long ticks, the `GET` after five `HEAD`s has the next sequence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_mints_nothing() {
    let layout: Layout = "seq=20,node=4,time=39,unit=3600s,epoch=2025-01-01T00:00:00Z"
        .parse()
        .unwrap();
    let s = Service::builder(layout).minter(minter(layout, 1)).build();
    let seq = |body: &str| {
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        let id: u64 = v["id"].as_str().unwrap().parse().unwrap();
        let p = layout.decompose(id).unwrap();
        (p.ticks, p.sequence)
    };
    let (_, _, body) = call(&s, get("/v1/id")).await;
    let before = seq(&body);
    for path in ["/v1/id", "/v1/ids?count=1000"] {
        let head = Request::head(path).body(Body::empty()).unwrap();
        let (status, headers, body) = call(&s, head).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[header::CACHE_CONTROL], "no-store");
        assert!(body.is_empty());
    }
    let (_, _, body) = call(&s, get("/v1/id")).await;
    let after = seq(&body);
    if after.0 == before.0 {
        assert_eq!(after.1, before.1 + 1, "a HEAD minted IDs");
    }
}

/// A request past its deadline is a JSON 503 with `Retry-After`: a batch of one ID a
/// 10 ms tick that would take a second, under a 200 ms deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_past_its_deadline_is_a_503() {
    let layout: Layout = "seq=0,node=4,time=50,unit=10ms,epoch=2025-01-01T00:00:00Z"
        .parse()
        .unwrap();
    let mut limits = Limits::default();
    limits.request_timeout = Duration::from_millis(200);
    let s = Service::builder(layout)
        .minter(minter(layout, 1))
        .limits(limits)
        .build();
    let (status, headers, body) = call(&s, get("/v1/ids?count=100")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(headers.contains_key(header::RETRY_AFTER));
    assert!(error_of(status, &headers, &body).contains("deadline of 200 ms"));
}

/// Before its node ids are claimed, the service answers the probes (alive, not ready,
/// saying why) and refuses to mint with a JSON 503 and `Retry-After`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_still_claiming_is_alive_not_ready_and_mints_nothing() {
    let s = Service::builder(Layout::snowflake()).build();
    assert_eq!(call(&s, get("/healthz")).await.0, StatusCode::OK);
    let (status, _, body) = call(&s, get("/readyz")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.contains("claiming"), "{body}");
    for path in ["/v1/id", "/v1/ids?count=5"] {
        let (status, headers, body) = call(&s, get(path)).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{path}");
        assert!(headers.contains_key(header::RETRY_AFTER));
        assert!(
            error_of(status, &headers, &body).contains("claiming"),
            "{body}"
        );
    }
    s.install(minter(Layout::snowflake(), 1));
    assert_eq!(call(&s, get("/v1/id")).await.0, StatusCode::OK);
    assert_eq!(call(&s, get("/readyz")).await.0, StatusCode::OK);
}

/// `/v1/layout` writes every integer so that JSON readers that hold numbers as `f64`
/// keep it exactly: a layout of 2^60 nodes says so as a string.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layout_integers_above_2_53_are_strings() {
    let wide: Layout = "time=3,seq=1,node=60,epoch=2025-01-01T00:00:00Z"
        .parse()
        .unwrap();
    let s = Service::builder(wide).build();
    let (status, _, body) = call(&s, get("/v1/layout")).await;
    assert_eq!(status, StatusCode::OK);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["layout"]["max_nodes"], (1u64 << 60).to_string());
    assert_eq!(v["layout"]["time_bits"], 3);
}

/// `/v1/range` answers the library's range for a span (the JSON of `flakeid range --json`);
/// the IDs the service mints now lie in the range up to now (`to`'s default) and past the
/// range of a span that ended before; a bad or empty span is a 400 that says what to send,
/// and the route wants the token as every `/v1/*` route does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn range_gives_the_ids_of_a_span() {
    let s = service(None);
    let (status, _, body) = call(
        &s,
        get("/v1/range?from=2026-12-07T00:00:00Z&to=1796688000000"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let library = Layout::snowflake()
        .id_range(1_796_601_600_000, 1_796_688_000_000)
        .unwrap();
    assert_eq!(v["first"], library.first.to_string());
    assert_eq!(v["last"], library.last.to_string());
    assert_eq!(v["first_tick_start"], "2026-12-07T00:00:00.000Z");
    assert_eq!(v["last_tick_end"], "2026-12-08T00:00:00.000Z");

    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let (_, _, minted) = call(&s, get("/v1/ids?count=50")).await;
    let ids = ids_in(&minted);
    assert_eq!(ids.len(), 50, "{minted}");
    let bounds = |body: String| -> (u64, u64) {
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let id = |k: &str| v[k].as_str().unwrap().parse::<u64>().unwrap();
        (id("first"), id("last"))
    };
    let recent = bounds(
        call(&s, get(&format!("/v1/range?from={}", now_ms - 60_000)))
            .await
            .2,
    );
    let before = bounds(
        call(
            &s,
            get(&format!(
                "/v1/range?from={}&to={}",
                now_ms - 120_000,
                now_ms - 60_000
            )),
        )
        .await
        .2,
    );
    for id in ids {
        assert!(recent.0 <= id && id <= recent.1, "{id} in {recent:?}");
        assert!(id > before.1, "{id} after {before:?}");
    }

    for (uri, says) in [
        ("/v1/range", "no from: give from=T"),
        ("/v1/range?from=yesterday", "from: not an RFC 3339"),
        (
            "/v1/range?from=1796688000000&to=2026-12-07T00:00:00Z",
            "holds no instant",
        ),
        (
            "/v1/range?from=2000-01-01T00:00:00Z&to=946684800001",
            "before the layout's epoch",
        ),
    ] {
        let (status, headers, body) = call(&s, get(uri)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}: {body}");
        let message = error_of(status, &headers, &body);
        assert!(message.contains(says), "{uri}: {message}");
    }
    let guarded = service(Some(Token::new("s3cret-token-0123456789").unwrap()));
    let (status, _, _) = call(&guarded, get("/v1/range?from=1796601600000")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

/// A layout that runs out within the service's end warning (a year by default) is said in
/// `/readyz` beside "ready", with its end and the days left; with the warning off, or on a
/// layout whose end lies further off, `/readyz` is the plain "ready". A layout that ran
/// out is still ready (its IDs decode), and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_says_when_the_layout_runs_out_soon() {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    // 2^31 ms (24.9 days) from a day ago.
    let short: Layout = format!("time=31,seq=12,node=10,epoch={}", now_ms - 86_400_000)
        .parse()
        .unwrap();
    let served = |layout: Layout, margin: Option<Duration>| {
        let mut b = Service::builder(layout).minter(minter(layout, 1));
        if let Some(margin) = margin {
            b = b.end_warning(margin);
        }
        b.build()
    };
    let (status, _, body) = call(&served(short, None), get("/readyz")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let said: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(said["status"], "ready", "{body}");
    let warning = said["warning"].as_str().unwrap();
    assert!(
        warning.contains("runs out at") && warning.contains("in 23."),
        "{warning}"
    );
    for quiet in [
        served(short, Some(Duration::ZERO)),
        served(Layout::snowflake(), None),
    ] {
        let (status, _, body) = call(&quiet, get("/readyz")).await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::OK, "{\"status\":\"ready\"}")
        );
    }
    // 2^31 ms from 30 days ago: over. Still ready (its IDs decode), saying it ran out.
    let over: Layout = format!("time=31,seq=12,node=10,epoch={}", now_ms - 30 * 86_400_000)
        .parse()
        .unwrap();
    let (status, _, body) = call(&served(over, None), get("/readyz")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("ran out at"), "{body}");
}
