//! The HTTP service's edge ([`Edges`], around the whole router by [`app`]): what every
//! request goes through, written once: the request id (`x-request-id`, the client's own
//! if it sent one), the metrics and the access log by route and status, the request's
//! size checked (414, 431), the deadline, a panic caught as a JSON 500. It wraps the
//! router as one service, so a request clones nothing but the router's handle; layers
//! added to the routes (`Router::layer`, `from_fn`) box every route and are cloned per
//! request.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use axum::http::{HeaderName, HeaderValue, Method, Request};
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;
use tower::ServiceExt;

use crate::routes::ROUTES;
use crate::{Service, ServiceError};

/// The HTTP routes ([`router`](crate::router)) inside the service's edge, as `flakeid
/// serve` runs them: request ids, metrics and access log, size checks, the deadline, a
/// panic as a JSON 500.
pub fn app(service: Arc<Service>) -> Edges<axum::Router> {
    Edges {
        inner: crate::router(Arc::clone(&service)),
        service,
    }
}

/// A service inside the edge every request goes through (see [`app`]).
#[derive(Clone)]
pub struct Edges<S> {
    inner: S,
    service: Arc<Service>,
}

impl<S> std::fmt::Debug for Edges<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Edges").finish_non_exhaustive()
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> tower::Service<Request<B>> for Edges<S>
where
    S: tower::Service<Request<B>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // The clone that was made ready takes the request (tower's rule).
        let clone = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, clone);
        let service = Arc::clone(&self.service);
        Box::pin(async move { Ok(edges(service, ready, request).await) })
    }
}

/// One request through the edges.
async fn edges<S, B>(s: Arc<Service>, inner: S, request: Request<B>) -> Response
where
    S: tower::Service<Request<B>, Response = Response, Error = Infallible>,
{
    let started = Instant::now();
    // Every route is a fixed path: the route is the path, when it is one.
    let route = ROUTES.iter().find(|r| **r == request.uri().path()).copied();
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
    let id = request
        .headers()
        .get(REQUEST_ID)
        .filter(|v| kept_request_id(v.as_bytes()))
        .cloned()
        .unwrap_or_else(request_id);
    let mut r = match refusal(&s, &request) {
        Some(e) => e.into_response(),
        None => {
            let bound = s.limits().request_timeout;
            let answer = std::panic::AssertUnwindSafe(inner.oneshot(request)).catch_unwind();
            match tokio::time::timeout(bound, answer).await {
                Ok(Ok(Ok(r))) => r,
                Ok(Ok(Err(never))) => match never {},
                Ok(Err(panic)) => panicked(panic),
                Err(_) => ServiceError::Deadline(bound).into_response(),
            }
        }
    };
    r.headers_mut().insert(REQUEST_ID, id);
    observe(&s, route, &r, started, access);
    r
}

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest client request id kept (a UUID is 36, a W3C trace id 32).
pub const MAX_REQUEST_ID: usize = 128;

/// Whether a client's `x-request-id` is kept (echoed and logged): 1 to [`MAX_REQUEST_ID`]
/// bytes of ASCII letters, digits and `-`, `_`, `.`, `:`, `/`, `+`, `=`. Any other is
/// replaced by one of the server's own, so a client cannot put 8 KB, or control
/// characters, into every log line.
fn kept_request_id(id: &[u8]) -> bool {
    (1..=MAX_REQUEST_ID).contains(&id.len())
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:/+=".contains(b))
}

/// A request id: a random prefix per process and a counter, in hex (`1f3a9c0e-2b`), so
/// that ids are unique across restarts and cheap to make.
fn request_id() -> HeaderValue {
    static PREFIX: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let prefix = *PREFIX.get_or_init(|| {
        use std::hash::BuildHasher;
        std::collections::hash_map::RandomState::new().hash_one(std::process::id()) as u32
    });
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 25];
    for (i, b) in buf[..8].iter_mut().enumerate() {
        *b = HEX[(prefix >> (28 - 4 * i) & 0xf) as usize];
    }
    buf[8] = b'-';
    let digits = (64 - n.leading_zeros()).div_ceil(4).max(1) as usize;
    for i in 0..digits {
        buf[9 + i] = HEX[(n >> (4 * (digits - 1 - i)) & 0xf) as usize];
    }
    HeaderValue::from_bytes(&buf[..9 + digits]).expect("hex digits and a dash")
}

/// Why the request is refused before it reaches its route: 414 past
/// [`Limits::max_uri`](crate::Limits::max_uri) bytes of path and query, 431 past
/// [`Limits::max_headers`](crate::Limits::max_headers) bytes of headers (hyper's own
/// limits lie above these and answer without a body).
fn refusal<B>(s: &Service, request: &Request<B>) -> Option<ServiceError> {
    let limits = s.limits();
    let target = request
        .uri()
        .path_and_query()
        .map_or(0, |p| p.as_str().len());
    if target > limits.max_uri {
        return Some(ServiceError::UriTooLong {
            limit: limits.max_uri,
        });
    }
    let headers: usize = request
        .headers()
        .iter()
        .map(|(n, v)| n.as_str().len() + v.len())
        .sum();
    (headers > limits.max_headers).then_some(ServiceError::HeadersTooLarge {
        limit: limits.max_headers,
    })
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

/// Counts an answer by route (`unmatched` when no route matched: 404s) and status, times
/// it, and writes the access log line when asked for.
fn observe(
    s: &Service,
    route: Option<&'static str>,
    r: &Response,
    started: Instant,
    access: Option<(Method, String, Option<std::net::SocketAddr>)>,
) {
    let elapsed = started.elapsed();
    let status = r.status();
    s.http_metrics().record(route, status, elapsed);
    if let Some((method, path, peer)) = access {
        let id = r
            .headers()
            .get(REQUEST_ID)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        tracing::info!(
            target: "flakeid_serve::access",
            method = %method,
            path,
            route = route.unwrap_or("unmatched"),
            status = status.as_u16(),
            micros = elapsed.as_micros() as u64,
            request_id = id,
            peer = %peer.map_or_else(|| String::from("-"), |p| p.to_string()),
            "request"
        );
    }
}

#[cfg(test)]
mod tests {
    /// Request ids are the process's prefix and a counter in hex, each new.
    #[test]
    fn client_request_ids_are_kept_only_short_and_plain() {
        assert!(super::kept_request_id(b"3f2b-9c1e_a.b:c/d+e="));
        assert!(super::kept_request_id(&[b'a'; super::MAX_REQUEST_ID]));
        assert!(!super::kept_request_id(&[b'a'; super::MAX_REQUEST_ID + 1]));
        assert!(!super::kept_request_id(b""));
        assert!(!super::kept_request_id(b"a b"));
        assert!(!super::kept_request_id(b"a\x7f"));
        assert!(!super::kept_request_id("é".as_bytes()));
    }

    #[test]
    fn request_ids_are_hex_and_unique() {
        let a = super::request_id();
        let b = super::request_id();
        let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
        let (pa, na) = a.split_once('-').unwrap();
        let (pb, nb) = b.split_once('-').unwrap();
        assert_eq!(pa, pb);
        assert_eq!(pa.len(), 8);
        let (na, nb) = (
            u64::from_str_radix(na, 16).unwrap(),
            u64::from_str_radix(nb, 16).unwrap(),
        );
        assert!(nb > na, "{a} {b}");
    }
}
