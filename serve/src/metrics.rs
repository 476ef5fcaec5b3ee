//! The service's metrics: every series it reports ([`SERIES`]), described and present
//! from the start (at 0, with the label values known then), the per-node claim series
//! set before each scrape, the build's info, the process's own series
//! (`metrics-process`), and the descriptor limit the connection cap stays under.

use std::sync::OnceLock;

use crate::Minter;

/// What kind of series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up.
    Counter,
    /// Goes up and down.
    Gauge,
    /// A distribution, in buckets.
    Histogram,
}

/// Every series `/metrics` reports (besides the process's `process_*` ones): name, kind,
/// labels, meaning. `serve/README.md` shows this table; a test checks both agree and
/// that each is present right after the start.
pub const SERIES: &[(&str, Kind, &str, &str)] = &[
    (
        "flakeid_build_info",
        Kind::Gauge,
        "version, layout",
        "1, labelled with the version and the layout",
    ),
    (
        "flakeid_ready",
        Kind::Gauge,
        "",
        "1 while /readyz answers 200, else 0",
    ),
    (
        "flakeid_shards",
        Kind::Gauge,
        "",
        "shards minting now (0 while claiming)",
    ),
    (
        "flakeid_layout_seconds_left",
        Kind::Gauge,
        "",
        "seconds until the layout runs out (no ID can be minted after): alert well before 0",
    ),
    (
        "flakeid_ids_minted_total",
        Kind::Counter,
        "",
        "IDs handed out",
    ),
    (
        "flakeid_http_requests_total",
        Kind::Counter,
        "route, status",
        "HTTP answers by matched route (`unmatched` for none) and status",
    ),
    (
        "flakeid_http_request_duration_seconds",
        Kind::Histogram,
        "route",
        "HTTP request latency",
    ),
    (
        "flakeid_grpc_requests_total",
        Kind::Counter,
        "method, code",
        "gRPC calls by method (`unknown` for none) and status code",
    ),
    (
        "flakeid_grpc_request_duration_seconds",
        Kind::Histogram,
        "method",
        "gRPC call latency (a stream: its whole life)",
    ),
    (
        "flakeid_connections_total",
        Kind::Counter,
        "listener",
        "connections accepted",
    ),
    (
        "flakeid_connections_open",
        Kind::Gauge,
        "listener",
        "connections open now",
    ),
    (
        "flakeid_connections_closed_total",
        Kind::Counter,
        "listener, reason",
        "connections closed: closed, error, header timeout, idle timeout, evicted, shutdown, tls handshake failed",
    ),
    (
        "flakeid_connections_evicted_total",
        Kind::Counter,
        "listener",
        "idle connections closed to make room at the connection cap",
    ),
    (
        "flakeid_accept_errors_total",
        Kind::Counter,
        "listener",
        "failed accepts (out of descriptors: the loop pauses)",
    ),
    (
        "flakeid_tls_handshake_failures_total",
        Kind::Counter,
        "",
        "TLS handshakes that failed or timed out",
    ),
    (
        "flakeid_tls_reloads_total",
        Kind::Counter,
        "result",
        "TLS certificate reloads, ok or failed",
    ),
    (
        "flakeid_token_reloads_total",
        Kind::Counter,
        "result",
        "token file reloads, ok or failed",
    ),
    (
        "flakeid_reclaims_total",
        Kind::Counter,
        "",
        "node ids claimed again in process after a lost claim",
    ),
    (
        "flakeid_sequence_exhausted_total",
        Kind::Counter,
        "",
        "waits for the next tick (a tick's sequence ran out)",
    ),
    (
        "flakeid_clock_behind_total",
        Kind::Counter,
        "",
        "clock reads behind the last tick used",
    ),
    (
        "flakeid_clock_behind_seconds",
        Kind::Histogram,
        "",
        "how far behind",
    ),
    (
        "flakeid_claims_taken_total",
        Kind::Counter,
        "",
        "claims taken",
    ),
    (
        "flakeid_claim_renewal_failures_total",
        Kind::Counter,
        "",
        "claim renewals that failed",
    ),
    (
        "flakeid_claim_renewals_recovered_total",
        Kind::Counter,
        "",
        "renewals that succeeded after failures",
    ),
    (
        "flakeid_claim_lost_total",
        Kind::Counter,
        "",
        "claims lost (the store no longer names this holder)",
    ),
    (
        "flakeid_claims_released_total",
        Kind::Counter,
        "",
        "claims released",
    ),
    (
        "flakeid_claim_fence_left_seconds",
        Kind::Gauge,
        "node",
        "time left before a node id's fence",
    ),
    (
        "flakeid_claim_node_renewals_total",
        Kind::Counter,
        "node",
        "a node id's renewals that succeeded",
    ),
    (
        "flakeid_claim_node_renewal_failures_total",
        Kind::Counter,
        "node",
        "a node id's renewals that failed",
    ),
];

/// The gRPC methods, as the metrics name them.
pub(crate) const GRPC_METHODS: [&str; 4] = [
    "flakeid.v1.IdService/Next",
    "flakeid.v1.IdService/Stream",
    "flakeid.v1.IdService/Decode",
    "flakeid.v1.IdService/Layout",
];

/// The process's series, collected before each scrape.
fn process() -> &'static metrics_process::Collector {
    static COLLECTOR: OnceLock<metrics_process::Collector> = OnceLock::new();
    COLLECTOR.get_or_init(metrics_process::Collector::default)
}

/// Describes every series and sets each to 0 with the label values known at the start
/// (the listeners, the routes with status 200, the gRPC methods with code OK), so that
/// dashboards and alerts see them before the first event.
pub(crate) fn register(layout: &str, listeners: &[&'static str]) {
    for &(name, kind, _, help) in SERIES {
        match kind {
            Kind::Counter => metrics::describe_counter!(name, help),
            Kind::Gauge => metrics::describe_gauge!(name, help),
            Kind::Histogram => metrics::describe_histogram!(name, help),
        }
        if kind == Kind::Counter && !SERIES_WITH_LABELS.contains(&name) {
            metrics::counter!(name).absolute(0);
        }
    }
    metrics::gauge!("flakeid_build_info", "version" => env!("CARGO_PKG_VERSION"), "layout" => layout.to_string())
        .set(1.0);
    metrics::gauge!("flakeid_ready").set(0.0);
    metrics::gauge!("flakeid_shards").set(0.0);
    for route in crate::routes::ROUTES {
        metrics::counter!("flakeid_http_requests_total", "route" => route, "status" => "200")
            .absolute(0);
    }
    for method in GRPC_METHODS {
        metrics::counter!("flakeid_grpc_requests_total", "method" => method, "code" => "OK")
            .absolute(0);
    }
    for &listener in listeners {
        for name in [
            "flakeid_connections_total",
            "flakeid_connections_evicted_total",
            "flakeid_accept_errors_total",
        ] {
            metrics::counter!(name, "listener" => listener).absolute(0);
        }
        metrics::counter!("flakeid_connections_closed_total", "listener" => listener, "reason" => "closed")
            .absolute(0);
        metrics::gauge!("flakeid_connections_open", "listener" => listener).set(0.0);
    }
    for name in ["flakeid_tls_reloads_total", "flakeid_token_reloads_total"] {
        metrics::counter!(name, "result" => "ok").absolute(0);
    }
    process().describe();
}

/// The counters whose every series has labels: set at the start with their known label
/// values only.
const SERIES_WITH_LABELS: [&str; 10] = [
    "flakeid_http_requests_total",
    "flakeid_grpc_requests_total",
    "flakeid_connections_total",
    "flakeid_connections_closed_total",
    "flakeid_connections_evicted_total",
    "flakeid_accept_errors_total",
    "flakeid_tls_reloads_total",
    "flakeid_token_reloads_total",
    "flakeid_claim_node_renewals_total",
    "flakeid_claim_node_renewal_failures_total",
];

/// Sets the seconds the layout has left, before a scrape.
pub(crate) fn layout_gauge(layout: &flakeid::Layout) {
    let now = i128::from(flakeid::Clock::unix_ns(&flakeid::clock::SystemClock));
    metrics::gauge!("flakeid_layout_seconds_left").set(layout.time_left(now).as_secs_f64());
}

/// Sets the per-node claim series and the process's, before a scrape.
pub(crate) fn claim_gauges(minter: Option<&Minter>) {
    process().collect();
    let Some(minter) = minter else { return };
    for n in minter.nodes() {
        let Some(c) = n.claim else { continue };
        let node = n.node.to_string();
        if let Some(left) = c.fence_left {
            metrics::gauge!("flakeid_claim_fence_left_seconds", "node" => node.clone())
                .set(left.as_secs_f64());
        }
        metrics::counter!("flakeid_claim_node_renewals_total", "node" => node.clone())
            .absolute(c.renewals);
        metrics::counter!("flakeid_claim_node_renewal_failures_total", "node" => node)
            .absolute(c.failures);
    }
}

/// The HTTP request series' handles, each made the first time it counts (so after the
/// process installed its recorder, and only for the statuses a route answered): per
/// route (and `unmatched`), a counter for each status the service answers, and a latency
/// histogram. Counting a request then takes no lookup in the recorder's registry.
pub(crate) struct HttpMetrics {
    requests: Vec<[OnceLock<metrics::Counter>; STATUSES.len()]>,
    latency: Vec<metrics::Histogram>,
}

/// The statuses the service answers.
const STATUSES: [(u16, &str); 14] = [
    (200, "200"),
    (400, "400"),
    (401, "401"),
    (404, "404"),
    (405, "405"),
    (408, "408"),
    (413, "413"),
    (414, "414"),
    (415, "415"),
    (429, "429"),
    (431, "431"),
    (500, "500"),
    (503, "503"),
    (504, "504"),
];

/// The route labels: the routes, then `unmatched`.
fn route_labels() -> impl Iterator<Item = &'static str> {
    crate::routes::ROUTES.into_iter().chain(["unmatched"])
}

impl HttpMetrics {
    pub(crate) fn new() -> HttpMetrics {
        HttpMetrics {
            requests: route_labels()
                .map(|_| std::array::from_fn(|_| OnceLock::new()))
                .collect(),
            latency: route_labels()
                .map(|route| {
                    metrics::histogram!("flakeid_http_request_duration_seconds", "route" => route)
                })
                .collect(),
        }
    }

    /// Counts and times one answer, of the route at `route` in [`ROUTES`](crate::routes::ROUTES) (`None`: no route matched).
    pub(crate) fn record(
        &self,
        route: Option<usize>,
        status: http::StatusCode,
        elapsed: std::time::Duration,
    ) {
        let r = route.unwrap_or(crate::routes::ROUTES.len());
        let label = route.map_or("unmatched", |i| crate::routes::ROUTES[i]);
        match STATUSES.iter().position(|(code, _)| *code == status.as_u16()) {
            Some(i) => self.requests[r][i]
                .get_or_init(|| {
                    metrics::counter!("flakeid_http_requests_total", "route" => label, "status" => STATUSES[i].1)
                })
                .increment(1),
            None => metrics::counter!(
                "flakeid_http_requests_total",
                "route" => label,
                "status" => status.as_str().to_string()
            )
            .increment(1),
        }
        self.latency[r].record(elapsed.as_secs_f64());
    }
}
