//! The accept loop and each connection's life (see [`crate::conn`] for the bounds every
//! connection has): the registry of a listener's open connections and who is evicted
//! first, hyper's settings from the limits, the TLS handshake, and serving one
//! connection until it closes, idles out, is evicted or the server shuts down.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::Limits;

use crate::conn::{Conn, ConnService, HEAD_BUFFER, HttpService, ResponseBody, SEND_BUFFER};

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
    /// A place for `conn`: at once below the cap; at the cap, the place of the first
    /// connection to evict (see [`Conn::eviction_rank`]), told to close and taken at once
    /// (the accept loop never waits for a close); else after one ended by itself.
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
                    .map(|(_, c)| Arc::clone(c));
                if let Some(victim) = victim {
                    victim.evict.cancel();
                    metrics::counter!("flakeid_connections_evicted_total", "listener" => listener)
                        .increment(1);
                    // Its place is the new connection's now: it closes on its own task.
                    open.remove(&victim.id);
                    open.insert(conn.id, Arc::clone(conn));
                    return Place {
                        registry: Arc::clone(self),
                        id: conn.id,
                    };
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
    let io = crate::h1_errors::JsonErrors::new(io);
    let served = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(served);
    // The rare events (idle too long, evicted, shutdown) are watched by a task of their
    // own, which this one hears through a channel: a request's wakes then poll the
    // connection and one empty channel, not three watches each time.
    let (tell, mut events) = tokio::sync::mpsc::channel(1);
    let _watch = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(watch(
        Arc::clone(conn),
        limits.clone(),
        shutdown.clone(),
        tell,
    )));
    loop {
        tokio::select! {
            biased;
            r = served.as_mut() => return match r {
                Ok(()) => "closed",
                Err(e) => {
                    tracing::debug!(target: "flakeid_serve", peer = %conn.peer, error = %e, "connection ended by an error");
                    "error"
                }
            },
            event = events.recv() => match event {
                Some(Event::Drain) => served.as_mut().graceful_shutdown(),
                Some(Event::End(why)) => return why,
                None => return "error",
            },
        }
    }
}

/// What a connection's watch tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    /// The server shuts down: finish the requests in flight, take no more.
    Drain,
    /// Close now, for this reason (idle too long, a write timeout, evicted).
    End(&'static str),
}

/// Watches one connection for its rare events; aborted when the connection ends.
async fn watch(
    conn: Arc<Conn>,
    limits: Limits,
    shutdown: CancellationToken,
    tell: tokio::sync::mpsc::Sender<Event>,
) {
    let mut draining = false;
    loop {
        let event = tokio::select! {
            why = conn.idle(limits.header_timeout, limits.idle_timeout, limits.write_timeout), if !draining => Event::End(why),
            _ = conn.evict.cancelled() => Event::End("evicted"),
            _ = shutdown.cancelled(), if !draining => {
                draining = true;
                Event::Drain
            }
        };
        if tell.send(event).await.is_err() || event != Event::Drain {
            return;
        }
    }
}
