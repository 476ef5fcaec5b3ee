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
        .max_wait(config.max_wait);
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
    let Config {
        layout,
        nodes,
        shards,
        listen,
        grpc_listen,
        max_wait,
        drain,
        window,
        metrics: handle,
        tokens,
        tls,
        limits,
        on_claim_lost,
        access_log,
        claim_remedy,
    } = config;
    let shards = shards.max(1);
    let (http, http_addr) = bind(listen).await?;
    let grpc = match grpc_listen {
        Some(addr) => Some(bind(addr).await?),
        None => None,
    };
    let grpc_addr = grpc.as_ref().map(|(_, a)| *a);
    let names: &[&'static str] = if grpc.is_some() {
        &["http", "grpc"]
    } else {
        &["http"]
    };
    crate::metrics::register(&layout_label(&layout), names);

    let mut builder = Service::builder(layout)
        .limits(limits.clone())
        .access_log(access_log);
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
            (c.shards, c.max_wait) = (shards, max_wait);
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
    on_listening(&service, http_addr, grpc_addr);

    let shutdown = CancellationToken::new();
    let tasks = service.tasks.clone();
    // The recorder keeps every histogram sample until its upkeep drains them into the
    // buckets: without it, memory grows by a sample per request between scrapes.
    if let Some(handle) = handle {
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
    let cap = crate::descriptors::connection_cap(limits.max_connections, names.len());
    let acceptor = |alpn: &[&[u8]]| {
        tls.as_ref()
            .map(|t| TlsAcceptor::from(t.server_config(alpn)))
    };
    tasks.spawn(crate::listen::serve(
        Listener {
            name: "http",
            tcp: http,
            tls: acceptor(&[b"h2", b"http/1.1"]),
            http2_only: false,
            max_connections: cap,
            attach: access_log,
        },
        crate::app(Arc::clone(&service)),
        limits.clone(),
        shutdown.clone(),
        tasks.clone(),
    ));
    let health = grpc.map(|(tcp, _)| {
        let (routes, health) = crate::grpc_edges::routes(&service);
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
            limits.clone(),
            shutdown.clone(),
            tasks.clone(),
        ));
        health
    });
    let end = Arc::new(End::default());
    tasks.spawn(crate::lifecycle::supervise(
        Arc::clone(&service),
        plan,
        on_claim_lost,
        health.clone(),
        Arc::clone(&end),
        shutdown.clone(),
    ));
    if tokens.as_ref().is_some_and(|t| t.file().is_some()) || tls.is_some() {
        tasks.spawn(crate::lifecycle::watch_files(
            tokens.clone(),
            tls.clone(),
            shutdown.clone(),
        ));
    }
    {
        let end = Arc::clone(&end);
        tokio::spawn(async move {
            stop.await;
            end.with(Ok(Outcome::Stopped));
        });
    }

    end.token.cancelled().await;
    let outcome = end.take();
    // The drain: not ready at once (gRPC health too), no new connections, open ones
    // closed gracefully, in-flight requests given the drain bound.
    tracing::info!(target: "flakeid_serve", drain_ms = drain.as_millis() as u64, "draining");
    service.drain();
    metrics::gauge!("flakeid_ready").set(0.0);
    if let Some(health) = &health {
        for name in ["", crate::grpc_edges::service_name()] {
            health
                .set_service_status(name, tonic_health::ServingStatus::NotServing)
                .await;
        }
    }
    shutdown.cancel();
    tasks.close();
    let finished = tokio::time::timeout(drain, tasks.wait()).await.is_ok();
    // Streams still open past the bound end with UNAVAILABLE.
    service.ended.cancel();
    if !finished {
        let _ = tokio::time::timeout(Duration::from_secs(1), tasks.wait()).await;
    }
    // The last reference to the shards goes here (or with a request still in flight):
    // dropping them releases every claim, cut to what was minted.
    let held = service.uninstall("stopped");
    let shards_released = held.is_none_or(|m| Arc::strong_count(&m) == 1);
    tracing::info!(
        target: "flakeid_serve",
        in_flight_finished = finished,
        shards_released,
        "drained; stopped"
    );
    outcome
}

/// The layout as `flakeid_build_info` labels it: the preset's name, or the layout string.
fn layout_label(l: &flakeid::Layout) -> String {
    flakeid_text::layout::preset_of(l).map_or_else(|| l.to_string(), |p| p.name.to_string())
}
