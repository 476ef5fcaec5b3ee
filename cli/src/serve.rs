//! `flakeid serve`: the ID service (the `flakeid-serve` package) on a tokio runtime of one
//! worker per shard; stops on SIGTERM or SIGINT (drained, claims released, exit 0) and on
//! a lost claim (exit 3, so that a supervisor starts a new one).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use flakeid_serve::{Config, NodeSource, Outcome};

use crate::args::{LayoutArg, ServeArgs};
use crate::generate::{claim_error, claims_of, refuse_ttl_without_lease, report_claim, warn_since};
use crate::{CliError, CliResult, io_err, parse_layout, warn};

/// The exit status of a server whose claim was lost.
const CLAIM_LOST: u8 = 3;

/// The request latency buckets, in seconds: 10 us to 1 s.
const LATENCY_BUCKETS: [f64; 11] = [
    1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 1e-2, 1e-1, 1.0,
];

pub(crate) fn run(a: ServeArgs) -> CliResult<ExitCode> {
    let layout = parse_layout(&LayoutArg {
        layout: a.layout.clone(),
    })?;
    let shards = a
        .shards
        .map(usize::from)
        .unwrap_or_else(|| flakeid::affinity::cores().max(1));
    let mut claim_store = None;
    let nodes = match &a.claim.store.claim {
        Some(url) => {
            refuse_ttl_without_lease(url, &a.claim)?;
            crate::stores::built_in(url)?;
            let claims = claims_of(url, &a.claim)?;
            let store = Arc::clone(claims.store());
            claim_store = Some((store.warnings().len(), store));
            NodeSource::Claims(claims)
        }
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
    };
    let metrics = metrics_exporter_prometheus::PrometheusBuilder::new()
        .set_buckets_for_metric(
            metrics_exporter_prometheus::Matcher::Suffix("duration_seconds".into()),
            &LATENCY_BUCKETS,
        )
        .and_then(|b| b.install_recorder())
        .map_err(|e| CliError::new(None, format!("installing the metrics recorder: {e}")))?;
    let token = match (&a.token_file, std::env::var("FLAKEID_TOKEN")) {
        (Some(path), _) => Some(
            flakeid_serve::Token::from_file(path)
                .map_err(|e| CliError::new(Some("--token-file"), e))?,
        ),
        (None, Ok(text)) => Some(
            flakeid_serve::Token::new(&text)
                .map_err(|e| CliError::new(None, format!("FLAKEID_TOKEN: {e}")))?,
        ),
        (None, Err(_)) => None,
    };
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(cert), Some(key)) => Some(
            flakeid_serve::TlsKeys::load(cert, key)
                .map_err(|e| CliError::new(Some("--tls-cert"), e))?,
        ),
        _ => None,
    };
    for (name, addr) in [
        ("--listen", Some(a.listen)),
        ("--grpc-listen", a.grpc_listen),
    ] {
        let Some(addr) = addr.filter(|a| !a.ip().is_loopback()) else {
            continue;
        };
        let lacks = match (tls.is_some(), token.is_some()) {
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
        warn(format_args!(
            "flakeid serve: WARNING: {name} {addr} is reachable from other hosts, {lacks}"
        ));
    }
    let config = Config {
        layout,
        nodes,
        shards,
        listen: a.listen,
        grpc_listen: a.grpc_listen,
        max_wait: a.max_wait,
        drain: a.drain,
        window: a.claim.window.unwrap_or(flakeid::claim::DEFAULT_WINDOW),
        metrics: Some(metrics),
        token,
        tls: tls.clone(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(shards)
        .enable_all()
        .build()
        .map_err(io_err)?;
    let https = tls.is_some();
    let failed_store = claim_store.clone();
    let outcome = runtime.block_on(async move {
        let stop = async move {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("a SIGTERM handler");
            let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
                .expect("a SIGHUP handler");
            loop {
                tokio::select! {
                    _ = term.recv() => return,
                    _ = tokio::signal::ctrl_c() => return,
                    _ = hup.recv() => reload(tls.as_deref()),
                }
            }
        };
        flakeid_serve::run(config, stop, |service, http, grpc| {
            if let Some((shown, store)) = &claim_store {
                warn_since(&**store, *shown);
            }
            report(service);
            let grpc = grpc.map(|g| format!(", gRPC on {g}")).unwrap_or_default();
            let scheme = if https { "https" } else { "http" };
            warn(format_args!(
                "flakeid serve: {shards} shard{} of {layout}, HTTP on {scheme}://{http}{grpc}{}",
                if shards == 1 { "" } else { "s" },
                if https { " (TLS)" } else { "" }
            ));
        })
        .await
    });
    // The runtime's end waits for its blocking tasks: give them the drain bound too.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match outcome {
        Ok(Outcome::Stopped) => {
            warn(format_args!("flakeid serve: stopped; every claim released"));
            Ok(ExitCode::SUCCESS)
        }
        Ok(Outcome::ClaimLost(why)) => {
            warn(format_args!(
                "flakeid serve: {why}; stopped (exit {CLAIM_LOST}) so that a new server claims anew"
            ));
            Ok(ExitCode::from(CLAIM_LOST))
        }
        Err(flakeid_serve::StartError::Claim(e)) => {
            if let Some((shown, store)) = &failed_store {
                warn_since(&**store, *shown);
            }
            Err(claim_error(e))
        }
        Err(e) => Err(CliError::new(None, e)),
    }
}

/// SIGHUP: reads the TLS certificate and key again (new connections get them; open ones
/// keep theirs). A pair that fails to load leaves the one in use, and says why.
fn reload(tls: Option<&flakeid_serve::TlsKeys>) {
    let Some(tls) = tls else {
        warn(format_args!(
            "flakeid serve: SIGHUP: nothing to reload (no --tls-cert)"
        ));
        return;
    };
    let (cert, _) = tls.files();
    match tls.reload() {
        Ok(()) => warn(format_args!(
            "flakeid serve: SIGHUP: reloaded the TLS certificate {}",
            cert.display()
        )),
        Err(e) => warn(format_args!(
            "flakeid serve: SIGHUP: kept the TLS certificate in use: {e}"
        )),
    }
}

/// Reports each claimed node id as `gen` does (on standard error).
fn report(service: &flakeid_serve::Service) {
    for n in service.minter().nodes() {
        if let Some(s) = n.claim {
            report_claim(&s, service.layout());
        }
    }
}
