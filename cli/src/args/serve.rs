//! The flags of `flakeid serve`.

use clap::Args;

use super::claim::ClaimArgs;
use super::values::{duration, non_negative};

#[derive(Args)]
pub(crate) struct ServeArgs {
    /// The layout IDs are minted in (a preset or key=value pairs; see `flakeid layout`).
    #[arg(long, short = 'l', default_value = "snowflake", env = "FLAKEID_LAYOUT")]
    pub(crate) layout: String,
    /// The HTTP listener (HTTP/1.1 and HTTP/2; HTTPS with --tls-cert).
    #[arg(long, default_value = "127.0.0.1:8080", env = "FLAKEID_LISTEN")]
    pub(crate) listen: std::net::SocketAddr,
    /// The gRPC listener (flakeid.v1.IdService, health, reflection); off unless given.
    #[arg(long, env = "FLAKEID_GRPC_LISTEN")]
    pub(crate) grpc_listen: Option<std::net::SocketAddr>,
    /// The first shard's node id (shard k mints on node N + k); or give --claim.
    #[arg(long, value_parser = non_negative, conflicts_with = "claim", env = "FLAKEID_NODE")]
    pub(crate) node: Option<u64>,
    #[command(flatten)]
    pub(crate) claim: ClaimArgs,
    /// Shards, and worker threads: one shard (one node id) per worker. Default: the CPUs
    /// this process may use (its affinity mask and its cgroup CPU quota: a container
    /// limited to 2 CPUs gets 2 shards, whatever the node's size).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..), env = "FLAKEID_SHARDS")]
    pub(crate) shards: Option<u16>,
    /// The bound on one request's waits (the next tick; a renewal at a fence), after
    /// which it answers 503 with Retry-After.
    #[arg(long, value_parser = duration, default_value = "100ms", env = "FLAKEID_MAX_WAIT")]
    pub(crate) max_wait: std::time::Duration,
    /// Warn when the layout runs out within this long: a log line when the shards are
    /// built, and a `warning` in /readyz (the gauge flakeid_layout_seconds_left is on
    /// /metrics always); 0s never warns.
    #[arg(long, default_value = "365d", value_parser = super::values::duration)]
    pub(crate) end_warning: std::time::Duration,
    /// A file whose first line is the bearer token the mint and decode routes (HTTP and
    /// gRPC) require; the probes and /metrics stay open. Or set the token itself in
    /// FLAKEID_TOKEN (never on the command line, where other users see it).
    #[arg(long, value_name = "PATH", env = "FLAKEID_TOKEN_FILE")]
    pub(crate) token_file: Option<std::path::PathBuf>,
    /// TLS on both listeners: the server's certificate chain (PEM). Reloaded, with
    /// --tls-key, on SIGHUP and when the files change; open connections keep theirs.
    #[arg(
        long,
        value_name = "PEM",
        requires = "tls_key",
        env = "FLAKEID_TLS_CERT"
    )]
    pub(crate) tls_cert: Option<std::path::PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(
        long,
        value_name = "PEM",
        requires = "tls_cert",
        env = "FLAKEID_TLS_KEY"
    )]
    pub(crate) tls_key: Option<std::path::PathBuf>,
    /// How long in-flight requests may take to finish after SIGTERM or SIGINT.
    #[arg(long, value_parser = duration, default_value = "10s", env = "FLAKEID_DRAIN")]
    pub(crate) drain: std::time::Duration,
    /// What a lost claim does: `reclaim` (not ready, claim again in process with back-off,
    /// serve again; no restart) or `exit` (drain and exit 3, for a supervisor to restart;
    /// a claim that cannot be taken at the start then exits 2 too, as it always did).
    #[arg(
        long,
        value_enum,
        default_value = "reclaim",
        env = "FLAKEID_ON_CLAIM_LOST"
    )]
    pub(crate) on_claim_lost: OnClaimLost,
    /// How long a new connection may take to send its first request's headers, and a
    /// kept-alive HTTP/1 connection its next request; slower clients are closed.
    #[arg(long, value_parser = duration, default_value = "10s", env = "FLAKEID_HEADER_TIMEOUT")]
    pub(crate) header_timeout: std::time::Duration,
    /// How long an HTTP/2 (gRPC) connection may stay open with no request in flight.
    #[arg(long, value_parser = duration, default_value = "60s", env = "FLAKEID_IDLE_TIMEOUT")]
    pub(crate) idle_timeout: std::time::Duration,
    /// The deadline of one request, after which it answers 503 (gRPC: DEADLINE_EXCEEDED;
    /// a client's grpc-timeout may shorten it; a Stream has only the client's).
    #[arg(long, value_parser = duration, default_value = "10s", env = "FLAKEID_REQUEST_TIMEOUT")]
    pub(crate) request_timeout: std::time::Duration,
    /// How long a response may make no progress on its way out (the client reads
    /// nothing: a zero HTTP/2 window, a full socket) before its connection is closed; such
    /// a connection is evicted first at the connection cap.
    #[arg(long, value_parser = duration, default_value = "10s", env = "FLAKEID_WRITE_TIMEOUT")]
    pub(crate) write_timeout: std::time::Duration,
    /// HTTP/2 keep-alive pings to idle connections, this often (0s: none); a ping not
    /// answered within 10 s closes the connection.
    #[arg(long, value_parser = duration, default_value = "30s", env = "FLAKEID_KEEPALIVE")]
    pub(crate) keepalive: std::time::Duration,
    /// The most open connections per listener; past it a new one closes the longest idle
    /// connection, or waits. Kept under the descriptor limit (raised to its hard limit).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..), env = "FLAKEID_MAX_CONNECTIONS")]
    pub(crate) max_connections: u32,
    /// The most concurrent streams of one HTTP/2 connection (each gRPC call is one).
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..), env = "FLAKEID_MAX_STREAMS")]
    pub(crate) max_streams: u32,
    /// The most gRPC Stream calls one connection may have open at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..), env = "FLAKEID_STREAMS_PER_CONNECTION")]
    pub(crate) streams_per_connection: u32,
    /// The most IDs one decode request may carry (its body may be 32 bytes an ID).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u32).range(1..=10_000_000), env = "FLAKEID_MAX_DECODE")]
    pub(crate) max_decode: u32,
    /// Logs as `text` (one line an event) or `json` (one object a line); the filter is
    /// FLAKEID_LOG or RUST_LOG (e.g. `info`, `flakeid_serve=debug`), `info` by default.
    #[arg(long, value_enum, default_value = "text", env = "FLAKEID_LOG_FORMAT")]
    pub(crate) log_format: LogFormat,
    /// One log line per request (method, route, status, time, request id, peer).
    #[arg(long, env = "FLAKEID_ACCESS_LOG")]
    pub(crate) access_log: bool,
}

/// `--on-claim-lost`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OnClaimLost {
    Reclaim,
    Exit,
}

/// `--log-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    Text,
    Json,
}
