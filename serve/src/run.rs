//! [`run`]: the whole server as `flakeid serve` runs it. The listeners come up first
//! (`/healthz` answers at once, `/readyz` says "claiming" while the node ids are taken);
//! then the shards, on given or claimed node ids, kept claimed by the claim keeper; and
//! at a stop the orderly end: not ready, no new connections, in-flight requests finish
//! within the drain bound, every claim released.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use flakeid::ShardedGenerator;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::lifecycle::{ClaimPlan, End};
use crate::listen::Listener;
use crate::{Config, Minter, NodeSource, Outcome, Service, StartError};

/// Builds the shards `config` describes: on its given node ids, or on node ids claimed
/// now (blocking: the store's calls and the wait for free ids).
pub fn minter(config: Config) -> Result<Minter, StartError> {
    let shards = config.shards.max(1);
    let builder = ShardedGenerator::builder(config.layout)
        .shards(shards)
        .max_wait(config.max_wait)
        .end_warning(config.end_warning);
    match config.nodes {
        NodeSource::Nodes { first } => builder
            .nodes(first..first.saturating_add(shards as u64))
            .build()
            .map(Minter::plain)
            .map_err(StartError::Build),
        NodeSource::Claims(claims) => builder
            .build_claimed(claims)
            .map(|g| Minter::claimed(g, config.window / 3))
            .map_err(StartError::Claim),
    }
}

async fn bind(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), StartError> {
    let l = TcpListener::bind(addr)
        .await
        .map_err(|e| StartError::Listen(addr, e))?;
    let local = l.local_addr().map_err(|e| StartError::Listen(addr, e))?;
    Ok((l, local))
}

/// Runs the server until `stop` completes (a signal), a claim cannot be taken as
/// configured, or (under [`OnClaimLost::Exit`](crate::OnClaimLost::Exit)) a claim is
/// lost. Binds the listeners first and serves at once (`on_listening` hears the service
/// and their addresses); takes the claims meanwhile. Then drains: not ready, no new
/// connections, in-flight requests finish within [`Config::drain`], and every claim is
/// released before it returns. Call it on a multi-threaded tokio runtime.
pub async fn run(
    config: Config,
    stop: impl Future<Output = ()> + Send + 'static,
    on_listening: impl FnOnce(&Arc<Service>, SocketAddr, Option<SocketAddr>),
) -> Result<Outcome, StartError> {
    let drain = config.drain;
    let bound = Bound::bind(config.listen, config.grpc_listen).await?;
    let (service, plan, rest) = build(config, bound.names())?;
    on_listening(&service, bound.http.1, bound.grpc.as_ref().map(|(_, a)| *a));
    let running = listen(&service, bound, &rest);
    let end = keep_claims(&service, plan, &rest, &running, stop);
    end.token.cancelled().await;
    let outcome = end.take();
    drain_and_release(&service, &running, drain).await;
    outcome
}

/// The phase `bind`: the listeners, bound before anything else so that `/healthz` answers
/// at once.
struct Bound {
    http: (TcpListener, SocketAddr),
    grpc: Option<(TcpListener, SocketAddr)>,
}

impl Bound {
    async fn bind(listen: SocketAddr, grpc: Option<SocketAddr>) -> Result<Bound, StartError> {
        let http = bind(listen).await?;
        let grpc = match grpc {
            Some(addr) => Some(bind(addr).await?),
            None => None,
        };
        Ok(Bound { http, grpc })
    }

    /// The listeners' names, as the metrics label them.
    fn names(&self) -> &'static [&'static str] {
        if self.grpc.is_some() {
            &["http", "grpc"]
        } else {
            &["http"]
        }
    }
}

/// What the later phases read of the configuration.
struct Rest {
    names: &'static [&'static str],
    metrics: Option<metrics_exporter_prometheus::PrometheusHandle>,
    tokens: Option<Arc<crate::Tokens>>,
    tls: Option<Arc<crate::TlsKeys>>,
    limits: crate::Limits,
    on_claim_lost: crate::OnClaimLost,
    access_log: bool,
}

/// The phase `build`: the service, on the node ids given (its shards built now) or
/// waiting for the claims of the returned plan.
fn build(
    config: Config,
    names: &'static [&'static str],
) -> Result<(Arc<Service>, Option<ClaimPlan>, Rest), StartError> {
    let Config {
        layout,
        nodes,
        shards,
        max_wait,
        end_warning,
        window,
        metrics: handle,
        tokens,
        tls,
        limits,
        on_claim_lost,
        access_log,
        claim_remedy,
        // The phases `bind` and `drain` read these.
        listen: _,
        grpc_listen: _,
        drain: _,
    } = config;
    let shards = shards.max(1);
    crate::metrics::register(&layout_label(&layout), names);
    let mut builder = Service::builder(layout)
        .limits(limits.clone())
        .access_log(access_log)
        .end_warning(end_warning);
    if let Some(h) = handle.clone() {
        builder = builder.metrics(h);
    }
    if let Some(t) = &tokens {
        builder = builder.tokens(Arc::clone(t));
    }
    if let Some(t) = &tls {
        builder = builder.tls(Arc::clone(t));
    }
    let plan = match nodes {
        NodeSource::Nodes { first } => {
            let mut c = Config::new(layout, NodeSource::Nodes { first });
            (c.shards, c.max_wait, c.end_warning) = (shards, max_wait, end_warning);
            let minter = minter(c)?;
            tracing::info!(
                target: "flakeid_serve",
                nodes = ?minter.nodes().iter().map(|n| n.node).collect::<Vec<_>>(),
                "serving on the node ids given"
            );
            metrics::gauge!("flakeid_shards").set(minter.shards() as f64);
            builder = builder.minter(minter);
            None
        }
        NodeSource::Claims(claims) => Some(ClaimPlan {
            claims,
            layout,
            shards,
            max_wait,
            end_warning,
            ready_margin: window / 3,
            known: None,
            remedy: claim_remedy,
        }),
    };
    let service = builder.build();
    if let Some(plan) = &plan {
        service.set_waiting(format!(
            "claiming node ids from {}",
            plan.claims.store().url()
        ));
    }
    let rest = Rest {
        names,
        metrics: handle,
        tokens,
        tls,
        limits,
        on_claim_lost,
        access_log,
    };
    Ok((service, plan, rest))
}

/// What the listening phase leaves running: its tasks, the token that stops them, and the
/// gRPC health service the drain turns to "not serving".
struct Running {
    tasks: tokio_util::task::TaskTracker,
    shutdown: CancellationToken,
    health: Option<tonic_health::server::HealthReporter>,
}

/// The phase `listen`: the metrics upkeep, the HTTP listener and the gRPC one, each on
/// the service's task tracker.
fn listen(service: &Arc<Service>, bound: Bound, rest: &Rest) -> Running {
    let shutdown = CancellationToken::new();
    let tasks = service.tasks.clone();
    // The recorder keeps every histogram sample until its upkeep drains them into the
    // buckets: without it, memory grows by a sample per request between scrapes.
    if let Some(handle) = rest.metrics.clone() {
        let shutdown = shutdown.clone();
        tasks.spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => handle.run_upkeep(),
                    _ = shutdown.cancelled() => return,
                }
            }
        });
    }
    let cap = crate::descriptors::connection_cap(rest.limits.max_connections, rest.names.len());
    let acceptor = |alpn: &[&[u8]]| {
        rest.tls
            .as_ref()
            .map(|t| TlsAcceptor::from(t.server_config(alpn)))
    };
    tasks.spawn(crate::listen::serve(
        Listener {
            name: "http",
            tcp: bound.http.0,
            tls: acceptor(&[b"h2", b"http/1.1"]),
            http2_only: false,
            max_connections: cap,
            attach: rest.access_log,
        },
        crate::app(Arc::clone(service)),
        rest.limits.clone(),
        shutdown.clone(),
        tasks.clone(),
    ));
    let health = bound.grpc.map(|(tcp, _)| {
        let (routes, health) = crate::grpc_edges::routes(service);
        tasks.spawn(crate::listen::serve(
            Listener {
                name: "grpc",
                tcp,
                tls: acceptor(&[b"h2"]),
                http2_only: true,
                max_connections: cap,
                attach: true,
            },
            routes,
            rest.limits.clone(),
            shutdown.clone(),
            tasks.clone(),
        ));
        health
    });
    Running {
        tasks,
        shutdown,
        health,
    }
}

/// The phase `keep claims`: the claim keeper (which takes the plan's claims and keeps
/// them), the watch of the token and certificate files, and the wait for `stop`. The
/// returned end is set by whichever ends the server.
fn keep_claims(
    service: &Arc<Service>,
    plan: Option<ClaimPlan>,
    rest: &Rest,
    running: &Running,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Arc<End> {
    let end = Arc::new(End::default());
    running.tasks.spawn(crate::lifecycle::supervise(
        Arc::clone(service),
        plan,
        rest.on_claim_lost,
        running.health.clone(),
        Arc::clone(&end),
        running.shutdown.clone(),
    ));
    if rest.tokens.as_ref().is_some_and(|t| t.file().is_some()) || rest.tls.is_some() {
        running.tasks.spawn(crate::lifecycle::watch_files(
            rest.tokens.clone(),
            rest.tls.clone(),
            running.shutdown.clone(),
        ));
    }
    {
        let end = Arc::clone(&end);
        tokio::spawn(async move {
            stop.await;
            end.with(Ok(Outcome::Stopped));
        });
    }
    end
}

/// The phase `drain`: not ready at once (gRPC health too), no new connections, open ones
/// closed gracefully, in-flight requests given the drain bound; then the shards dropped,
/// which releases every claim, cut to what was minted.
async fn drain_and_release(service: &Arc<Service>, running: &Running, drain: Duration) {
    tracing::info!(target: "flakeid_serve", drain_ms = drain.as_millis() as u64, "draining");
    service.drain();
    metrics::gauge!("flakeid_ready").set(0.0);
    if let Some(health) = &running.health {
        for name in ["", crate::grpc_edges::service_name()] {
            health
                .set_service_status(name, tonic_health::ServingStatus::NotServing)
                .await;
        }
    }
    running.shutdown.cancel();
    running.tasks.close();
    let finished = tokio::time::timeout(drain, running.tasks.wait())
        .await
        .is_ok();
    // Streams still open past the bound end with UNAVAILABLE.
    service.ended.cancel();
    if !finished {
        let _ = tokio::time::timeout(Duration::from_secs(1), running.tasks.wait()).await;
    }
    // The last reference to the shards goes here (or with a request still in flight).
    let held = service.uninstall("stopped");
    let shards_released = held.is_none_or(|m| Arc::strong_count(&m) == 1);
    tracing::info!(
        target: "flakeid_serve",
        in_flight_finished = finished,
        shards_released,
        "drained; stopped"
    );
}

/// The layout as `flakeid_build_info` labels it: the preset's name, or the layout string.
fn layout_label(l: &flakeid::Layout) -> String {
    flakeid_text::layout::preset_of(l).map_or_else(|| l.to_string(), |p| p.name.to_string())
}
