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
//! - a response that makes no progress on its way out for the write timeout (a client
//!   that reads nothing: an HTTP/2 window of zero, a full socket) closes its connection;
//!   HTTP/2 buffers at most [`SEND_BUFFER`] per stream;
//! - at most `max_connections` open per listener: a new one closes another, or waits in
//!   the backlog until one ends, so that descriptors never run out. Evicted first: a
//!   connection that never completed a request (oldest first), then one whose responses
//!   make no progress, then the longest idle (no request in flight); a connection that
//!   is working on a request that moves is never evicted;
//! - on shutdown, a graceful close (HTTP/2 `GOAWAY`, idle HTTP/1 connections at once);
//! - hyper's own answers to HTTP/1 requests it cannot read (400, 414, 431) in JSON, as
//!   every other error ([`crate::h1_errors`]).
//!
//! Each request carries its connection ([`Conn`]) as an extension: the gRPC stream limit
//! per connection and the access log read it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::Limits;

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
const HEAD_BUFFER: usize = 256 << 10;

/// The most bytes HTTP/2 buffers of one stream's response ahead of the client's window.
const SEND_BUFFER: usize = 64 << 10;

/// A connection, as its requests see it.
#[derive(Debug)]
pub(crate) struct Conn {
    /// The client's address.
    pub(crate) peer: SocketAddr,
    /// gRPC `Stream` calls this connection may still open.
    pub(crate) streams: Arc<Semaphore>,
    id: u64,
    opened: Instant,
    /// Requests in flight (from the call to the end of the response body).
    active: AtomicUsize,
    /// Requests started so far.
    served: AtomicU64,
    /// Requests whose response went out whole (its body sent to its end).
    completed: AtomicU64,
    /// Responses on their way out (from the handler's answer to the end of the body).
    sending: AtomicUsize,
    /// When a response last moved (ns after `opened`): an answer ready, or its body
    /// polled (hyper polls it only when the client's window and the socket have room).
    progress_ns: AtomicU64,
    /// Whether the connection speaks HTTP/2 (known from its first request).
    h2: AtomicBool,
    /// When the last request ended (ns after `opened`).
    idle_since_ns: AtomicU64,
    /// Closes the connection to make room for a new one.
    evict: CancellationToken,
}

impl Conn {
    fn new(id: u64, peer: SocketAddr, streams: u32) -> Conn {
        Conn {
            peer,
            streams: Arc::new(Semaphore::new(streams as usize)),
            id,
            opened: Instant::now(),
            active: AtomicUsize::new(0),
            served: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            sending: AtomicUsize::new(0),
            progress_ns: AtomicU64::new(0),
            h2: AtomicBool::new(false),
            idle_since_ns: AtomicU64::new(0),
            evict: CancellationToken::new(),
        }
    }

    fn idle_since(&self) -> Instant {
        self.opened + Duration::from_nanos(self.idle_since_ns.load(Ordering::Relaxed))
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn progressed(&self) {
        self.progress_ns.store(self.now_ns(), Ordering::Relaxed);
    }

    /// How long its responses on their way out have not moved (`None`: none is).
    fn stalled_for(&self) -> Option<Duration> {
        if self.sending.load(Ordering::SeqCst) == 0 {
            return None;
        }
        let last = self.progress_ns.load(Ordering::Relaxed);
        Some(Duration::from_nanos(self.now_ns().saturating_sub(last)))
    }

    /// Its rank for eviction at the cap (lower goes first), if it may be evicted: one
    /// that never completed a request, by age; one whose responses have not moved for
    /// a second, by how long; one with no request in flight, by how long idle. One that
    /// works on a request that moves is not evictable.
    fn eviction_rank(&self) -> Option<(u8, Instant)> {
        if self.evict.is_cancelled() {
            return None;
        }
        let idle = self.active.load(Ordering::SeqCst) == 0;
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
        let ns = u64::try_from(self.opened.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.idle_since_ns.store(ns, Ordering::Relaxed);
        self.active.fetch_sub(1, Ordering::SeqCst);
    }

    /// Completes when the connection has been idle too long: no first request within
    /// `header` of its start; on HTTP/1, the next request not in within `header` of the
    /// last one's end (its headers included: a slow client is idle until its request is
    /// read); on HTTP/2, no request in flight for `idle`. Requests only touch counters; one
    /// timer per connection is checked when it fires and set again to the next moment the
    /// connection could be idle too long.
    async fn idle(&self, header: Duration, idle: Duration, write: Duration) -> &'static str {
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

/// A response on its way out, from the handler's answer until its body is dropped.
struct Sending {
    conn: Arc<Conn>,
    /// Whether the body was sent to its end.
    done: bool,
}

impl Sending {
    fn new(conn: &Arc<Conn>) -> Sending {
        conn.sending.fetch_add(1, Ordering::SeqCst);
        conn.progressed();
        Sending {
            conn: Arc::clone(conn),
            done: false,
        }
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        if self.done {
            self.conn.completed.fetch_add(1, Ordering::Relaxed);
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
        // Polled at all: the client's window and the socket had room.
        this.sending.conn.progressed();
        let frame = this.inner.as_mut().poll_frame(cx);
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
struct ConnService<S> {
    inner: S,
    conn: Arc<Conn>,
    attach: bool,
}

pin_project_lite::pin_project! {
    /// A request's answer, its body tracked (see [`Tracked`]).
    struct ConnFuture<F> {
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

impl<S, B> tower::Service<Request<Incoming>> for ConnService<S>
where
    S: tower::Service<Request<Incoming>, Response = Response<B>, Error = Infallible>,
    B: http_body::Body,
{
    type Response = Response<Tracked<B>>;
    type Error = Infallible;
    type Future = ConnFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<Incoming>) -> Self::Future {
        self.conn.start(request.version());
        let active = Active(Arc::clone(&self.conn));
        if self.attach {
            request.extensions_mut().insert(Arc::clone(&self.conn));
        }
        ConnFuture {
            inner: self.inner.call(request),
            active: Some(active),
        }
    }
}

/// The open connections of a listener, and room for more.
struct Registry {
    max: usize,
    open: Mutex<HashMap<u64, Arc<Conn>>>,
    freed: Notify,
}

/// A connection's place in its registry, given back when the connection ends.
struct Place {
    registry: Arc<Registry>,
    id: u64,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut open = self.registry.open.lock().unwrap_or_else(|e| e.into_inner());
        open.remove(&self.id);
        drop(open);
        self.registry.freed.notify_one();
    }
}

impl Registry {
    /// A place for `conn`: at once below the cap; at the cap, after the longest idle
    /// connection (none in flight) was closed for it, or after one ended by itself.
    async fn admit(self: &Arc<Self>, conn: &Arc<Conn>, listener: &'static str) -> Place {
        loop {
            let freed = self.freed.notified();
            {
                let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
                if open.len() < self.max {
                    open.insert(conn.id, Arc::clone(conn));
                    return Place {
                        registry: Arc::clone(self),
                        id: conn.id,
                    };
                }
                let victim = open
                    .values()
                    .filter_map(|c| c.eviction_rank().map(|rank| (rank, c)))
                    .min_by_key(|(rank, _)| *rank)
                    .map(|(_, c)| c);
                if let Some(victim) = victim {
                    victim.evict.cancel();
                    metrics::counter!("flakeid_connections_evicted_total", "listener" => listener)
                        .increment(1);
                }
            }
            freed.await;
        }
    }
}

/// What a listener serves, and how.
pub(crate) struct Listener {
    /// `http` or `grpc`, in metrics and logs.
    pub(crate) name: &'static str,
    pub(crate) tcp: TcpListener,
    pub(crate) tls: Option<TlsAcceptor>,
    /// gRPC: HTTP/2 only.
    pub(crate) http2_only: bool,
    /// The cap on open connections (already below the descriptor limit).
    pub(crate) max_connections: usize,
    /// Whether each request carries its connection (the gRPC stream limit, the access
    /// log's peer).
    pub(crate) attach: bool,
}

/// hyper's connection settings from the limits.
fn builder(limits: &Limits, http2_only: bool) -> auto::Builder<TokioExecutor> {
    let mut b = auto::Builder::new(TokioExecutor::new());
    // HTTP/1's header timeout is the idle watch's (no timer per request); hyper's own
    // would arm one for every request.
    b.http1()
        .header_read_timeout(None)
        .keep_alive(true)
        .max_buf_size(HEAD_BUFFER);
    b.http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(limits.keepalive_interval)
        .keep_alive_timeout(limits.keepalive_timeout)
        .max_concurrent_streams(limits.max_streams)
        .max_send_buf_size(SEND_BUFFER)
        .max_header_list_size(HEAD_BUFFER as u32);
    if http2_only { b.http2_only() } else { b }
}

/// Serves `service` on the listener's connections until `shutdown`: then stops
/// accepting and closes every connection gracefully. Connection tasks are tracked by
/// `tracker`, so the caller can wait for in-flight requests.
pub(crate) async fn serve<S, B>(
    listener: Listener,
    service: S,
    limits: Limits,
    shutdown: CancellationToken,
    tracker: TaskTracker,
) where
    S: HttpService<B>,
    B: ResponseBody,
{
    let Listener {
        name,
        tcp,
        tls,
        http2_only,
        max_connections,
        attach,
    } = listener;
    let builder = Arc::new(builder(&limits, http2_only));
    let registry = Arc::new(Registry {
        max: max_connections.max(1),
        open: Mutex::new(HashMap::new()),
        freed: Notify::new(),
    });
    let mut accepted = crate::accept::accept_loop(tcp, name);
    let mut next_id = 0u64;
    metrics::gauge!("flakeid_connections_open", "listener" => name).set(0.0);
    loop {
        let (stream, peer) = tokio::select! {
            biased;
            _ = shutdown.cancelled() => break,
            a = accepted.recv() => match a {
                Some(a) => a,
                None => break,
            },
        };
        next_id += 1;
        let conn = Arc::new(Conn::new(next_id, peer, limits.streams_per_connection));
        let place = tokio::select! {
            biased;
            _ = shutdown.cancelled() => break,
            p = registry.admit(&conn, name) => p,
        };
        metrics::counter!("flakeid_connections_total", "listener" => name).increment(1);
        metrics::gauge!("flakeid_connections_open", "listener" => name).increment(1.0);
        let task = connection(
            stream,
            conn,
            attach,
            tls.clone(),
            Arc::clone(&builder),
            service.clone(),
            limits.clone(),
            shutdown.clone(),
            name,
        );
        tracker.spawn(async move {
            task.await;
            metrics::gauge!("flakeid_connections_open", "listener" => name).decrement(1.0);
            drop(place);
        });
    }
}

/// One connection, from its TLS handshake to its close.
#[allow(clippy::too_many_arguments)]
async fn connection<S, B>(
    stream: tokio::net::TcpStream,
    conn: Arc<Conn>,
    attach: bool,
    tls: Option<TlsAcceptor>,
    builder: Arc<auto::Builder<TokioExecutor>>,
    service: S,
    limits: Limits,
    shutdown: CancellationToken,
    name: &'static str,
) where
    S: HttpService<B>,
    B: ResponseBody,
{
    let why = match tls {
        None => serve_io(stream, &conn, attach, &builder, service, &limits, &shutdown).await,
        Some(acceptor) => {
            let handshake = tokio::time::timeout(limits.header_timeout, acceptor.accept(stream));
            let tls = tokio::select! {
                h = handshake => h,
                _ = conn.evict.cancelled() => return closed(name, "evicted"),
                _ = shutdown.cancelled() => return closed(name, "shutdown"),
            };
            match tls {
                Ok(Ok(io)) => {
                    serve_io(io, &conn, attach, &builder, service, &limits, &shutdown).await
                }
                Ok(Err(_)) | Err(_) => {
                    metrics::counter!("flakeid_tls_handshake_failures_total").increment(1);
                    "tls handshake failed"
                }
            }
        }
    };
    closed(name, why);
}

fn closed(name: &'static str, why: &'static str) {
    metrics::counter!("flakeid_connections_closed_total", "listener" => name, "reason" => why)
        .increment(1);
}

/// Serves one connection's requests until it closes, idles out, is evicted, or the
/// server shuts down (then gracefully: in-flight requests finish). Why it ended.
#[allow(clippy::too_many_arguments)]
async fn serve_io<I, S, B>(
    io: I,
    conn: &Arc<Conn>,
    attach: bool,
    builder: &auto::Builder<TokioExecutor>,
    service: S,
    limits: &Limits,
    shutdown: &CancellationToken,
) -> &'static str
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: HttpService<B>,
    B: ResponseBody,
{
    let service = ConnService {
        inner: service,
        conn: Arc::clone(conn),
        attach,
    };
    let hyper_service = hyper_util::service::TowerToHyperService::new(service);
    let io = crate::h1_errors::JsonErrors::new(io);
    let served = builder.serve_connection(TokioIo::new(io), hyper_service);
    tokio::pin!(served);
    let mut draining = false;
    loop {
        tokio::select! {
            r = served.as_mut() => return match r {
                Ok(()) => "closed",
                Err(e) => {
                    tracing::debug!(target: "flakeid_serve", peer = %conn.peer, error = %e, "connection ended by an error");
                    "error"
                }
            },
            why = conn.idle(limits.header_timeout, limits.idle_timeout, limits.write_timeout), if !draining => return why,
            _ = conn.evict.cancelled() => return "evicted",
            _ = shutdown.cancelled(), if !draining => {
                served.as_mut().graceful_shutdown();
                draining = true;
            }
        }
    }
}
