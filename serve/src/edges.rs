//! The HTTP routes' layers: what every request goes through, written once. Outside the
//! router ([`outer`]): the metrics and the access log by matched route and status, the
//! request id (`x-request-id`, kept if the client sent one), a panic caught as a JSON
//! 500, and the request's size checked (414, 431 as JSON). On the routes: the deadline,
//! the bearer token on `/v1/*`, and the mint routes' `HEAD` and `Cache-Control`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};

use crate::http::{Form, ROUTES, form};
use crate::{Service, ServiceError};

/// `router` inside the layers every request goes through, outermost first: metrics and
/// access log, request id, panic guard, size checks.
pub(crate) fn wrap(
    router: axum::Router<Arc<Service>>,
    service: &Arc<Service>,
) -> axum::Router<Arc<Service>> {
    let request_id = axum::http::HeaderName::from_static("x-request-id");
    router
        .layer(from_fn_with_state(Arc::clone(service), check_size))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(panicked))
        .layer(PropagateRequestIdLayer::new(request_id.clone()))
        .layer(SetRequestIdLayer::new(request_id, RequestIds::new()))
        .layer(from_fn_with_state(Arc::clone(service), observe))
}

/// Request ids: a random prefix per process and a counter, so ids are unique across
/// restarts and cheap to make.
#[derive(Clone)]
struct RequestIds {
    prefix: u32,
    next: Arc<AtomicU64>,
}

impl RequestIds {
    fn new() -> RequestIds {
        use std::hash::BuildHasher;
        let prefix = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
        RequestIds {
            prefix: prefix as u32,
            next: Arc::new(AtomicU64::new(1)),
        }
    }
}

impl MakeRequestId for RequestIds {
    fn make_request_id<B>(&mut self, _: &axum::http::Request<B>) -> Option<RequestId> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let text = format!("{:08x}-{n:x}", self.prefix);
        HeaderValue::from_str(&text).ok().map(RequestId::new)
    }
}

/// A panic in a handler: a JSON 500, and an error event.
fn panicked(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into());
    tracing::error!(target: "flakeid_serve", panic = %what, "a request handler panicked");
    ServiceError::Internal(what).into_response()
}

/// 414 past [`Limits::max_uri`](crate::Limits::max_uri) bytes of path and query, 431
/// past [`Limits::max_headers`](crate::Limits::max_headers) bytes of headers, as JSON
/// (hyper's own limits lie above these and answer without a body).
async fn check_size(State(s): State<Arc<Service>>, request: Request, next: Next) -> Response {
    let (max_uri, max_headers) = (s.limits().max_uri, s.limits().max_headers);
    let target = request
        .uri()
        .path_and_query()
        .map_or(0, |p| p.as_str().len());
    if target > max_uri {
        return ServiceError::UriTooLong { limit: max_uri }.into_response();
    }
    let headers: usize = request
        .headers()
        .iter()
        .map(|(n, v)| n.as_str().len() + v.len())
        .sum();
    if headers > max_headers {
        return ServiceError::HeadersTooLarge { limit: max_headers }.into_response();
    }
    next.run(request).await
}

/// The route a request matched, for the metrics outside the router.
#[derive(Clone, Copy)]
struct Route(&'static str);

/// Copies the matched route onto the response, where the metrics layer reads it.
pub(crate) async fn remember_route(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .and_then(|m| ROUTES.iter().find(|r| **r == m.as_str()).copied());
    let mut r = next.run(request).await;
    if let Some(route) = route {
        r.extensions_mut().insert(Route(route));
    }
    r
}

/// A status as a label without allocating, for the ones the service answers.
fn status_label(status: StatusCode) -> metrics::SharedString {
    const KNOWN: [&str; 14] = [
        "200", "400", "401", "404", "405", "408", "413", "414", "415", "429", "431", "500", "503",
        "504",
    ];
    let code = status.as_str();
    match KNOWN.iter().find(|k| **k == code) {
        Some(k) => metrics::SharedString::const_str(k),
        None => metrics::SharedString::from(code.to_string()),
    }
}

/// Counts every answer by route and status (404s and 405s included, as `unmatched` when
/// no route matched), times it, and writes the access log line when asked for.
async fn observe(State(s): State<Arc<Service>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let access = s.access_log.then(|| {
        (
            request.method().clone(),
            request.uri().path().to_owned(),
            request
                .extensions()
                .get::<Arc<crate::conn::Conn>>()
                .map(|c| c.peer),
        )
    });
    let r = next.run(request).await;
    let route = r.extensions().get::<Route>().map_or("unmatched", |r| r.0);
    let status = r.status();
    metrics::counter!("flakeid_http_requests_total", "route" => route, "status" => status_label(status))
        .increment(1);
    let elapsed = started.elapsed();
    metrics::histogram!("flakeid_http_request_duration_seconds", "route" => route)
        .record(elapsed.as_secs_f64());
    if let Some((method, path, peer)) = access {
        let id = r
            .headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        tracing::info!(
            target: "flakeid_serve::access",
            method = %method,
            path,
            route,
            status = status.as_u16(),
            micros = elapsed.as_micros() as u64,
            request_id = id,
            peer = ?peer,
            "request"
        );
    }
    r
}

/// The request's deadline ([`Limits::request_timeout`](crate::Limits::request_timeout)):
/// past it, 503 with `Retry-After`.
pub(crate) async fn deadline(
    State(s): State<Arc<Service>>,
    request: Request,
    next: Next,
) -> Response {
    let bound = s.limits().request_timeout;
    match tokio::time::timeout(bound, next.run(request)).await {
        Ok(r) => r,
        Err(_) => ServiceError::Deadline(bound).into_response(),
    }
}

/// 401 unless the request carries a bearer token the service accepts (when it has any).
pub(crate) async fn require_token(
    State(s): State<Arc<Service>>,
    request: Request,
    next: Next,
) -> Response {
    let header = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes);
    if s.admits(header) {
        next.run(request).await
    } else {
        ServiceError::Unauthorized.into_response()
    }
}

/// The mint routes' edges: a `HEAD` gets the headers a `GET` would, and mints nothing;
/// every answer says `Cache-Control: no-store` (an ID served twice from a cache is a
/// duplicate).
pub(crate) async fn mint_edges(request: Request, next: Next) -> Response {
    let mut r = if request.method() == Method::HEAD {
        let form = match request.uri().path() {
            "/v1/ids" => form(request.headers()),
            _ => Form::Json,
        };
        Response::builder()
            .header(header::CONTENT_TYPE, form.content_type())
            .body(axum::body::Body::empty())
            .expect("a valid response")
    } else {
        next.run(request).await
    };
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}
