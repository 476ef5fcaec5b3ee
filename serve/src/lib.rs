//! # flakeid-serve: the ID service
//!
//! Unique, time-ordered 64-bit IDs over the network, as Twitter's Snowflake served them:
//! HTTP/1.1 and HTTP/2 ([`router`], an axum `Router`) and gRPC ([`grpc`], tonic services
//! of `proto/flakeid/v1/flakeid.proto`), over a [`ShardedGenerator`](flakeid::ShardedGenerator)
//! whose shards' node ids are given or claimed from a store and fenced.
//!
//! `flakeid serve` runs it ([`run`]); embed it in your own server with [`Service`],
//! [`router`] and [`grpc::IdGrpc`].
//!
//! | route | what it answers |
//! |---|---|
//! | `GET /v1/id` | one ID: `{"id":"<decimal>"}` |
//! | `GET /v1/ids?count=N` | N IDs, strictly increasing: a JSON array of strings; one per line with `Accept: text/plain`; packed little-endian `u64` with `Accept: application/octet-stream` |
//! | `POST /v1/decode` | IDs in (a JSON array of strings or numbers, or one per line), a JSON array of objects out, the fields of `flakeid decode --json` (NDJSON with `Accept: application/x-ndjson`) |
//! | `GET /v1/layout` | the layout, as `flakeid layout --json` shows it, and the node ids with their claims |
//! | `GET /healthz` | 200 while the process runs |
//! | `GET /readyz` | 200 while every node id can mint (its claim held, its fence ahead of the clock); 503 otherwise |
//! | `GET /metrics` | Prometheus text |
//!
//! Errors are JSON, `{"error":"..."}`, saying what to send instead: 400 for a bad request,
//! 503 with `Retry-After` when no ID can be minted now (at a fence, a claim lost, a clock
//! behind). Never an ID outside a reservation the store accepted.

#![warn(missing_docs)]

pub mod grpc;
mod http;
mod mint;
mod run;
pub mod tls;
mod token;

pub use http::router;
pub use mint::{Minter, NodeStatus, Readiness};
pub use run::{Config, NodeSource, Outcome, StartError, minter, run};
pub use tls::{TlsError, TlsKeys};
pub use token::{Token, TokenError};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use flakeid::Layout;
use flakeid::decode::Decoder;
use metrics_exporter_prometheus::PrometheusHandle;

/// The most IDs one request may ask for (`/v1/ids`, gRPC `Next`); a stream may ask for
/// more in all, sent in messages of at most this many.
pub const MAX_BATCH: usize = 100_000;

/// The most IDs one decode request may carry.
pub const MAX_DECODE: usize = 100_000;

/// What the routes share: the minter, the layout and its batch decoder, the metrics
/// handle, and whether the server is draining.
pub struct Service {
    minter: Minter,
    layout: Layout,
    decoder: Decoder,
    metrics: Option<PrometheusHandle>,
    token: Option<Token>,
    draining: AtomicBool,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("layout", &self.layout)
            .field("nodes", &self.minter.nodes().len())
            .field("token", &self.token)
            .field("draining", &self.draining.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Service {
    /// A service minting with `minter`; `/metrics` renders `metrics` if given (the
    /// handle of the Prometheus recorder the process installed), else answers 404.
    pub fn new(minter: Minter, metrics: Option<PrometheusHandle>) -> Arc<Service> {
        Service::with_token(minter, metrics, None)
    }

    /// [`Service::new`], with the mint and decode routes (HTTP and gRPC) requiring
    /// `Authorization: Bearer <token>` when `token` is given; the probes and `/metrics`
    /// stay open.
    pub fn with_token(
        minter: Minter,
        metrics: Option<PrometheusHandle>,
        token: Option<Token>,
    ) -> Arc<Service> {
        let layout = *minter.layout();
        Arc::new(Service {
            decoder: Decoder::new(&layout),
            layout,
            minter,
            metrics,
            token,
            draining: AtomicBool::new(false),
        })
    }

    /// Whether a request with this `Authorization` header value may mint and decode.
    pub fn admits(&self, authorization: Option<&[u8]>) -> bool {
        self.token.as_ref().is_none_or(|t| t.admits(authorization))
    }

    /// The minter.
    pub fn minter(&self) -> &Minter {
        &self.minter
    }

    /// The layout IDs are minted and decoded in.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Marks the service draining: `/readyz` answers 503 from now on, so load balancers
    /// stop sending to it while in-flight requests finish.
    pub fn drain(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Decodes `ids` with the batch decoder into rows, or says which ID does not fit the
    /// layout (the message the HTTP and gRPC routes answer with).
    pub fn decode(&self, ids: &[u64]) -> Result<Vec<flakeid_text::rows::Row>, String> {
        let n = ids.len();
        let (mut ticks, mut unix_ms, mut sequence, mut node) =
            (vec![0; n], vec![0; n], vec![0; n], vec![0; n]);
        self.decoder
            .decode(
                ids,
                flakeid::decode::Columns {
                    ticks: Some(&mut ticks),
                    unix_ms: Some(&mut unix_ms),
                    sequence: Some(&mut sequence),
                    node: Some(&mut node),
                },
            )
            .map_err(|e| {
                let layout = &self.layout;
                let bad = ids
                    .iter()
                    .position(|&id| layout.decompose(id).is_err())
                    .map(|i| format!("ID {} (element {i}): ", ids[i]))
                    .unwrap_or_default();
                format!("{bad}{e}; send IDs of the server's layout ({layout})")
            })?;
        Ok((0..n)
            .map(|i| flakeid_text::rows::Row {
                id: ids[i],
                ticks: ticks[i],
                unix_ms: unix_ms[i],
                sequence: sequence[i],
                node: node[i],
            })
            .collect())
    }

    /// Whether [`Service::drain`] was called.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Whether every node id can mint now, and if not why.
    pub fn readiness(&self) -> Readiness {
        if self.is_draining() {
            return Readiness::NotReady("draining: the server is shutting down".into());
        }
        self.minter.readiness()
    }
}
