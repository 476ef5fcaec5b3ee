//! What runs beside the listeners: the claim keeper (claims the node ids, with back-off,
//! and again in process after a lost claim), the readiness watch (one event per change,
//! the gRPC health statuses, the `flakeid_ready` gauge), and the reloads of the token file
//! and the TLS pair (on request and when the files change). Each task ends with the
//! server's shutdown token.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use flakeid::ShardedGenerator;
use flakeid::claim::{Cancel, ClaimError, ClaimErrorKind, Claims};
use tokio_util::sync::CancellationToken;

use crate::{Minter, OnClaimLost, Outcome, Readiness, Service, StartError, TlsKeys, Tokens};

/// How the claimed shards are built, again after a lost claim.
#[derive(Clone)]
pub(crate) struct ClaimPlan {
    pub(crate) claims: Claims,
    pub(crate) layout: flakeid::Layout,
    pub(crate) shards: usize,
    pub(crate) max_wait: Duration,
    pub(crate) end_warning: Duration,
    pub(crate) ready_margin: Duration,
    /// After a loss (`None` before the first): the node ids earlier claims held, with
    /// the reservation each found; the namespace must still be there.
    pub(crate) known: Option<Vec<(u64, u64)>>,
    /// The front end's words for an error's fix ([`Config::claim_remedy`](crate::Config::claim_remedy)).
    pub(crate) remedy: fn(&ClaimError) -> Option<String>,
}

impl ClaimPlan {
    /// Remembers what the claims of `old` found stored (each node id's reservation when
    /// it was claimed): a claim again after a loss then requires the store to still have
    /// the namespace and those reservations ([`Claims::again_after`]), and stays not
    /// ready, saying what is missing, instead of starting the namespace from nothing.
    fn remember(&mut self, old: &Minter) {
        let known = self.known.get_or_insert_with(Vec::new);
        for status in old.nodes() {
            let Some(claim) = status.claim.filter(|c| c.fenced) else {
                continue;
            };
            match known.iter_mut().find(|(n, _)| *n == status.node) {
                Some((_, floor)) => *floor = (*floor).max(claim.not_before_unix_ns),
                None => known.push((status.node, claim.not_before_unix_ns)),
            }
        }
    }

    /// Takes the claims (blocking: the store's calls, the wait for free ids), called off
    /// by `cancel`.
    fn take(&self, cancel: &Cancel) -> Result<Minter, ClaimError> {
        let mut claims = self.claims.clone().cancel_on(cancel.clone());
        if let Some(known) = &self.known {
            claims = claims.again_after(known.iter().copied());
        }
        ShardedGenerator::builder(self.layout)
            .shards(self.shards.max(1))
            .max_wait(self.max_wait)
            .end_warning(self.end_warning)
            .build_claimed(claims)
            .map(|g| Minter::claimed(g, self.ready_margin))
    }
}

/// How the server ends, once something decided it: a stop, a lost claim under
/// [`OnClaimLost::Exit`], or a claim that cannot succeed.
#[derive(Default)]
pub(crate) struct End {
    pub(crate) token: CancellationToken,
    outcome: Mutex<Option<Result<Outcome, StartError>>>,
}

impl End {
    /// Ends the server with `outcome`, unless it is already ending.
    pub(crate) fn with(&self, outcome: Result<Outcome, StartError>) {
        let mut o = self.outcome.lock().unwrap_or_else(|e| e.into_inner());
        if o.is_none() {
            *o = Some(outcome);
            self.token.cancel();
        }
    }

    pub(crate) fn take(&self) -> Result<Outcome, StartError> {
        self.outcome
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or(Ok(Outcome::Stopped))
    }
}

/// Claims the node ids until it works: each attempt waits for free ids as the claim's
/// pool wait allows; between attempts a back-off from half a second to 30 s. An error no
/// retry can mend ends the server on the first claim; after a lost claim it is retried
/// too (the store may be mended meanwhile). `None` when `shutdown` came first (the
/// attempt under way is called off and releases what it took).
async fn claim(
    plan: &ClaimPlan,
    service: &Service,
    first: bool,
    end: &End,
    shutdown: &CancellationToken,
) -> Option<Minter> {
    let mut pause = Duration::from_millis(500);
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let cancel = Cancel::new();
        let task = {
            let (plan, cancel) = (plan.clone(), cancel.clone());
            tokio::task::spawn_blocking(move || plan.take(&cancel))
        };
        tokio::pin!(task);
        let taken = tokio::select! {
            t = &mut task => t,
            _ = shutdown.cancelled() => {
                cancel.cancel();
                // What it took is released when it returns (or dropped here if it won).
                let _ = task.await;
                return None;
            }
        };
        let e = match taken {
            Ok(Ok(minter)) => return Some(minter),
            Ok(Err(e)) => e,
            Err(join) => ClaimError::Unreachable {
                store: plan.claims.store().url(),
                reason: flakeid::claim::Reason::from_error(join).context("the claim's task failed"),
            },
        };
        let fatal = matches!(
            e.kind(),
            ClaimErrorKind::Settings | ClaimErrorKind::Access | ClaimErrorKind::Corrupt
        );
        let said = match (plan.remedy)(&e) {
            Some(remedy) => format!("{e} ({remedy})"),
            None => e.to_string(),
        };
        if fatal && first {
            tracing::error!(target: "flakeid_serve", error = %said, "cannot claim node ids; stopping");
            end.with(Err(StartError::Claim(e)));
            return None;
        }
        tracing::warn!(
            target: "flakeid_serve",
            attempt,
            error = %said,
            retry_in_ms = pause.as_millis() as u64,
            "claiming node ids failed; trying again"
        );
        service.set_waiting(format!(
            "claiming node ids: attempt {attempt} failed ({said}); trying again in {} ms",
            pause.as_millis()
        ));
        tokio::select! {
            _ = tokio::time::sleep(jittered(pause)) => {}
            _ = shutdown.cancelled() => return None,
        }
        pause = (pause * 2).min(Duration::from_secs(30));
    }
}

/// `d` give or take a quarter, so that servers that lost their claims together do not
/// come back to the store together.
fn jittered(d: Duration) -> Duration {
    use std::hash::BuildHasher;
    let r = std::collections::hash_map::RandomState::new().hash_one(std::time::Instant::now());
    let quarter = d / 4;
    let ns = u64::try_from(quarter.as_nanos()).unwrap_or(u64::MAX).max(1);
    d - quarter + Duration::from_nanos(r % (2 * ns))
}

/// Logs the node ids a minter mints on.
fn serving(minter: &Minter, again: bool) {
    let nodes: Vec<u64> = minter.nodes().iter().map(|n| n.node).collect();
    if again {
        metrics::counter!("flakeid_reclaims_total").increment(1);
        tracing::info!(target: "flakeid_serve", ?nodes, "re-claimed node ids after a lost claim; serving again");
    } else {
        tracing::info!(target: "flakeid_serve", ?nodes, "node ids claimed; serving");
    }
    metrics::gauge!("flakeid_shards").set(minter.shards() as f64);
}

/// The readiness as last reported.
struct Reported {
    last: Option<Readiness>,
    health: Option<tonic_health::server::HealthReporter>,
}

impl Reported {
    /// Reports `now` if it differs from the last: an event, the gauge, both health names.
    async fn report(&mut self, now: &Readiness) {
        if self.last.as_ref() == Some(now) {
            return;
        }
        // Changes of reason only (a fence that moves) are not news: the state is.
        let state = |r: &Readiness| std::mem::discriminant(r);
        let news = self.last.as_ref().is_none_or(|l| state(l) != state(now));
        // Not ready at the start (claiming) is expected; a flip to it is worth a warning.
        let starting = self.last.is_none();
        self.last = Some(now.clone());
        let ready = *now == Readiness::Ready;
        metrics::gauge!("flakeid_ready").set(if ready { 1.0 } else { 0.0 });
        if let Some(health) = &self.health {
            let status = if ready {
                tonic_health::ServingStatus::Serving
            } else {
                tonic_health::ServingStatus::NotServing
            };
            // Kubernetes' grpc probe, grpc-health-probe and Envoy ask for "" by default.
            health.set_service_status("", status).await;
            health
                .set_service_status(crate::grpc_edges::service_name(), status)
                .await;
        }
        if !news {
            return;
        }
        match now {
            Readiness::Ready => tracing::info!(target: "flakeid_serve", ready = true, "ready"),
            Readiness::NotReady(why) if starting => {
                tracing::info!(target: "flakeid_serve", ready = false, reason = %why, "not ready")
            }
            Readiness::NotReady(why) => {
                tracing::warn!(target: "flakeid_serve", ready = false, reason = %why, "not ready")
            }
            Readiness::Lost(why) => {
                tracing::error!(target: "flakeid_serve", ready = false, reason = %why, "claim lost")
            }
        }
    }
}

/// The claim keeper and readiness watch: takes the claims (when the node ids are
/// claimed), then every 100 ms reports readiness; on a lost claim, ends the server or
/// claims again, as `on_lost` says.
pub(crate) async fn supervise(
    service: Arc<Service>,
    plan: Option<ClaimPlan>,
    on_lost: OnClaimLost,
    health: Option<tonic_health::server::HealthReporter>,
    end: Arc<End>,
    shutdown: CancellationToken,
) {
    let mut plan = plan;
    let mut reported = Reported { last: None, health };
    let mut again = false;
    // The store's warnings (an open ACL repaired, no user), each said once.
    let mut warned = 0;
    loop {
        if let Some(plan) = &plan
            && service.minter().is_err()
        {
            reported.report(&service.readiness()).await;
            let Some(minter) = claim(plan, &service, !again, &end, &shutdown).await else {
                return;
            };
            serving(&minter, again);
            let warnings = plan.claims.store().warnings();
            for w in warnings.iter().skip(warned) {
                tracing::warn!(target: "flakeid_serve", warning = %w, "the claim store's setup");
            }
            warned = warnings.len();
            service.install(minter);
        }
        let now = service.readiness();
        reported.report(&now).await;
        if let Readiness::Lost(why) = now {
            if on_lost == OnClaimLost::Exit || plan.is_none() {
                end.with(Ok(Outcome::ClaimLost(why)));
                return;
            }
            // The old shards go when the last request using them lets go: their claims
            // are released then (a lost one is the store's already).
            let old = service.uninstall(format!("re-claiming node ids: {why}"));
            if let (Some(plan), Some(old)) = (plan.as_mut(), old) {
                plan.remember(&old);
            }
            metrics::gauge!("flakeid_shards").set(0.0);
            again = true;
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            _ = shutdown.cancelled() => return,
        }
    }
}

/// Reloads the token file and the TLS pair when their files change (checked every
/// second), until `shutdown`.
pub(crate) async fn watch_files(
    tokens: Option<Arc<Tokens>>,
    tls: Option<Arc<TlsKeys>>,
    shutdown: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = shutdown.cancelled() => return,
        }
        if let Some(t) = tokens.as_deref().filter(|t| t.changed()) {
            let _ = crate::token::reload_tokens(t);
        }
        if let Some(t) = tls.as_deref().filter(|t| t.changed()) {
            let _ = crate::tls::reload_tls(t);
        }
    }
}
