//! The HTTP routes over a [`Service`]: mint, decode, layout, the probes and the metrics.
//! Each handler returns `Result<Response, ServiceError>`; the cross-cutting behaviour
//! (token, deadline, metrics, request ids, size checks, panics) is in [`crate::edges`].

use std::sync::Arc;

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use flakeid::{Encoding, Id};
use flakeid_text::layout::json_int;

use crate::authorized::Authorized;
use crate::routes::JSON;
use crate::{MAX_BATCH, Minter, Readiness, Service, ServiceError};

/// The routes of the service over `service` (see the crate docs for the table): the
/// token on `/v1/*`, `HEAD` (nothing minted) and `Cache-Control: no-store` on the mint
/// routes, the decode body limit, the bound on concurrent batch and decode requests, and
/// JSON for every error, 404 and 405 included. [`app`](crate::app) puts it inside the
/// layers `flakeid serve` runs it with (request ids, metrics, size checks, the deadline).
pub fn router(service: Arc<Service>) -> Router {
    let limits = service.limits().clone();
    // Batch and decode requests share one bound, so that they cannot take every worker.
    let bulk = tower::limit::GlobalConcurrencyLimitLayer::new(limits.max_bulk.max(1));
    let routes = Router::new()
        .route(
            "/v1/id",
            axum::routing::get_service(OneId(Arc::clone(&service))),
        )
        .route(
            "/v1/ids",
            get(many_ids).layer::<_, std::convert::Infallible>(bulk.clone()),
        )
        .route(
            "/v1/decode",
            post(crate::decode::decode)
                .layer::<_, std::convert::Infallible>(bulk)
                .layer(DefaultBodyLimit::max(limits.decode_body_limit())),
        )
        .route("/v1/layout", get(layout))
        .route("/v1/range", get(range))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed);
    routes.with_state(service)
}

/// A mint route's answer: never cached (an ID served twice from a cache is a duplicate).
/// Its answers are made by [`minted`], with `Cache-Control: no-store`; its errors get it
/// here.
struct NoStore(Result<Response, ServiceError>);

impl IntoResponse for NoStore {
    fn into_response(self) -> Response {
        match self.0 {
            Ok(r) => r,
            Err(e) => {
                let mut r = e.into_response();
                r.headers_mut()
                    .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                r
            }
        }
    }
}

/// A mint route's answer in `form`: its content type and `Cache-Control: no-store`.
fn minted(form: Form, body: impl Into<axum::body::Body>) -> Response {
    let mut r = typed(StatusCode::OK, form.content_type(), body);
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// The answer to a `HEAD` on a mint route: the headers a `GET` would have, no ID minted.
fn head(form: Form) -> Result<Response, ServiceError> {
    Ok(minted(form, axum::body::Body::empty()))
}

/// A JSON answer.
fn json(status: StatusCode, body: impl Into<axum::body::Body>) -> Response {
    typed(status, JSON, body)
}

/// An answer of `content_type`, made in place: `Response::builder` checks and converts
/// each part it is given, which cost a mint route about 1,000 instructions a request.
fn typed(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<axum::body::Body>,
) -> Response {
    let mut r = Response::new(body.into());
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// `GET` and `HEAD /v1/id` as a service of its own rather than a handler: the common
/// answer (an ID the shard has now) is made in `call`, with no extractor futures and no
/// future of the route's own to box; only a wait for the next tick is boxed.
#[derive(Clone)]
struct OneId(Arc<Service>);

/// What [`OneId`] answers with: at once, or after a wait for the minter.
type OneIdFuture = futures_util::future::Either<
    std::future::Ready<Result<Response, std::convert::Infallible>>,
    std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Response, std::convert::Infallible>> + Send>,
    >,
>;

impl tower::Service<axum::extract::Request> for OneId {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = OneIdFuture;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: axum::extract::Request) -> OneIdFuture {
        let now = |answer: Result<Response, ServiceError>| {
            futures_util::future::Either::Left(std::future::ready(Ok(
                NoStore(answer).into_response()
            )))
        };
        let s = &self.0;
        // The token first, so that a refused request is read no further.
        if !crate::authorized::admitted(s, request.headers()) {
            return now(Err(ServiceError::Unauthorized));
        }
        if request.method() == Method::HEAD {
            return now(head(Form::Json));
        }
        // The fast path takes no reference count on the minter.
        match s.with_minter(Minter::try_next_id) {
            Ok(Ok(id)) => now(Ok(id_answer(s, id))),
            Ok(Err(e)) if crate::mint::waits(&e) => {
                let s = Arc::clone(s);
                futures_util::future::Either::Right(Box::pin(async move {
                    let waited = async {
                        let id = s.minter()?.next_id().await?;
                        Ok(id_answer(&s, id))
                    };
                    Ok(NoStore(waited.await).into_response())
                }))
            }
            Ok(Err(e)) => now(Err(e.into())),
            Err(e) => now(Err(e)),
        }
    }
}

/// The answer carrying one minted ID, counted.
fn id_answer(s: &Service, id: Id) -> Response {
    s.count_minted(1);
    let mut buf = [0u8; Encoding::MAX_LEN];
    let digits = id_digits(id, &mut buf);
    minted(
        Form::Json,
        crate::cuts::cut(&[b"{\"id\":\"", digits, b"\"}"]),
    )
}

/// An ID's decimal digits, by the core's writer (the tool's rows use it too).
#[inline]
fn id_digits(id: Id, buf: &mut [u8; Encoding::MAX_LEN]) -> &[u8] {
    let len = Encoding::Decimal.write(id.get(), buf);
    &buf[..len]
}

/// The query of `/v1/ids`.
#[derive(serde::Deserialize)]
pub(crate) struct Count {
    count: Option<String>,
}

/// What the client accepts, of the forms a batch comes in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    Json,
    Lines,
    Packed,
}

/// The form of a batch the client weighs highest in its `Accept` (JSON where it says
/// nothing, or nothing this route has).
pub(crate) fn form(headers: &HeaderMap) -> Form {
    const OFFERED: [&str; 3] = [JSON_TYPE, "text/plain", "application/octet-stream"];
    match crate::media::Accept::of(headers).pick(&OFFERED) {
        "application/octet-stream" => Form::Packed,
        "text/plain" => Form::Lines,
        _ => Form::Json,
    }
}

/// JSON's media type, without parameters.
const JSON_TYPE: &str = "application/json";

impl Form {
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Form::Json => JSON,
            Form::Lines => "text/plain; charset=utf-8",
            Form::Packed => "application/octet-stream",
        }
    }
}

/// The count asked for, or the message that says what to send instead.
fn parse_count(q: &Count) -> Result<usize, ServiceError> {
    let hint = format!("give count=N with N from 1 to {MAX_BATCH}");
    let Some(text) = q.count.as_deref() else {
        return Err(ServiceError::BadRequest(format!("no count: {hint}")));
    };
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_BATCH).contains(&n) => Ok(n),
        Ok(0) => Err(ServiceError::BadRequest(format!(
            "count=0 asks for nothing: {hint}"
        ))),
        Ok(n) => Err(ServiceError::BadRequest(format!(
            "count={n} is more than one request may ask for: {hint}, or ask several times (gRPC: the Stream call)"
        ))),
        Err(_) => Err(ServiceError::BadRequest(format!(
            "count={text:?} is not a number: {hint}"
        ))),
    }
}

async fn many_ids(
    _: Authorized,
    method: Method,
    State(s): State<Arc<Service>>,
    query: Result<Query<Count>, QueryRejection>,
    headers: HeaderMap,
) -> NoStore {
    let form = form(&headers);
    if method == Method::HEAD {
        return NoStore(head(form));
    }
    NoStore(mint_many(&s, query, form).await)
}

async fn mint_many(
    s: &Service,
    query: Result<Query<Count>, QueryRejection>,
    form: Form,
) -> Result<Response, ServiceError> {
    let Query(q) = query.map_err(|e| {
        ServiceError::BadRequest(format!(
            "{}: give count=N with N from 1 to {MAX_BATCH}",
            e.body_text()
        ))
    })?;
    let n = parse_count(&q)?;
    let minter = s.minter()?;
    let mut ids = vec![Id::default(); n];
    minter.fill(minter.home(), &mut ids).await?;
    s.count_minted(n as u64);
    Ok(minted(form, batch_body(&ids, form).await))
}

/// IDs written a chunk at a time, yielding the thread between chunks, so that a large
/// batch's text never holds up the single-ID requests queued behind it.
async fn batch_body(ids: &[Id], form: Form) -> Vec<u8> {
    const CHUNK: usize = 8192;
    if form == Form::Packed {
        let mut body = Vec::with_capacity(ids.len() * 8);
        for id in ids {
            body.extend_from_slice(&id.get().to_le_bytes());
        }
        return body;
    }
    let json = form == Form::Json;
    // Each ID goes straight into the body (no copy from a buffer of its own): the body is
    // grown by the most a chunk can take, its IDs written in place, then cut to length.
    const MOST: usize = Encoding::MAX_LEN + 3;
    let mut body = Vec::with_capacity(ids.len() * 23 + MOST + 2);
    if json {
        body.push(b'[');
    }
    for (c, chunk) in ids.chunks(CHUNK).enumerate() {
        if c > 0 {
            tokio::task::yield_now().await;
        }
        let mut at = body.len();
        body.resize(at + chunk.len() * MOST, 0);
        for (i, &id) in chunk.iter().enumerate() {
            if json {
                if c + i > 0 {
                    body[at] = b',';
                    at += 1;
                }
                body[at] = b'"';
                at += 1;
            }
            let digits: &mut [u8; Encoding::MAX_LEN] = (&mut body[at..at + Encoding::MAX_LEN])
                .try_into()
                .expect("MOST bytes an ID");
            at += Encoding::Decimal.write(id.get(), digits);
            body[at] = if json { b'"' } else { b'\n' };
            at += 1;
        }
        body.truncate(at);
    }
    if json {
        body.push(b']');
    }
    body
}

async fn layout(_: Authorized, State(s): State<Arc<Service>>) -> Response {
    let nodes: Vec<serde_json::Value> = s
        .minter()
        .map(|m| m.nodes())
        .unwrap_or_default()
        .into_iter()
        .map(|n| {
            let claim = n.claim.map(|c| {
                serde_json::json!({
                    "store": c.store,
                    "namespace": c.namespace,
                    "instance": c.instance,
                    "state": c.state.to_string(),
                    "fenced": c.fenced,
                    "not_before_unix_ns": json_int(c.not_before_unix_ns),
                    "reserved_until_unix_ns": c.reserved_until_unix_ns.map(json_int),
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

/// The query of `/v1/range`.
#[derive(serde::Deserialize)]
pub(crate) struct Span {
    from: Option<String>,
    to: Option<String>,
}

/// `GET /v1/range`: the IDs the layout gives to a span of time (`flakeid range --json`).
async fn range(
    _: Authorized,
    State(s): State<Arc<Service>>,
    query: Result<Query<Span>, QueryRejection>,
) -> Result<Response, ServiceError> {
    const GIVE: &str = "give from=T, the span's start (inclusive), and to=T, its end \
        (exclusive, the current time if not given), each RFC 3339 (2026-12-07T00:00:00Z) or \
        Unix milliseconds";
    let Query(q) =
        query.map_err(|e| ServiceError::BadRequest(format!("{}: {GIVE}", e.body_text())))?;
    let instant = |name: &str, text: &str| {
        flakeid_text::range::parse_instant(text)
            .map_err(|e| ServiceError::BadRequest(format!("{name}: {e}")))
    };
    let from = match &q.from {
        Some(from) => instant("from", from)?,
        None => return Err(ServiceError::BadRequest(format!("no from: {GIVE}"))),
    };
    let to = match &q.to {
        Some(to) => instant("to", to)?,
        None => i128::from(flakeid::Clock::unix_ns(&flakeid::clock::SystemClock)),
    };
    let bad = |e: flakeid::Error| ServiceError::BadRequest(e.to_string());
    let range = s.layout().id_range_ns(from, to).map_err(bad)?;
    let body = flakeid_text::range::range_json(s.layout(), from, to, range).map_err(bad)?;
    Ok(json(StatusCode::OK, body))
}

async fn healthz() -> Response {
    json(StatusCode::OK, "{\"status\":\"alive\"}")
}

async fn readyz(State(s): State<Arc<Service>>) -> Response {
    match s.readiness() {
        Readiness::Ready => match s.layout_warning() {
            None => json(StatusCode::OK, "{\"status\":\"ready\"}"),
            Some(warning) => json(
                StatusCode::OK,
                serde_json::json!({ "status": "ready", "warning": warning }).to_string(),
            ),
        },
        Readiness::NotReady(why) | Readiness::Lost(why) => {
            let body = serde_json::json!({ "status": "not ready", "reason": why }).to_string();
            json(StatusCode::SERVICE_UNAVAILABLE, body)
        }
    }
}

async fn metrics(State(s): State<Arc<Service>>) -> Result<Response, ServiceError> {
    // An embedding server without a recorder has no metrics route.
    let Some(handle) = &s.metrics else {
        return Err(ServiceError::NotFound);
    };
    crate::metrics::claim_gauges(s.minter().ok().as_deref());
    crate::metrics::layout_gauge(s.layout());
    Ok((
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        handle.render(),
    )
        .into_response())
}

async fn not_found() -> ServiceError {
    ServiceError::NotFound
}

async fn method_not_allowed(method: Method) -> ServiceError {
    ServiceError::MethodNotAllowed {
        method: method.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch's text is each ID in decimal, as JSON strings in an array or one a line,
    /// across chunks and across digit counts (IDs of 1 to 20 digits).
    #[tokio::test]
    async fn batch_bodies_are_every_id_in_order() {
        let ids: Vec<Id> = (0..20_000u64)
            .map(|i| match i % 4 {
                0 => i + 1,
                1 => u64::MAX - i,
                2 => 10u64.pow((i % 20) as u32),
                _ => 2_116_500_430_648_709_162 + i,
            })
            .map(Id::new)
            .collect();
        let text: Vec<String> = ids.iter().map(|i| i.get().to_string()).collect();
        let json = String::from_utf8(batch_body(&ids, Form::Json).await).unwrap();
        let want: Vec<String> = text.iter().map(|t| format!("\"{t}\"")).collect();
        assert_eq!(json, format!("[{}]", want.join(",")));
        let lines = String::from_utf8(batch_body(&ids, Form::Lines).await).unwrap();
        assert_eq!(
            lines,
            text.iter().map(|t| format!("{t}\n")).collect::<String>()
        );
        assert_eq!(
            batch_body(&ids[..1], Form::Json).await,
            format!("[\"{}\"]", text[0]).as_bytes()
        );
    }
}
