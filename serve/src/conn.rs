//! The connection server both listeners run (instead of `axum::serve` and tonic's
//! server), so that every connection, plain or TLS, HTTP or gRPC, is bounded the same way:
//!
//! - a TLS handshake within the header timeout, off the accept loop;
//! - the first request within the header timeout of the connection's start; on HTTP/1
//!   each next request too, within the header timeout of the last one's end (a slow
//!   client's partial headers are no request yet), so a kept-alive HTTP/1 connection
//!   closes after the header timeout idle, as hyper's header-read timeout would;
//! - an HTTP/2 (gRPC) connection closed after the idle timeout with no request in flight;
//! - HTTP/2 keep-alive pings, and a bound on concurrent streams;
//! - a response that waits for the client and makes no progress for the write timeout (a
//!   client that reads nothing: an HTTP/2 window of zero, a full socket) closes its
//!   connection, whatever new streams it opens meanwhile; a response whose body has
//!   nothing to send yet (a health watch) waits on itself and is never stalled; HTTP/2
//!   buffers at most [`SEND_BUFFER`] per stream;
//! - at most `max_connections` open per listener: a new one takes the place of another,
//!   told to close (the accept loop does not wait for the close), or waits in the backlog
//!   until one ends, so that descriptors never run out. Evicted first: a connection that
//!   never completed a request (oldest first), then one whose responses make no
//!   progress, then the longest idle (no request in flight, or only streams that wait for
//!   news); a connection that is working on a request that moves is never evicted;
//! - on shutdown, a graceful close (HTTP/2 `GOAWAY`, idle HTTP/1 connections at once);
//! - hyper's own answers to HTTP/1 requests it cannot read (400, 414, 431) in JSON, as
//!   every other error ([`crate::h1_errors`]).
//!
//! Each request carries its connection ([`Conn`]) as an extension: the gRPC stream limit
//! per connection and the access log read it.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{Request, Response};
use hyper::body::Incoming;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::stall::Stall;

/// A response body hyper can send from any task.
pub(crate) trait ResponseBody:
    http_body::Body<Data: Send, Error: Into<Box<dyn std::error::Error + Send + Sync>>> + Send + 'static
{
}

impl<B> ResponseBody for B where
    B: http_body::Body<Data: Send, Error: Into<Box<dyn std::error::Error + Send + Sync>>>
        + Send
        + 'static
{
}

/// A service that answers every request of a connection, cloned into each connection's task.
pub(crate) trait HttpService<B>:
    tower::Service<
        Request<Incoming>,
        Response = Response<B>,
        Error = Infallible,
        Future: Send + 'static,
    > + Clone
    + Send
    + 'static
{
}

impl<S, B> HttpService<B> for S where
    S: tower::Service<
            Request<Incoming>,
            Response = Response<B>,
            Error = Infallible,
            Future: Send + 'static,
        > + Clone
        + Send
        + 'static
{
}

/// The most bytes hyper buffers of an HTTP/1 request head, and of an HTTP/2 header list:
/// above the service's own limits (which answer JSON), below memory trouble.
pub(crate) const HEAD_BUFFER: usize = 256 << 10;

/// The most bytes HTTP/2 buffers of one stream's response ahead of the client's window.
pub(crate) const SEND_BUFFER: usize = 64 << 10;

/// A connection, as its requests see it.
#[derive(Debug)]
pub(crate) struct Conn {
    /// The client's address.
    pub(crate) peer: SocketAddr,
    /// gRPC `Stream` calls this connection may still open.
    pub(crate) streams: Arc<Semaphore>,
    pub(crate) id: u64,
    opened: Instant,
    /// The same moment on the TSC clock, which the per-request marks below read (a few
    /// instructions; the system clock costs about a hundred a read).
    opened_tsc: quanta::Instant,
    /// Requests in flight (from the call to the end of the response body).
    active: AtomicUsize,
    /// Requests started so far.
    served: AtomicU64,
    /// Requests whose response went out whole (its body sent to its end).
    completed: AtomicU64,
    /// Responses on their way out (from the handler's answer to the end of the body).
    sending: AtomicUsize,
    /// Of those, the ones that wait for the client, and when they last moved (ns after
    /// `opened`). A new answer beside one that waits is no progress: a client that opens
    /// streams and reads none of them stalls all the same.
    stall: Stall,
    /// Whether the connection speaks HTTP/2 (known from its first request).
    h2: AtomicBool,
    /// When the last request ended (ns after `opened`).
    idle_since_ns: AtomicU64,
    /// Closes the connection to make room for a new one.
    pub(crate) evict: CancellationToken,
}

impl Conn {
    pub(crate) fn new(id: u64, peer: SocketAddr, streams: u32) -> Conn {
        Conn {
            peer,
            streams: Arc::new(Semaphore::new(streams as usize)),
            id,
            opened: Instant::now(),
            opened_tsc: quanta::Instant::now(),
            active: AtomicUsize::new(0),
            served: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            sending: AtomicUsize::new(0),
            stall: Stall::default(),
            h2: AtomicBool::new(false),
            idle_since_ns: AtomicU64::new(0),
            evict: CancellationToken::new(),
        }
    }

    fn idle_since(&self) -> Instant {
        self.opened + Duration::from_nanos(self.idle_since_ns.load(Ordering::Relaxed))
    }

    fn now_ns(&self) -> u64 {
        let since = quanta::Instant::now().saturating_duration_since(self.opened_tsc);
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
    }

    /// How long its responses that wait for the client have not moved (`None`: none
    /// waits for it).
    fn stalled_for(&self) -> Option<Duration> {
        self.stall
            .stalled_for(self.now_ns())
            .map(Duration::from_nanos)
    }

    /// Whether every request in flight has its answer out and waits on its own body (a
    /// stream with no news): nothing waits for the client, nothing is worked on.
    fn quiet(&self) -> bool {
        let active = self.active.load(Ordering::SeqCst);
        active > 0 && self.sending.load(Ordering::SeqCst) == active && self.stall.waiting() == 0
    }

    /// Its rank for eviction at the cap (lower goes first), if it may be evicted: one
    /// that never completed a request, by age; one whose responses have not moved for
    /// a second, by how long; one with no request in flight, or whose streams all wait
    /// for news (a health watch), by how long idle. One that works on a request, or
    /// sends a response that moves, is not evictable.
    pub(crate) fn eviction_rank(&self) -> Option<(u8, Instant)> {
        if self.evict.is_cancelled() {
            return None;
        }
        let idle = self.active.load(Ordering::SeqCst) == 0 || self.quiet();
        let stalled = self.stalled_for().filter(|d| *d >= Duration::from_secs(1));
        if self.completed.load(Ordering::Relaxed) == 0 && (idle || stalled.is_some()) {
            return Some((0, self.opened));
        }
        if let Some(d) = stalled {
            return Some((1, Instant::now() - d));
        }
        idle.then(|| (2, self.idle_since()))
    }

    fn start(&self, version: http::Version) {
        if self.served.fetch_add(1, Ordering::Relaxed) == 0 && version == http::Version::HTTP_2 {
            self.h2.store(true, Ordering::Relaxed);
        }
        self.active.fetch_add(1, Ordering::SeqCst);
    }

    fn end(&self) {
        self.idle_since_ns.store(self.now_ns(), Ordering::Relaxed);
        self.active.fetch_sub(1, Ordering::SeqCst);
    }

    /// Completes when the connection has been idle too long: no first request within
    /// `header` of its start; on HTTP/1, the next request not in within `header` of the
    /// last one's end (its headers included: a slow client is idle until its request is
    /// read); on HTTP/2, no request in flight for `idle`. Requests only touch counters; one
    /// timer per connection is checked when it fires and set again to the next moment the
    /// connection could be idle too long.
    pub(crate) async fn idle(
        &self,
        header: Duration,
        idle: Duration,
        write: Duration,
    ) -> &'static str {
        let sleep = tokio::time::sleep(header.min(write));
        tokio::pin!(sleep);
        loop {
            sleep.as_mut().await;
            let now = tokio::time::Instant::now();
            if let Some(stalled) = self.stalled_for() {
                if stalled >= write {
                    return "write timeout";
                }
                sleep
                    .as_mut()
                    .reset(now + write.saturating_sub(stalled).min(idle));
                continue;
            }
            if self.active.load(Ordering::SeqCst) > 0 {
                // A response may start on its way out at any moment: look again within
                // the write timeout.
                sleep.as_mut().reset(now + idle.min(write));
                continue;
            }
            let (bound, why) = match self.served.load(Ordering::Relaxed) {
                0 => (header, "header timeout"),
                _ if !self.h2.load(Ordering::Relaxed) => (header, "header timeout"),
                _ => (idle, "idle timeout"),
            };
            let deadline = tokio::time::Instant::from_std(self.idle_since() + bound);
            if deadline <= now {
                return why;
            }
            sleep.as_mut().reset(deadline);
        }
    }
}

/// A request in flight on its connection, until its response body is dropped.
struct Active(Arc<Conn>);

impl Drop for Active {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// What a response on its way out waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// The client, to take the answer (its body not polled yet).
    Answer,
    /// The client, to take the frame its body handed over.
    Frame,
    /// Its own body, which had nothing to send (a watch with no news).
    Own,
}

/// A response on its way out, from the handler's answer until its body is dropped.
struct Sending {
    conn: Arc<Conn>,
    /// What it waits for: counted in the connection's [`Stall`] unless [`Wait::Own`].
    wait: Wait,
    /// Whether the body was sent to its end.
    done: bool,
}

impl Sending {
    /// The answer is ready: it waits for the client from now.
    fn new(conn: &Arc<Conn>) -> Sending {
        conn.sending.fetch_add(1, Ordering::SeqCst);
        conn.stall.starts_waiting(conn.now_ns());
        Sending {
            conn: Arc::clone(conn),
            wait: Wait::Answer,
            done: false,
        }
    }

    /// Its body was polled and handed over a frame (`more`: it waits for the client to
    /// take it), or had nothing to send yet (it waits on itself). hyper polls a body
    /// once as soon as its head is out, whatever the client's window; it polls it again
    /// only after the frame before went out: that is progress, the first poll is not.
    fn polled(&mut self, more: bool) {
        let next = if more { Wait::Frame } else { Wait::Own };
        let stall = &self.conn.stall;
        match (self.wait, next) {
            // The frame before went out.
            (Wait::Frame, _) => stall.progressed(self.conn.now_ns()),
            (Wait::Own, Wait::Frame) => stall.starts_waiting(self.conn.now_ns()),
            _ => {}
        }
        if self.wait != Wait::Own && next == Wait::Own {
            stall.stops_waiting();
        }
        self.wait = next;
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        if self.done {
            self.conn.completed.fetch_add(1, Ordering::Relaxed);
        }
        if self.wait != Wait::Own {
            self.conn.stall.stops_waiting();
        }
        self.conn.sending.fetch_sub(1, Ordering::SeqCst);
    }
}

pin_project_lite::pin_project! {
    /// A response body that keeps its request counted as in flight while it is sent.
    pub(crate) struct Tracked<B> {
        #[pin]
        inner: B,
        sending: Sending,
        active: Active,
    }
}

impl<B: http_body::Body> http_body::Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<B::Data>, B::Error>>> {
        let mut this = self.project();
        // Polled at all: the client's window and the socket had room (hyper polls a body
        // only then). A frame handed over waits for the client; a body with nothing to
        // send yet waits on itself.
        let frame = this.inner.as_mut().poll_frame(cx);
        this.sending
            .polled(matches!(frame, Poll::Ready(Some(Ok(_)))));
        // Sent whole: its end reached (hyper may stop at a body's exact size without
        // asking for the end).
        if matches!(frame, Poll::Ready(None)) || this.inner.is_end_stream() {
            this.sending.done = true;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A listener's service on one connection: each request is counted in flight until its
/// response is sent, and, where the routes ask for it, carries the connection.
#[derive(Clone)]
pub(crate) struct ConnService<S> {
    pub(crate) inner: S,
    pub(crate) conn: Arc<Conn>,
    /// Whether requests carry the connection as an extension.
    pub(crate) attach: bool,
}

pin_project_lite::pin_project! {
    /// A request's answer, its body tracked (see [`Tracked`]).
    pub(crate) struct ConnFuture<F> {
        #[pin]
        inner: F,
        active: Option<Active>,
    }
}

impl<F, B> Future for ConnFuture<F>
where
    F: Future<Output = Result<Response<B>, Infallible>>,
    B: http_body::Body,
{
    type Output = Result<Response<Tracked<B>>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let r = std::task::ready!(this.inner.poll(cx))?;
        let active = this.active.take().expect("polled after it was ready");
        let sending = Sending::new(&active.0);
        Poll::Ready(Ok(r.map(|inner| {
            let mut sending = sending;
            // A body with nothing to send (hyper may never poll it) is sent whole.
            sending.done = inner.is_end_stream();
            Tracked {
                inner,
                sending,
                active,
            }
        })))
    }
}

/// hyper calls a connection's service by reference; each request takes a clone of the
/// inner service, readied and called by tower's `Oneshot` (as hyper-util's adapter does,
/// less its clone of the whole `ConnService` and its own `Oneshot` around this one).
impl<S, B> hyper::service::Service<Request<Incoming>> for ConnService<S>
where
    S: tower::Service<Request<Incoming>, Response = Response<B>, Error = Infallible> + Clone,
    B: http_body::Body,
{
    type Response = Response<Tracked<B>>;
    type Error = Infallible;
    type Future = ConnFuture<tower::util::Oneshot<S, Request<Incoming>>>;

    fn call(&self, mut request: Request<Incoming>) -> Self::Future {
        self.conn.start(request.version());
        let active = Active(Arc::clone(&self.conn));
        if self.attach {
            request.extensions_mut().insert(Arc::clone(&self.conn));
        }
        ConnFuture {
            inner: tower::ServiceExt::oneshot(self.inner.clone(), request),
            active: Some(active),
        }
    }
}
