//! The HTTP service's edge ([`Edges`], around the whole router by [`app`]): what every
//! request goes through, written once: the request id (`x-request-id`, the client's own
//! if it sent one), the metrics and the access log by route and status, the request's
//! size checked (414, 431), the deadline, a panic caught as a JSON 500. It wraps the
//! router as one service, so a request clones nothing but the router's handle; layers
//! added to the routes (`Router::layer`, `from_fn`) box every route and are cloned per
//! request.

use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use axum::http::{HeaderName, HeaderValue, Method, Request};
use axum::response::{IntoResponse, Response};

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

impl<S, B> tower::Service<Request<B>> for Edges<S>
where
    S: tower::Service<Request<B>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = EdgesFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let s = &self.service;
        let started = quanta::Instant::now();
        // Every route is a fixed path: the route is the path, when it is one.
        let route = ROUTES.iter().position(|r| *r == request.uri().path());
        let access = s.access_log.then(|| {
            Box::new((
                request.method().clone(),
                request.uri().path().to_owned(),
                request
                    .extensions()
                    .get::<Arc<crate::conn::Conn>>()
                    .map(|c| c.peer),
            ))
        });
        // One pass over the headers: their size, and the client's request id.
        let (mut headers, mut client_id) = (0, None);
        for (name, value) in request.headers() {
            headers += name.as_str().len() + value.len();
            if *name == REQUEST_ID {
                client_id = Some(value);
            }
        }
        let id = client_id
            .filter(|v| kept_request_id(v.as_bytes()))
            .cloned()
            .unwrap_or_else(request_id);
        let refused = refusal(s, &request, headers);
        let mark = Mark {
            service: Arc::clone(s),
            started,
            route,
            access,
            id,
        };
        if let Some(e) = refused {
            return EdgesFuture::ready(e.into_response(), mark);
        }
        // The clone that was made ready takes the request (tower's rule).
        let clone = self.inner.clone();
        let mut ready = std::mem::replace(&mut self.inner, clone);
        match std::panic::catch_unwind(AssertUnwindSafe(|| ready.call(request))) {
            Ok(answer) => EdgesFuture {
                answer: Some(answer),
                deadline: None,
                refused: None,
                mark: Some(mark),
            },
            Err(panic) => EdgesFuture::ready(panicked(panic), mark),
        }
    }
}

/// What the edges write on an answer: its request id, and its count, time and access
/// log line.
struct Mark {
    service: Arc<Service>,
    started: quanta::Instant,
    /// The route's place in [`ROUTES`], if the path is one.
    route: Option<usize>,
    /// Boxed: only with the access log on.
    access: Option<Box<Access>>,
    id: HeaderValue,
}

/// What the access log line says of a request besides its answer: method, path, peer.
type Access = (Method, String, Option<std::net::SocketAddr>);

pin_project_lite::pin_project! {
    /// One request through the edges (see [`app`]): the route's answer, bounded by the
    /// deadline and a panic caught as a JSON 500, then marked and counted. Named rather
    /// than boxed, so a request allocates no future of its own; the deadline's timer is
    /// made only when the answer first waits (most come at their first poll).
    pub struct EdgesFuture<F> {
        #[pin]
        answer: Option<F>,
        deadline: Option<Pin<Box<tokio::time::Sleep>>>,
        // Boxed: refusals are rare, and every future carries the field.
        refused: Option<Box<Response>>,
        mark: Option<Mark>,
    }
}

impl<F> EdgesFuture<F> {
    /// An answer given before any route ran (a refusal, a panic in the router's call).
    fn ready(response: Response, mark: Mark) -> EdgesFuture<F> {
        EdgesFuture {
            answer: None,
            deadline: None,
            refused: Some(Box::new(response)),
            mark: Some(mark),
        }
    }
}

impl<F> std::fmt::Debug for EdgesFuture<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgesFuture").finish_non_exhaustive()
    }
}

impl<F> Future for EdgesFuture<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let mut r = match this.answer.as_mut().as_pin_mut() {
            None => *this.refused.take().expect("polled after it was ready"),
            Some(answer) => match std::panic::catch_unwind(AssertUnwindSafe(|| answer.poll(cx))) {
                Ok(Poll::Ready(Ok(r))) => r,
                Ok(Poll::Ready(Err(never))) => match never {},
                Err(panic) => panicked(panic),
                Ok(Poll::Pending) => {
                    let mark = this.mark.as_ref().expect("polled after it was ready");
                    let bound = mark.service.limits().request_timeout;
                    let deadline = this.deadline.get_or_insert_with(|| {
                        Box::pin(tokio::time::sleep(
                            bound.saturating_sub(mark.started.elapsed()),
                        ))
                    });
                    if deadline.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    ServiceError::Deadline(bound).into_response()
                }
            },
        };
        // The answer's future ends here (a route past its deadline is called off).
        this.answer.set(None);
        let mark = this.mark.take().expect("polled after it was ready");
        r.headers_mut().insert(REQUEST_ID, mark.id);
        observe(&mark.service, mark.route, &r, mark.started, mark.access);
        Poll::Ready(Ok(r))
    }
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
/// that ids are unique across restarts and cheap to make (cut from the thread's block:
/// no allocation of their own).
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
    HeaderValue::from_maybe_shared(crate::cuts::cut(&[&buf[..9 + digits]]))
        .expect("hex digits and a dash")
}

/// Why the request is refused before it reaches its route: 414 past
/// [`Limits::max_uri`](crate::Limits::max_uri) bytes of path and query, 431 past
/// [`Limits::max_headers`](crate::Limits::max_headers) bytes of headers (hyper's own
/// limits lie above these and answer without a body). `headers` is the size of the
/// request's header names and values.
fn refusal<B>(s: &Service, request: &Request<B>, headers: usize) -> Option<ServiceError> {
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
    route: Option<usize>,
    r: &Response,
    started: quanta::Instant,
    access: Option<Box<Access>>,
) {
    let elapsed = started.elapsed();
    let status = r.status();
    s.http_metrics().record(route, status, elapsed);
    if let Some((method, path, peer)) = access.map(|a| *a) {
        let id = r
            .headers()
            .get(REQUEST_ID)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        tracing::info!(
            target: "flakeid_serve::access",
            method = %method,
            path,
            route = route.map_or("unmatched", |i| ROUTES[i]),
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
    /// A client's request id is kept only when short and plain.
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

    /// The server's own request ids: the process's prefix and a counter in hex, each new.
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
