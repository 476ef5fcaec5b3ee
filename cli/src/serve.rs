//! `flakeid serve`: the ID service (the `flakeid-serve` package) on a tokio runtime of one
//! worker per shard, logging through `tracing` (text or JSON, `FLAKEID_LOG`/`RUST_LOG`).
//! Listens at once and claims its node ids meanwhile; stops on SIGTERM or SIGINT
//! (drained, claims released, exit 0, also while still claiming); reloads the TLS pair and
//! the token file on SIGHUP; on a lost claim, claims again in process (or, with
//! `--on-claim-lost exit`, exits 3 for a supervisor to restart it).

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use flakeid_serve::{Config, Limits, NodeSource, Outcome, Service, Tokens};

use crate::args::serve::{LogFormat, OnClaimLost};
use crate::args::{LayoutArg, ServeArgs};
use crate::flags::parse_layout;
use crate::out::{CliError, CliResult, io_err};
use crate::stores::{claim_error, claims_of};

/// The target of the tool's own log events (`FLAKEID_LOG=flakeid::serve=info`), as it was
/// when the tool was a binary crate named `flakeid`.
const LOG: &str = "flakeid::serve";

/// The exit status of a server whose claim was lost (`--on-claim-lost exit`).
const CLAIM_LOST: u8 = 3;

/// The request latency buckets, in seconds: 10 us to 1 s.
const LATENCY_BUCKETS: [f64; 11] = [
    1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 1e-2, 1e-1, 1.0,
];

/// Logs to standard error: `info` and up by default, or as FLAKEID_LOG (else RUST_LOG)
/// says; RFC 3339 timestamps in UTC; colour only on a terminal.
fn logs(format: LogFormat) -> CliResult {
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("FLAKEID_LOG").or_else(|_| std::env::var("RUST_LOG")) {
        Ok(text) => EnvFilter::try_new(&text).map_err(|e| {
            CliError::new(
                None,
                format!("FLAKEID_LOG/RUST_LOG {text:?}: {e}; give levels such as info, or flakeid_serve=debug,info"),
            )
        })?,
        Err(_) => EnvFilter::new("info"),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_timer(tracing_subscriber::fmt::time::SystemTime);
    let installed = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
    installed.map_err(|e| CliError::new(None, format!("setting up the logs: {e}")))
}

/// The shard count and why: the flag, or the CPUs this process may use.
fn shards(a: &ServeArgs) -> (usize, &'static str) {
    match a.shards {
        Some(n) => (usize::from(n), "--shards"),
        None => (
            flakeid_serve::default_shards(),
            "the CPUs this process may use: its affinity mask and its cgroup CPU quota (set --shards to choose)",
        ),
    }
}

/// `flakeid serve`: the settings read, then the server run until a signal stops it or a
/// lost claim ends it.
pub(crate) fn run(a: ServeArgs) -> CliResult<ExitCode> {
    logs(a.log_format)?;
    let layout = parse_layout(&LayoutArg {
        layout: a.layout.clone(),
    })?;
    let (shards, why) = shards(&a);
    let nodes = node_source(&a, &layout)?;
    let tokens = tokens(&a)?;
    let tls = tls(&a)?;
    warn_exposed(&a, tls.is_some(), tokens.is_some());
    let descriptors = flakeid_serve::raise_descriptor_limit();
    give_memory_back();
    let mut config = Config::new(layout, nodes);
    config.shards = shards;
    config.listen = a.listen;
    config.grpc_listen = a.grpc_listen;
    config.max_wait = a.max_wait;
    config.end_warning = a.end_warning;
    config.drain = a.drain;
    config.window = a.claim.window.unwrap_or(flakeid::claim::DEFAULT_WINDOW);
    config.metrics = Some(metrics_recorder()?);
    config.tokens = tokens;
    config.tls = tls.clone();
    config.limits = limits(&a, shards);
    config.on_claim_lost = match a.on_claim_lost {
        OnClaimLost::Reclaim => flakeid_serve::OnClaimLost::Reclaim,
        OnClaimLost::Exit => flakeid_serve::OnClaimLost::Exit,
    };
    config.access_log = a.access_log;
    config.claim_remedy = crate::stores::remedy;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(shards)
        .enable_all()
        .build()
        .map_err(io_err)?;
    let https = tls.is_some();
    let service: Arc<OnceLock<Arc<Service>>> = Arc::default();
    let outcome = runtime.block_on(async move {
        let stop = stop_on_signals(Arc::clone(&service));
        flakeid_serve::run(config, stop, |s, http, grpc| {
            let _ = service.set(Arc::clone(s));
            let grpc = grpc.map(|g| format!(", gRPC on {g}")).unwrap_or_default();
            let scheme = if https { "https" } else { "http" };
            tracing::info!(
                target: LOG,
                shards,
                shards_from = %why,
                max_descriptors = descriptors,
                "flakeid serve: {shards} shard{} of {layout}, HTTP on {scheme}://{http}{grpc}{}",
                if shards == 1 { "" } else { "s" },
                if https { " (TLS)" } else { "" }
            );
        })
        .await
    });
    // The runtime's end waits for its blocking tasks (a claim called off): bounded.
    runtime.shutdown_timeout(Duration::from_secs(1));
    ended(outcome)
}

/// Where the shards' node ids come from: `--claim`, else `--node` (a layout without node
/// bits needs neither).
fn node_source(a: &ServeArgs, layout: &flakeid::Layout) -> CliResult<NodeSource> {
    Ok(match &a.claim.store.claim {
        Some(url) => NodeSource::Claims(claims_of(url, &a.claim)?),
        None => match a.node {
            Some(first) => NodeSource::Nodes { first },
            None if layout.node_bits() == 0 => NodeSource::Nodes { first: 0 },
            None => {
                return Err(CliError::new(
                    Some("--node"),
                    "give --node N (shard k mints on node N + k) or --claim URL (each shard claims its node id)",
                ));
            }
        },
    })
}

/// The process's Prometheus recorder, with the latency histograms' buckets.
fn metrics_recorder() -> CliResult<metrics_exporter_prometheus::PrometheusHandle> {
    metrics_exporter_prometheus::PrometheusBuilder::new()
        .set_buckets_for_metric(
            metrics_exporter_prometheus::Matcher::Suffix("duration_seconds".into()),
            &LATENCY_BUCKETS,
        )
        .and_then(|b| b.install_recorder())
        .map_err(|e| CliError::new(None, format!("installing the metrics recorder: {e}")))
}

/// The bearer tokens: `--token-file`, else `FLAKEID_TOKEN`, else none.
fn tokens(a: &ServeArgs) -> CliResult<Option<Arc<Tokens>>> {
    Ok(match (&a.token_file, std::env::var("FLAKEID_TOKEN")) {
        (Some(path), _) => {
            Some(Tokens::from_file(path).map_err(|e| CliError::new(Some("--token-file"), e))?)
        }
        (None, Ok(text)) => Some(Tokens::fixed(
            flakeid_serve::Token::new(&text)
                .map_err(|e| CliError::new(None, format!("FLAKEID_TOKEN: {e}")))?,
        )),
        (None, Err(_)) => None,
    })
}

/// The listeners' certificate and key, where both are given.
fn tls(a: &ServeArgs) -> CliResult<Option<Arc<flakeid_serve::TlsKeys>>> {
    match (&a.tls_cert, &a.tls_key) {
        (Some(cert), Some(key)) => flakeid_serve::TlsKeys::load(cert, key)
            .map(Some)
            .map_err(|e| CliError::new(Some("--tls-cert"), e)),
        _ => Ok(None),
    }
}

/// The bounds on connections and requests, from the flags.
fn limits(a: &ServeArgs, shards: usize) -> Limits {
    let mut limits = Limits::default();
    limits.header_timeout = a.header_timeout;
    limits.idle_timeout = a.idle_timeout;
    limits.request_timeout = a.request_timeout;
    limits.write_timeout = a.write_timeout;
    limits.keepalive_interval = (!a.keepalive.is_zero()).then_some(a.keepalive);
    limits.max_connections = a.max_connections as usize;
    limits.max_streams = a.max_streams;
    limits.streams_per_connection = a.streams_per_connection;
    limits.max_decode = a.max_decode as usize;
    limits.max_bulk = 2 * shards;
    limits
}

/// Ends at SIGTERM or SIGINT; at SIGHUP, reloads the token file and the TLS pair of the
/// service once it serves. The handlers go in when this is called, before the listeners
/// come up (not when it is first polled): a signal sent once the server is listening must
/// never meet the default action.
fn stop_on_signals(
    service: Arc<OnceLock<Arc<Service>>>,
) -> impl std::future::Future<Output = ()> + Send {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("a SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("a SIGINT handler");
    let mut hup = signal(SignalKind::hangup()).expect("a SIGHUP handler");
    async move {
        loop {
            tokio::select! {
                _ = term.recv() => {
                    tracing::info!(target: LOG, "SIGTERM: stopping");
                    return;
                }
                _ = int.recv() => {
                    tracing::info!(target: LOG, "SIGINT: stopping");
                    return;
                }
                _ = hup.recv() => match service.get() {
                    Some(s) => {
                        tracing::info!(target: LOG, "SIGHUP: reloading the token file and the TLS certificate");
                        s.reload();
                    }
                    None => tracing::info!(target: LOG, "SIGHUP: not serving yet, nothing to reload"),
                },
            }
        }
    }
}

/// The exit of a server that ran: 0 when stopped, `CLAIM_LOST` when a lost claim ended
/// it, the error when it could not start.
fn ended(outcome: Result<Outcome, flakeid_serve::StartError>) -> CliResult<ExitCode> {
    match outcome {
        Ok(Outcome::Stopped) => {
            tracing::info!(target: LOG, "flakeid serve: stopped; every claim released");
            Ok(ExitCode::SUCCESS)
        }
        Ok(Outcome::ClaimLost(why)) => {
            tracing::error!(
                target: LOG,
                "flakeid serve: {why}; stopped (exit {CLAIM_LOST}, --on-claim-lost exit) so that a new server claims anew"
            );
            Ok(ExitCode::from(CLAIM_LOST))
        }
        Err(flakeid_serve::StartError::Claim(e)) => Err(claim_error(e)),
        Err(e) => Err(CliError::new(None, e)),
    }
}

fn warn_exposed(a: &ServeArgs, tls: bool, token: bool) {
    for (name, addr) in [
        ("--listen", Some(a.listen)),
        ("--grpc-listen", a.grpc_listen),
    ] {
        let Some(addr) = addr.filter(|a| !a.ip().is_loopback()) else {
            continue;
        };
        let lacks = match (tls, token) {
            (true, true) => continue,
            (false, false) => {
                "without TLS and without a token: anyone who reaches it can mint and decode IDs, and sees them in plain text. Set FLAKEID_TOKEN_FILE (or FLAKEID_TOKEN) and --tls-cert/--tls-key"
            }
            (true, false) => {
                "without a token: anyone who reaches it can mint and decode IDs. Set FLAKEID_TOKEN_FILE (or FLAKEID_TOKEN)"
            }
            (false, true) => {
                "without TLS: the token and the IDs cross the network in plain text. Give --tls-cert and --tls-key"
            }
        };
        tracing::warn!(
            target: LOG,
            "flakeid serve: WARNING: {name} {addr} is reachable from other hosts, {lacks}"
        );
    }
}

/// Every 5 s, while the process's resident memory is above 64 MiB, hands the heap's free
/// pages back to the system (glibc keeps what a flood of connections used, 300 MiB after
/// 8,000 held connections went, until told). A no-op elsewhere.
#[allow(unsafe_code)]
fn give_memory_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    std::thread::Builder::new()
        .name("flakeid-trim".into())
        .spawn(|| {
            let page = 4096u64;
            loop {
                std::thread::sleep(std::time::Duration::from_secs(5));
                let resident = std::fs::read_to_string("/proc/self/statm")
                    .ok()
                    .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
                    .unwrap_or(0)
                    * page;
                if resident > 64 << 20 {
                    // SAFETY: malloc_trim only returns free memory of glibc's heap to the
                    // system; it takes no pointer and may run beside any allocation.
                    unsafe {
                        libc::malloc_trim(0);
                    }
                }
            }
        })
        .map(drop)
        .unwrap_or_default();
}
