//! [`Config`]: how [`run`](crate::run) serves: the layout and node ids, the listeners, TLS
//! and token, the [`Limits`] that bound connections and requests, what a lost claim does.
//! [`Config::new`] (or `Default`) fills in the defaults; set the fields you change.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use flakeid::Layout;
use flakeid::claim::{ClaimError, Claims};
use metrics_exporter_prometheus::PrometheusHandle;

use crate::tls::TlsKeys;

/// Where the shards' node ids come from.
#[derive(Debug, Clone)]
pub enum NodeSource {
    /// Given: shard k mints on node `first + k`.
    Nodes {
        /// The first shard's node id.
        first: u64,
    },
    /// Claimed from a store, one id per shard, each fenced by its own claim; claimed
    /// again when a claim is lost (see [`OnClaimLost`]).
    Claims(Claims),
}

/// What the server does when a claim is lost for good (its lease or session expired and
/// the store no longer names it the holder, or nothing renews it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnClaimLost {
    /// Not ready at once, then claims again in process (with back-off) and serves as soon
    /// as the store grants fresh fences: no restart, so no crash-loop back-off.
    #[default]
    Reclaim,
    /// Drains and ends with [`Outcome::ClaimLost`] (`flakeid serve` exits 3), for
    /// supervisors that restart the process themselves.
    Exit,
}

/// The bounds on connections and requests. The defaults suit a server facing clients it
/// does not control; every one is a flag of `flakeid serve`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// How long a new connection may take to send its first request's headers, and a
    /// kept-alive HTTP/1 connection its next request: slow or silent clients are closed
    /// after it.
    pub header_timeout: Duration,
    /// How long an HTTP/2 (gRPC) connection may sit with no request in flight before it
    /// is closed.
    pub idle_timeout: Duration,
    /// The deadline of a request (gRPC's `grpc-timeout` may shorten it); a long gRPC
    /// `Stream` is bounded by its `grpc-timeout` only.
    pub request_timeout: Duration,
    /// How long a response may make no progress on its way out (a client that reads
    /// nothing: an HTTP/2 flow-control window of zero, a full socket): after it the
    /// connection is closed, and until then, at the connection cap, it is among the first
    /// evicted.
    pub write_timeout: Duration,
    /// HTTP/2 keep-alive pings: how often an idle connection is pinged (`None`: never).
    pub keepalive_interval: Option<Duration>,
    /// HTTP/2 keep-alive pings: how long a ping may go unanswered before the connection
    /// is closed.
    pub keepalive_timeout: Duration,
    /// The most open connections per listener; past it a new connection closes the
    /// longest idle one, or waits for one to end. Capped below the descriptor limit.
    pub max_connections: usize,
    /// The most concurrent streams of one HTTP/2 connection (a gRPC call is a stream).
    pub max_streams: u32,
    /// The most gRPC `Stream` calls one connection may have open at once.
    pub streams_per_connection: u32,
    /// The most IDs one decode request may carry; its body may be `max_decode` times
    /// [`Limits::DECODE_BYTES_PER_ID`] bytes (plus 4 KiB).
    pub max_decode: usize,
    /// The most batch and decode requests the HTTP listener works on at once; more wait
    /// (within their deadline), so that single IDs never queue behind them.
    pub max_bulk: usize,
    /// The most bytes of path and query a request may have.
    pub max_uri: usize,
    /// The most bytes of header names and values a request may have.
    pub max_headers: usize,
}

impl Limits {
    /// The bytes a decode body may spend on each ID: the longest form, a JSON string of
    /// 20 digits, is 22 with its quotes, and pretty-printed JSON adds a comma, a newline
    /// and an indent.
    pub const DECODE_BYTES_PER_ID: usize = 32;

    /// The most bytes a decode request's body may have.
    pub fn decode_body_limit(&self) -> usize {
        self.max_decode
            .saturating_mul(Self::DECODE_BYTES_PER_ID)
            .saturating_add(4096)
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
            keepalive_interval: Some(Duration::from_secs(30)),
            keepalive_timeout: Duration::from_secs(10),
            max_connections: 10_000,
            max_streams: 128,
            streams_per_connection: 4,
            max_decode: crate::MAX_DECODE,
            max_bulk: 2 * default_shards(),
            max_uri: 8 << 10,
            max_headers: 16 << 10,
        }
    }
}

/// One shard per CPU this process may use: `std::thread::available_parallelism`, which
/// reads the affinity mask and the cgroup CPU quota (a container limited to 2 CPUs on a
/// 64-core node gets 2).
pub fn default_shards() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// How the server is run. [`Config::new`] has the defaults; set the fields to change.
#[derive(Debug)]
#[non_exhaustive]
pub struct Config {
    /// The layout IDs are minted in.
    pub layout: Layout,
    /// The shards' node ids.
    pub nodes: NodeSource,
    /// The number of shards (one node id each), at least 1. Default [`default_shards`].
    pub shards: usize,
    /// The HTTP listener (HTTP/1.1 and HTTP/2: h2c without TLS, ALPN with it).
    pub listen: SocketAddr,
    /// The gRPC listener, if any.
    pub grpc_listen: Option<SocketAddr>,
    /// The bound on one call's waits (next tick, a renewal at a fence).
    pub max_wait: Duration,
    /// How long before the layout runs out the server warns: a log line when the shards
    /// are built, a `warning` in `/readyz`; default [`END_WARNING`](flakeid::layout::END_WARNING)
    /// (a year), zero never. `flakeid_layout_seconds_left` is on `/metrics` always.
    pub end_warning: Duration,
    /// How long in-flight requests may take to finish after a stop was asked for.
    pub drain: Duration,
    /// The claims' window (for readiness: not ready below a third of it).
    pub window: Duration,
    /// The Prometheus recorder's handle, for `/metrics`.
    pub metrics: Option<PrometheusHandle>,
    /// The bearer tokens the mint and decode routes require, if any.
    pub tokens: Option<Arc<crate::Tokens>>,
    /// TLS on both listeners, if any: the certificate and key, reloaded when their files
    /// change (checked every second) or on [`Service::reload`](crate::Service::reload).
    pub tls: Option<Arc<TlsKeys>>,
    /// The bounds on connections and requests.
    pub limits: Limits,
    /// What a lost claim does.
    pub on_claim_lost: OnClaimLost,
    /// One `info` event per request (target `flakeid_serve::access`); off by default.
    pub access_log: bool,
    /// The front end's words for the fix of a claim error, added to the library's message
    /// where the server logs it and reports itself not ready (the `flakeid` tool names
    /// its repair command); none by default.
    pub claim_remedy: fn(&ClaimError) -> Option<String>,
}

impl Config {
    /// Serves `layout` on `nodes`, HTTP on 127.0.0.1:8080, no gRPC, a shard per CPU,
    /// waits bounded by 100 ms, a 10 s drain, the default claim window and [`Limits`].
    pub fn new(layout: Layout, nodes: NodeSource) -> Config {
        Config {
            layout,
            nodes,
            shards: default_shards(),
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            grpc_listen: None,
            max_wait: Duration::from_millis(100),
            end_warning: flakeid::layout::END_WARNING,
            drain: Duration::from_secs(10),
            window: flakeid::claim::DEFAULT_WINDOW,
            metrics: None,
            tokens: None,
            tls: None,
            limits: Limits::default(),
            on_claim_lost: OnClaimLost::default(),
            access_log: false,
            claim_remedy: |_| None,
        }
    }
}

impl Default for Config {
    /// Snowflake IDs on node ids from 0 (see [`Config::new`]).
    fn default() -> Config {
        Config::new(Layout::snowflake(), NodeSource::Nodes { first: 0 })
    }
}

/// How the server ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Asked to stop (a signal): drained, claims released.
    Stopped,
    /// A claim was lost for good and [`OnClaimLost::Exit`] was asked for: drained,
    /// stopped; the supervisor should start anew.
    ClaimLost(String),
}

/// Why the server could not start, or stopped before it could serve.
#[derive(Debug)]
#[non_exhaustive]
pub enum StartError {
    /// The claim cannot succeed as configured (its settings, the store's refusal of this
    /// client, a layout the namespace does not hold): retrying fails the same way.
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
