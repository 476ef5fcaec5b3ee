//! The connection server both listeners run (instead of `axum::serve` and tonic's
//! server), so that every connection, plain or TLS, HTTP or gRPC, is bounded the same way:
//!
//! - a TLS handshake within the header timeout, off the accept loop;
//! - the first request within the header timeout of the connection's start; hyper's own
//!   header-read timeout bounds each later HTTP/1 request's headers, and the wait for
//!   them, so a kept-alive HTTP/1 connection closes after the header timeout idle;
//! - closed after the idle timeout with no request in flight (HTTP/2, gRPC);
//! - HTTP/2 keep-alive pings, and a bound on concurrent streams;
//! - at most `max_connections` open per listener: a new one closes the longest idle
//!   connection (no request in flight: a slow or silent client), or waits in the backlog
//!   until one ends, so that descriptors never run out;
//! - on shutdown, a graceful close (HTTP/2 `GOAWAY`, idle HTTP/1 connections at once).
//!
//! Each request carries its connection ([`Conn`]) as an extension: the gRPC stream limit
//! per connection and the access log read it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
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

/// The most bytes hyper buffers of an HTTP/1 request head, and of an HTTP/2 header list:
/// above the service's own limits (which answer JSON), below memory trouble.
const HEAD_BUFFER: usize = 256 << 10;

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
    /// When the last request ended (ns after `opened`).
    idle_since_ns: AtomicU64,
    /// Wakes the idle watch when a request starts or ends.
    changed: Notify,
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
            idle_since_ns: AtomicU64::new(0),
            changed: Notify::new(),
            evict: CancellationToken::new(),
        }
    }

    fn idle_since(&self) -> Instant {
        self.opened + Duration::from_nanos(self.idle_since_ns.load(Ordering::Relaxed))
    }

    fn start(&self) {
        self.served.fetch_add(1, Ordering::Relaxed);
        if self.active.fetch_add(1, Ordering::SeqCst) == 0 {
            self.changed.notify_one();
        }
    }

    fn end(&self) {
        let ns = u64::try_from(self.opened.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.idle_since_ns.store(ns, Ordering::Relaxed);
        if self.active.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.changed.notify_one();
        }
    }

    /// Completes when the connection has been idle too long: no first request within
    /// `header` of its start, or no request in flight for `idle` since the last ended.
    async fn idle(&self, header: Duration, idle: Duration) -> &'static str {
        loop {
            let changed = self.changed.notified();
            if self.active.load(Ordering::SeqCst) > 0 {
                changed.await;
                continue;
            }
            let (bound, why) = match self.served.load(Ordering::Relaxed) {
                0 => (header, "header timeout"),
                _ => (idle, "idle timeout"),
            };
            let deadline = tokio::time::Instant::from_std(self.idle_since() + bound);
            tokio::select! {
                _ = changed => {}
                _ = tokio::time::sleep_until(deadline) => {
                    if self.active.load(Ordering::SeqCst) == 0 {
                        return why;
                    }
                }
            }
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

pin_project_lite::pin_project! {
    /// A response body that keeps its request counted as in flight while it is sent.
    pub(crate) struct Tracked<B> {
        #[pin]
        inner: B,
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
        self.project().inner.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A listener's service on one connection: each request carries the connection and is
/// counted in flight until its response is sent.
#[derive(Clone)]
struct ConnService<S> {
    inner: S,
    conn: Arc<Conn>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> tower::Service<Request<Incoming>> for ConnService<S>
where
    S: tower::Service<Request<Incoming>, Response = Response<B>, Error = Infallible>,
    S::Future: Send + 'static,
    B: 'static,
{
    type Response = Response<Tracked<B>>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<Incoming>) -> Self::Future {
        self.conn.start();
        let active = Active(Arc::clone(&self.conn));
        request.extensions_mut().insert(Arc::clone(&self.conn));
        let response = self.inner.call(request);
        Box::pin(async move {
            let r = response.await?;
            Ok(r.map(|inner| Tracked { inner, active }))
        })
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
                let idle = open
                    .values()
                    .filter(|c| c.active.load(Ordering::SeqCst) == 0 && !c.evict.is_cancelled())
                    .min_by_key(|c| c.idle_since());
                if let Some(victim) = idle {
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
}

/// hyper's connection settings from the limits.
fn builder(limits: &Limits, http2_only: bool) -> auto::Builder<TokioExecutor> {
    let mut b = auto::Builder::new(TokioExecutor::new());
    b.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true)
        .max_buf_size(HEAD_BUFFER);
    b.http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(limits.keepalive_interval)
        .keep_alive_timeout(limits.keepalive_timeout)
        .max_concurrent_streams(limits.max_streams)
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
    S: tower::Service<Request<Incoming>, Response = Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let Listener {
        name,
        tcp,
        tls,
        http2_only,
        max_connections,
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
    tls: Option<TlsAcceptor>,
    builder: Arc<auto::Builder<TokioExecutor>>,
    service: S,
    limits: Limits,
    shutdown: CancellationToken,
    name: &'static str,
) where
    S: tower::Service<Request<Incoming>, Response = Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let why = match tls {
        None => serve_io(stream, &conn, &builder, service, &limits, &shutdown).await,
        Some(acceptor) => {
            let handshake = tokio::time::timeout(limits.header_timeout, acceptor.accept(stream));
            let tls = tokio::select! {
                h = handshake => h,
                _ = conn.evict.cancelled() => return closed(name, "evicted"),
                _ = shutdown.cancelled() => return closed(name, "shutdown"),
            };
            match tls {
                Ok(Ok(io)) => serve_io(io, &conn, &builder, service, &limits, &shutdown).await,
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
async fn serve_io<I, S, B>(
    io: I,
    conn: &Arc<Conn>,
    builder: &auto::Builder<TokioExecutor>,
    service: S,
    limits: &Limits,
    shutdown: &CancellationToken,
) -> &'static str
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: tower::Service<Request<Incoming>, Response = Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let service = ConnService {
        inner: service,
        conn: Arc::clone(conn),
    };
    let hyper_service = hyper_util::service::TowerToHyperService::new(service);
    let served = builder.serve_connection(TokioIo::new(io), hyper_service);
    tokio::pin!(served);
    let mut draining = false;
    loop {
        tokio::select! {
            r = served.as_mut() => return match r {
                Ok(()) => "closed",
                // hyper's header-read timeout: a request's headers (or, on a kept-alive
                // HTTP/1 connection, the next request) did not come in time.
                Err(e) if e.downcast_ref::<hyper::Error>().is_some_and(hyper::Error::is_timeout) => {
                    "header timeout"
                }
                Err(_) => "error",
            },
            why = conn.idle(limits.header_timeout, limits.idle_timeout), if !draining => return why,
            _ = conn.evict.cancelled() => return "evicted",
            _ = shutdown.cancelled(), if !draining => {
                served.as_mut().graceful_shutdown();
                draining = true;
            }
        }
    }
}
