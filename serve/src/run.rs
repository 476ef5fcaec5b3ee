//! [`run`]: the whole server as `flakeid serve` runs it: the shards on given or claimed
//! node ids, the HTTP and gRPC listeners, the claim watch, and the orderly end (drain,
//! finish in-flight requests within a bound, release every claim).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use flakeid::claim::{ClaimError, Claims};
use flakeid::{Layout, ShardedGenerator};
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::net::TcpListener;

use crate::grpc::IdGrpc;
use crate::grpc::v1::id_service_server::IdServiceServer;
use crate::tls::{TlsKeys, TlsListener};
use crate::{Minter, Readiness, Service};

/// Where the shards' node ids come from.
#[derive(Debug)]
pub enum NodeSource {
    /// Given: shard k mints on node `first + k`.
    Nodes {
        /// The first shard's node id.
        first: u64,
    },
    /// Claimed from a store, one id per shard, each fenced by its own claim.
    Claims(Claims),
}

/// How the server is run.
#[derive(Debug)]
pub struct Config {
    /// The layout IDs are minted in.
    pub layout: Layout,
    /// The shards' node ids.
    pub nodes: NodeSource,
    /// The number of shards, and of worker threads (one shard per worker: each mints on
    /// its own). At least 1.
    pub shards: usize,
    /// The HTTP listener (HTTP/1.1 and HTTP/2: h2c without TLS, ALPN with it).
    pub listen: SocketAddr,
    /// The gRPC listener, if any.
    pub grpc_listen: Option<SocketAddr>,
    /// The bound on one call's waits (next tick, a renewal at a fence).
    pub max_wait: Duration,
    /// How long in-flight requests may take to finish after a stop was asked for.
    pub drain: Duration,
    /// The claims' window (for readiness: not ready below a third of it).
    pub window: Duration,
    /// The Prometheus recorder's handle, for `/metrics`.
    pub metrics: Option<PrometheusHandle>,
    /// The bearer token the mint and decode routes require, if any.
    pub token: Option<crate::Token>,
    /// TLS on both listeners, if any: the certificate and key, reloaded when their files
    /// change (checked every second) or when [`TlsKeys::reload`] is called (SIGHUP).
    pub tls: Option<Arc<TlsKeys>>,
}

/// A listener's server, plain or over TLS.
type Serving<E> = std::pin::Pin<Box<dyn Future<Output = Result<(), E>> + Send>>;

/// How long a client may take over its TLS handshake.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// How the server ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Asked to stop (a signal): drained, claims released.
    Stopped,
    /// A claim was lost for good: drained, stopped; the supervisor should start anew.
    ClaimLost(String),
}

/// Why the server could not start.
#[derive(Debug)]
pub enum StartError {
    /// No node id could be claimed, or the generator could not be built.
    Claim(ClaimError),
    /// The generator could not be built on the given node ids.
    Build(flakeid::Error),
    /// A listener could not be bound.
    Listen(SocketAddr, std::io::Error),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Claim(e) => write!(f, "claiming node ids: {e}"),
            StartError::Build(e) => write!(f, "building the generator: {e}"),
            StartError::Listen(addr, e) => write!(f, "listening on {addr}: {e}"),
        }
    }
}

impl std::error::Error for StartError {}

/// Builds the shards: one per worker thread.
pub fn minter(config: &mut Config) -> Result<Minter, StartError> {
    let builder = ShardedGenerator::builder(config.layout)
        .shards(config.shards.max(1))
        .max_wait(config.max_wait);
    match std::mem::replace(&mut config.nodes, NodeSource::Nodes { first: 0 }) {
        NodeSource::Nodes { first } => {
            let last = first.saturating_add(config.shards.max(1) as u64);
            builder
                .nodes(first..last)
                .build()
                .map(Minter::Plain)
                .map_err(StartError::Build)
        }
        NodeSource::Claims(claims) => builder
            .build_claimed(claims)
            .map(|shards| Minter::Claimed {
                shards,
                ready_margin: config.window / 3,
            })
            .map_err(StartError::Claim),
    }
}

/// Sets the claim gauges from the claims' state (called before each `/metrics` render).
pub(crate) fn claim_gauges(s: &Service) {
    for n in s.minter().nodes() {
        let Some(c) = n.claim else { continue };
        let node = n.node.to_string();
        if let Some(left) = c.fence_left {
            metrics::gauge!("flakeid_claim_fence_left_seconds", "node" => node.clone())
                .set(left.as_secs_f64());
        }
        metrics::gauge!("flakeid_claim_renewals", "node" => node.clone()).set(c.renewals as f64);
        metrics::gauge!("flakeid_claim_renewal_failures", "node" => node).set(c.failures as f64);
    }
}

/// Runs the server until `stop` completes (a signal) or a claim is lost: binds the
/// listeners (`on_listening` hears the service and their addresses), serves, then drains: not ready,
/// in-flight requests finish within [`Config::drain`], and every claim is released when
/// the shards are dropped. Call it on a multi-threaded tokio runtime of
/// [`Config::shards`] workers.
pub async fn run(
    mut config: Config,
    stop: impl Future<Output = ()> + Send + 'static,
    on_listening: impl FnOnce(&Service, SocketAddr, Option<SocketAddr>),
) -> Result<Outcome, StartError> {
    let minter = minter(&mut config)?;
    // The recorder keeps every histogram sample until its upkeep drains them into the
    // buckets: without it, memory grows by a sample per request between scrapes.
    if let Some(handle) = config.metrics.clone() {
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                handle.run_upkeep();
            }
        });
    }
    let service = Service::with_token(minter, config.metrics.take(), config.token.take());
    let http = TcpListener::bind(config.listen)
        .await
        .map_err(|e| StartError::Listen(config.listen, e))?;
    let http_addr = http
        .local_addr()
        .map_err(|e| StartError::Listen(config.listen, e))?;
    let grpc = match config.grpc_listen {
        Some(addr) => {
            let l = TcpListener::bind(addr)
                .await
                .map_err(|e| StartError::Listen(addr, e))?;
            Some(l)
        }
        None => None,
    };
    let grpc_addr = grpc.as_ref().and_then(|l| l.local_addr().ok());
    on_listening(&service, http_addr, grpc_addr);

    // One signal to end both listeners: a stop asked for, or a claim lost.
    let (end_tx, end_rx) = tokio::sync::watch::channel(None::<Outcome>);
    let ended = {
        let end_rx = end_rx.clone();
        move || {
            let mut rx = end_rx.clone();
            async move {
                let _ = rx.wait_for(Option::is_some).await;
            }
        }
    };
    {
        let end_tx = end_tx.clone();
        tokio::spawn(async move {
            stop.await;
            end_tx.send_if_modified(|o| o.get_or_insert(Outcome::Stopped) == &Outcome::Stopped);
        });
    }
    // The claim watch: a claim lost for good ends the server. It holds the service weakly,
    // so that the shards (and their claims) go when `run` lets go of them, not when the
    // runtime ends.
    {
        let service = Arc::downgrade(&service);
        let end_tx = end_tx.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let Some(service) = service.upgrade() else {
                    return;
                };
                if let Readiness::Lost(why) = service.minter().readiness() {
                    end_tx.send_if_modified(|o| {
                        o.is_none() && o.replace(Outcome::ClaimLost(why)).is_none()
                    });
                    return;
                }
            }
        });
    }

    if let Some(tls) = &config.tls {
        watch_files(Arc::clone(tls), end_rx.clone());
    }
    let app = crate::router(Arc::clone(&service));
    let http_server: Serving<std::io::Error> = match &config.tls {
        Some(tls) => {
            let listener =
                TlsListener::new(http, tls.server_config(&[b"h2", b"http/1.1"]), HANDSHAKE);
            Box::pin(
                axum::serve(listener, app)
                    .with_graceful_shutdown(ended())
                    .into_future(),
            )
        }
        None => Box::pin(
            axum::serve(http, app)
                .with_graceful_shutdown(ended())
                .into_future(),
        ),
    };
    let grpc_tls = config.tls.as_ref().map(|tls| tls.server_config(&[b"h2"]));
    let grpc_server = grpc.map(|listener| {
        let (health, health_service) = tonic_health::server::health_reporter();
        let reflection = tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(crate::grpc::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .build_v1()
            .expect("the descriptor sets are valid");
        let svc = IdServiceServer::with_interceptor(
            IdGrpc::new(Arc::clone(&service)),
            crate::grpc::require_token(Arc::clone(&service)),
        );
        let weak = Arc::downgrade(&service);
        // The health service follows readiness (holding the service weakly, as the claim
        // watch does).
        tokio::spawn(async move {
            loop {
                let Some(service) = weak.upgrade() else {
                    return;
                };
                let ready = service.readiness() == Readiness::Ready;
                drop(service);
                if ready {
                    health.set_serving::<IdServiceServer<IdGrpc>>().await;
                } else {
                    health.set_not_serving::<IdServiceServer<IdGrpc>>().await;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        });
        let router = tonic::transport::Server::builder()
            .add_service(health_service)
            .add_service(reflection)
            .add_service(svc);
        let serving: Serving<tonic::transport::Error> = match grpc_tls {
            Some(tls) => {
                let incoming = TlsListener::new(listener, tls, HANDSHAKE).into_stream();
                Box::pin(router.serve_with_incoming_shutdown(incoming, ended()))
            }
            None => {
                let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
                Box::pin(router.serve_with_incoming_shutdown(incoming, ended()))
            }
        };
        serving
    });

    let servers = async {
        match grpc_server {
            Some(grpc) => {
                let (h, g) = tokio::join!(http_server, grpc);
                let _ = (h, g);
            }
            None => {
                let _ = http_server.await;
            }
        }
    };
    tokio::pin!(servers);
    // Serve until the end is signalled; then mark not ready and give in-flight requests
    // the drain bound to finish.
    let mut end = end_rx.clone();
    tokio::select! {
        _ = &mut servers => {}
        _ = end.wait_for(Option::is_some) => {
            service.drain();
            let _ = tokio::time::timeout(config.drain, &mut servers).await;
        }
    }
    service.drain();
    let outcome = end_rx.borrow().clone().unwrap_or(Outcome::Stopped);
    // The last reference to the shards goes here (or with the last in-flight task):
    // dropping them releases every claim, cut to what was minted.
    drop(service);
    Ok(outcome)
}

/// Reloads the TLS certificate and key when their files change (checked every second),
/// until the server ends. A failed reload keeps the pair in use and is counted
/// (`flakeid_tls_reloads_total{result="failed"}`); it is tried again at the next change.
fn watch_files(tls: Arc<TlsKeys>, mut end: tokio::sync::watch::Receiver<Option<Outcome>>) {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = end.wait_for(Option::is_some) => return,
            }
            if tls.changed() {
                let result = if tls.reload().is_ok() { "ok" } else { "failed" };
                metrics::counter!("flakeid_tls_reloads_total", "result" => result).increment(1);
            }
        }
    });
}
