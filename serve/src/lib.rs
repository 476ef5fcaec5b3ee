//! # flakeid-serve: the ID service
//!
//! Unique, time-ordered 64-bit IDs over the network, as Twitter's Snowflake served them:
//! HTTP/1.1 and HTTP/2 ([`router`], an axum `Router`) and gRPC ([`grpc`], tonic services
//! of `proto/flakeid/v1/flakeid.proto`), over a [`ShardedGenerator`](flakeid::ShardedGenerator)
//! whose shards' node ids are given or claimed from a store and fenced.
//!
//! `flakeid serve` runs it ([`run`]); embed it in your own server with [`Service`],
//! [`router`] (or [`app`], the router inside the edge `flakeid serve` adds) and
//! [`grpc::IdGrpc`].
//!
//! | route | what it answers |
//! |---|---|
//! | `GET /v1/id` | one ID: `{"id":"<decimal>"}` |
//! | `GET /v1/ids?count=N` | N IDs, strictly increasing: a JSON array of strings; one per line with `Accept: text/plain`; packed little-endian `u64` with `Accept: application/octet-stream` |
//! | `POST /v1/decode` | IDs in (a JSON array of strings or numbers, or one per line), a JSON array of objects out, the fields of `flakeid decode --json` (NDJSON with `Accept: application/x-ndjson`) |
//! | `GET /v1/layout` | the layout, as `flakeid layout --json` shows it, and the node ids with their claims |
//! | `GET /v1/range?from=T&to=T` | the first and last ID of the layout for the instants from `from` (inclusive) to `to` (exclusive, the current time if not given), each RFC 3339 or Unix ms: the JSON of `flakeid range --json` |
//! | `GET /healthz` | 200 while the process runs |
//! | `GET /readyz` | 200 while every node id can mint (its claim held, its fence ahead of the clock), with a `warning` when the layout runs out within `Config::end_warning` (a year) or ran out; 503 otherwise, with the reason |
//! | `GET /metrics` | Prometheus text |
//!
//! Every error is JSON, `{"error":"..."}`, saying what to send instead ([`ServiceError`]):
//! 400 for a bad request, 401 without the token, 404, 405 (with `Allow`), 413, 414, 431,
//! 503 with `Retry-After` when no ID can be minted now (claiming, at a fence, a claim
//! lost, a clock behind). Never an ID outside a reservation the store accepted.
//!
//! The shape: state in one [`Service`]; routers built from it, the token an extractor;
//! cross-cutting behaviour in one edge around each listener's routes (metrics by route
//! and by gRPC method and code, request ids, size checks, the request deadline, panics
//! caught); connections served by hand so that each has its header and idle timeouts, a
//! place under the connection cap, HTTP/2 keep-alive pings and `TCP_NODELAY`; shutdown by
//! one cancellation token that every task watches.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod accept;
mod authorized;
mod config;
mod conn;
mod cuts;
mod decode;
mod descriptors;
pub mod edges;
mod error;
mod files;
pub mod grpc;
mod grpc_edges;
mod h1_errors;
mod http;
mod lifecycle;
mod listen;
mod media;
pub mod metrics;
mod mint;
mod routes;
mod run;
mod service;
mod stall;
pub mod tls;
mod token;

pub use config::{Config, Limits, NodeSource, OnClaimLost, Outcome, StartError, default_shards};
pub use descriptors::raise_descriptor_limit;
pub use edges::{Edges, app};
pub use error::ServiceError;
pub use http::router;
pub use metrics::SERIES;
pub use mint::{Minter, NodeStatus, Readiness};
pub use run::{minter, run};
pub use service::{Service, ServiceBuilder};
pub use tls::{TlsError, TlsKeys};
pub use token::{Token, TokenError, Tokens};

/// The most IDs one request may ask for (`/v1/ids`, gRPC `Next`); a stream may ask for
/// more in all, sent in messages of at most this many.
pub const MAX_BATCH: usize = 100_000;

/// The most IDs one decode request may carry, by default ([`Limits::max_decode`]).
pub const MAX_DECODE: usize = 100_000;
