//! The HTTP routes ([`router`]): minting, decoding, the layout, probes and metrics, each
//! error a JSON message that says what to send instead.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use flakeid::{Encoding, Id, MintError};

use crate::{MAX_BATCH, MAX_DECODE, Readiness, Service};
use flakeid_text::rows::{ROW_MAX, RowFormat, RowWriter};

/// The routes of the service over `service` (see the crate docs for the table).
pub fn router(service: Arc<Service>) -> Router {
    // The mint and decode routes, behind the token if one is set.
    let guarded = Router::new()
        .route("/v1/id", get(one_id))
        .route("/v1/ids", get(many_ids))
        .route("/v1/decode", post(decode))
        .route("/v1/layout", get(layout))
        .route_layer(axum::middleware::from_fn_with_state(
            Arc::clone(&service),
            require_token,
        ));
    Router::new()
        .merge(guarded)
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .with_state(service)
}

const JSON: &str = "application/json";

/// 401 unless the request carries the bearer token (when the service has one).
async fn require_token(
    State(s): State<Arc<Service>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let header = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes);
    if s.admits(header) {
        return next.run(request).await;
    }
    let route: &'static str = match request.uri().path() {
        "/v1/id" => "/v1/id",
        "/v1/ids" => "/v1/ids",
        "/v1/decode" => "/v1/decode",
        _ => "/v1/layout",
    };
    let mut r = error(
        StatusCode::UNAUTHORIZED,
        "missing or wrong bearer token: send the header Authorization: Bearer <token> with the server's token",
    );
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    observe(route, Instant::now(), r)
}

fn json(status: StatusCode, body: impl Into<axum::body::Body>) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, JSON)
        .body(body.into())
        .expect("a valid response")
}

/// `{"error":"..."}` with `status`.
fn error(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "error": message }).to_string();
    json(status, body)
}

fn bad_request(message: &str) -> Response {
    error(StatusCode::BAD_REQUEST, message)
}

/// A minting error: 503 with `Retry-After` (whole seconds, at least 1) when a retry can
/// succeed or the server cannot mint at all; the message says which.
fn mint_error(e: MintError) -> Response {
    let mut r = error(StatusCode::SERVICE_UNAVAILABLE, &e.to_string());
    let secs = e
        .retry_after()
        .map_or(1, |d| d.as_secs_f64().ceil().max(1.0) as u64);
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    r
}

/// Counts a request by route and status, and its latency.
fn observe(route: &'static str, started: Instant, r: Response) -> Response {
    let status = r.status().as_u16().to_string();
    metrics::counter!("flakeid_http_requests_total", "route" => route, "status" => status)
        .increment(1);
    metrics::histogram!("flakeid_http_request_duration_seconds", "route" => route)
        .record(started.elapsed().as_secs_f64());
    r
}

async fn one_id(State(s): State<Arc<Service>>) -> Response {
    let started = Instant::now();
    let r = match s.minter().next_id().await {
        Ok(id) => {
            metrics::counter!("flakeid_ids_minted_total").increment(1);
            let mut buf = [0u8; Encoding::MAX_LEN];
            let text = id_text(id, &mut buf);
            let mut body = Vec::with_capacity(text.len() + 10);
            body.extend_from_slice(b"{\"id\":\"");
            body.extend_from_slice(text.as_bytes());
            body.extend_from_slice(b"\"}");
            json(StatusCode::OK, body)
        }
        Err(e) => mint_error(e),
    };
    observe("/v1/id", started, r)
}

fn id_text(id: Id, buf: &mut [u8; Encoding::MAX_LEN]) -> &str {
    id.encode(Encoding::Decimal, buf)
}

/// The query of `/v1/ids`.
#[derive(serde::Deserialize)]
struct Count {
    count: Option<String>,
}

/// What the client accepts, of the forms a batch comes in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Json,
    Lines,
    Packed,
}

fn form(headers: &HeaderMap) -> Form {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if accept.contains("application/octet-stream") {
        Form::Packed
    } else if accept.contains("text/plain") {
        Form::Lines
    } else {
        Form::Json
    }
}

/// The count asked for, or the message that says what to send instead.
fn parse_count(q: &Count) -> Result<usize, String> {
    let hint = format!("give count=N with N from 1 to {MAX_BATCH}");
    let Some(text) = q.count.as_deref() else {
        return Err(format!("no count: {hint}"));
    };
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_BATCH).contains(&n) => Ok(n),
        Ok(0) => Err(format!("count=0 asks for nothing: {hint}")),
        Ok(n) => Err(format!(
            "count={n} is more than one request may ask for: {hint}, or ask several times (gRPC: the Stream call)"
        )),
        Err(_) => Err(format!("count={text:?} is not a number: {hint}")),
    }
}

async fn many_ids(
    State(s): State<Arc<Service>>,
    Query(q): Query<Count>,
    headers: HeaderMap,
) -> Response {
    let started = Instant::now();
    let r = match parse_count(&q) {
        Err(message) => bad_request(&message),
        Ok(n) => {
            let form = form(&headers);
            // Minting may wait for the next tick (a batch larger than a tick's sequence
            // spans ticks): blocking, on this worker thread (its home shard), with the
            // runtime told so.
            let minted = tokio::task::block_in_place(|| {
                let mut ids = vec![Id::default(); n];
                s.minter().fill(&mut ids).map(|()| ids)
            });
            match minted {
                Ok(ids) => {
                    metrics::counter!("flakeid_ids_minted_total").increment(n as u64);
                    batch_body(&ids, form)
                }
                Err(e) => mint_error(e),
            }
        }
    };
    observe("/v1/ids", started, r)
}

fn batch_body(ids: &[Id], form: Form) -> Response {
    let (content_type, body) = match form {
        Form::Packed => {
            let mut body = Vec::with_capacity(ids.len() * 8);
            for id in ids {
                body.extend_from_slice(&id.get().to_le_bytes());
            }
            ("application/octet-stream", body)
        }
        Form::Lines | Form::Json => {
            let mut body = Vec::with_capacity(ids.len() * 23 + 2);
            let json = form == Form::Json;
            if json {
                body.push(b'[');
            }
            let mut buf = [0u8; Encoding::MAX_LEN];
            for (i, &id) in ids.iter().enumerate() {
                if json {
                    if i > 0 {
                        body.push(b',');
                    }
                    body.push(b'"');
                }
                body.extend_from_slice(id_text(id, &mut buf).as_bytes());
                if json {
                    body.push(b'"');
                } else {
                    body.push(b'\n');
                }
            }
            if json {
                body.push(b']');
                (JSON, body)
            } else {
                ("text/plain; charset=utf-8", body)
            }
        }
    };
    Response::builder()
        .header(header::CONTENT_TYPE, content_type)
        .body(body.into())
        .expect("a valid response")
}

/// The IDs of a decode request: a JSON array of strings or numbers, or one per line.
fn decode_input(body: &[u8]) -> Result<Vec<u64>, String> {
    let text = std::str::from_utf8(body).map_err(|e| {
        format!(
            "the body is not UTF-8 text (byte {} is invalid): send IDs as a JSON array or one per line",
            e.valid_up_to() + 1
        )
    })?;
    let trimmed = text.trim_start();
    let mut ids = Vec::new();
    if trimmed.starts_with('[') {
        let values: Vec<serde_json::Value> = serde_json::from_str(trimmed).map_err(|e| {
            format!(
                "the body is not a JSON array of IDs ({e}): send [\"123\", 456] or one ID per line"
            )
        })?;
        for (i, v) in values.iter().enumerate() {
            let id = match v {
                serde_json::Value::String(t) => t.parse::<Id>().map_err(|e| (i, e.to_string())),
                serde_json::Value::Number(n) => n.as_u64().map(Id::new).ok_or_else(|| {
                    (
                        i,
                        "a number that is not a non-negative integer of 64 bits".into(),
                    )
                }),
                _ => Err((i, "neither a string nor a number".into())),
            }
            .map_err(|(i, e)| {
                format!("element {i} of the array: {e}; send IDs as decimal strings or numbers")
            })?;
            ids.push(id.get());
        }
    } else {
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let id = line.parse::<Id>().map_err(|e| {
                format!(
                    "line {}: {e}; send one ID per line (decimal, 0x hex or base32)",
                    i + 1
                )
            })?;
            ids.push(id.get());
        }
    }
    if ids.len() > MAX_DECODE {
        return Err(format!(
            "{} IDs is more than one request may carry: send at most {MAX_DECODE}",
            ids.len()
        ));
    }
    Ok(ids)
}

async fn decode(State(s): State<Arc<Service>>, headers: HeaderMap, body: Bytes) -> Response {
    let started = Instant::now();
    let ndjson = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/x-ndjson"));
    let r = match decode_input(&body).and_then(|ids| decode_rows(&s, &ids, ndjson)) {
        Ok(body) => Response::builder()
            .header(
                header::CONTENT_TYPE,
                if ndjson { "application/x-ndjson" } else { JSON },
            )
            .body(body.into())
            .expect("a valid response"),
        Err(e) => bad_request(&e),
    };
    observe("/v1/decode", started, r)
}

/// The rows of `ids` as `flakeid decode --json` writes them: NDJSON, or joined into a
/// JSON array. An ID that does not fit the layout is an error naming it.
pub(crate) fn decode_rows(s: &Service, ids: &[u64], ndjson: bool) -> Result<Vec<u8>, String> {
    let rows = s.decode(ids)?;
    let n = rows.len();
    let layout = s.layout();
    let mut writer = RowWriter::new(layout, RowFormat::Json);
    // A row takes about 200 bytes; the writer grows `out` when a row might not fit.
    let mut out = Vec::with_capacity(n * 224 + ROW_MAX);
    out.resize(ROW_MAX + 1, 0);
    let mut at = 0;
    if !ndjson {
        out[0] = b'[';
        at = 1;
    }
    for row in &rows {
        at = writer.row(&mut out, at, row);
        if !ndjson {
            // The row's newline becomes the array's comma.
            out[at - 1] = b',';
        }
    }
    if !ndjson {
        if n > 0 {
            at -= 1;
        }
        out[at] = b']';
        at += 1;
    }
    out.truncate(at);
    Ok(out)
}

async fn layout(State(s): State<Arc<Service>>) -> Response {
    let nodes: Vec<serde_json::Value> = s
        .minter()
        .nodes()
        .into_iter()
        .map(|n| {
            let claim = n.claim.map(|c| {
                serde_json::json!({
                    "store": c.store,
                    "namespace": c.namespace,
                    "instance": c.instance,
                    "state": c.state.to_string(),
                    "fenced": c.fenced,
                    "not_before_unix_ns": c.not_before_unix_ns,
                    "reserved_until_unix_ns": c.reserved_until_unix_ns,
                    "fence_left_ms": c.fence_left.map(|d| d.as_millis() as u64),
                    "renewals": c.renewals,
                    "failures": c.failures,
                    "last_error": c.last_error.map(|e| e.to_string()),
                })
            });
            serde_json::json!({ "node": n.node, "claim": claim })
        })
        .collect();
    // The layout's object as `flakeid layout --json` writes it, keys in its order.
    let body = format!(
        "{{\"layout\":{},\"nodes\":{}}}",
        flakeid_text::layout::layout_json(s.layout()),
        serde_json::Value::from(nodes)
    );
    json(StatusCode::OK, body)
}

async fn healthz() -> Response {
    json(StatusCode::OK, "{\"status\":\"alive\"}")
}

async fn readyz(State(s): State<Arc<Service>>) -> Response {
    match s.readiness() {
        Readiness::Ready => json(StatusCode::OK, "{\"status\":\"ready\"}"),
        Readiness::NotReady(why) | Readiness::Lost(why) => {
            let body = serde_json::json!({ "status": "not ready", "reason": why }).to_string();
            json(StatusCode::SERVICE_UNAVAILABLE, body)
        }
    }
}

async fn metrics(State(s): State<Arc<Service>>) -> Response {
    let Some(handle) = &s.metrics else {
        return error(
            StatusCode::NOT_FOUND,
            "this server has no metrics recorder: flakeid serve installs one; an embedding server passes its PrometheusHandle to Service::new",
        );
    };
    crate::run::claim_gauges(&s);
    Response::builder()
        .header(header::CONTENT_TYPE, "text/plain; version=0.0.4")
        .body(handle.render().into())
        .expect("a valid response")
}

async fn not_found() -> impl IntoResponse {
    error(
        StatusCode::NOT_FOUND,
        "no such route: GET /v1/id, GET /v1/ids?count=N, POST /v1/decode, GET /v1/layout, /healthz, /readyz, /metrics",
    )
}
