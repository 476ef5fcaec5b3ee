//! Taking a claim: its settings checked against the layout and the store, then as many
//! usable node ids as the generator has shards taken together, or none (waiting, bounded,
//! for them).

use core::time::Duration;
use std::vec::Vec;

use super::store::{ClaimRequest, Claimed, Ticket};
use super::{Cancel, ClaimError, ClaimStore, Claims, MAX_WINDOW, MIN_RENEW_EVERY, check_namespace};
use crate::clock::Clock;
use crate::layout::Layout;

/// The clock a holder renews by (the generator's, shared).
pub(crate) type RenewClock = std::sync::Arc<dyn Clock + Send + Sync>;

/// A claim's settings, checked against the layout and the store.
pub(super) struct Settings {
    pub(super) pool: core::ops::Range<u64>,
    pub(super) window_ns: u64,
    pub(super) every: Duration,
    pub(super) pool_wait: Duration,
}

/// What a claim is taken with, made once by `Holder::take_all` and read by each of its
/// steps (`claim_usable`, `Holder::start`): the claims asked for, the layout, the store,
/// this holder's name, the clock, the bound on waiting for a previous holder's
/// reservation, and the settings checked from the claims.
pub(super) struct Claiming<'a> {
    pub(super) claims: &'a Claims,
    pub(super) layout: &'a Layout,
    pub(super) store: std::sync::Arc<dyn ClaimStore>,
    pub(super) instance: std::string::String,
    pub(super) clock: RenewClock,
    pub(super) max_wait: Duration,
    pub(super) settings: Settings,
}

impl Claiming<'_> {
    /// What the store is asked for: this namespace, this pool, this holder.
    pub(super) fn request(&self) -> ClaimRequest<'_> {
        ClaimRequest {
            namespace: &self.claims.namespace,
            pool: self.settings.pool.clone(),
            instance: &self.instance,
        }
    }
}

/// The renewal period when none is given: a third of the shorter of the window and the
/// lease TTL.
fn default_every(window: Duration, ttl: Option<Duration>) -> Duration {
    (ttl.map_or(window, |t| t.min(window)) / 3).max(Duration::from_millis(1))
}

/// Whether renewals every `every` keep a lease of `ttl` alive when the member in use stops
/// answering: the renewal and the store's failover fit in nine tenths of the TTL.
fn fits(store: &dyn ClaimStore, ttl: Duration, every: Duration) -> Result<(), Duration> {
    match store.failover_bound(ttl) {
        Some(failover) if every.saturating_add(failover) > ttl / 10 * 9 => Err(failover),
        _ => Ok(()),
    }
}

/// Checks the claim's settings: the namespace, the pool against the layout, the window
/// against the layout's tick and [`MAX_WINDOW`], and the renewal period against the
/// window and the store's lease TTL (with the store's failover, see
/// [`ClaimStore::failover_bound`]).
pub(super) fn settings(claims: &Claims, layout: &Layout) -> Result<Settings, ClaimError> {
    check_namespace(&claims.namespace)?;
    let pool = claims.pool.clone().unwrap_or(0..layout.node_count());
    if pool.start >= pool.end || pool.end - 1 > layout.max_node() {
        return Err(ClaimError::BadPool {
            pool,
            max_node: layout.max_node(),
        });
    }
    let window = claims.window;
    if window < layout.unit() {
        return Err(ClaimError::WindowTooShort {
            window,
            unit: layout.unit(),
        });
    }
    if window > MAX_WINDOW {
        return Err(ClaimError::WindowTooLong {
            window,
            max: MAX_WINDOW,
        });
    }
    let ttl = claims.store.lease_ttl();
    let every = claims
        .renew_every
        .unwrap_or_else(|| default_every(window, ttl));
    if claims.background {
        if claims.renew_every.is_some() && every < MIN_RENEW_EVERY {
            return Err(ClaimError::RenewalTooOften { every });
        }
        if every >= window {
            return Err(ClaimError::RenewalSlowerThanWindow { every, window });
        }
        if let Some(ttl) = ttl {
            if every >= ttl {
                return Err(ClaimError::RenewalTooRare { every, ttl });
            }
            if let Err(failover) = fits(&*claims.store, ttl, every) {
                let min_ttl = (1..=24 * 3600)
                    .map(Duration::from_secs)
                    .find(|&t| {
                        let every = claims
                            .renew_every
                            .unwrap_or_else(|| default_every(window, Some(t)));
                        fits(&*claims.store, t, every).is_ok()
                    })
                    .unwrap_or(MAX_WINDOW);
                return Err(ClaimError::TtlTooShort {
                    ttl,
                    every,
                    failover,
                    min_ttl,
                });
            }
        }
    }
    let pool_wait = claims.pool_wait.unwrap_or_else(|| {
        ttl.unwrap_or(Duration::ZERO)
            .saturating_add(window)
            .saturating_add(super::DEFAULT_POOL_WAIT)
    });
    Ok(Settings {
        pool,
        window_ns: u64::try_from(window.as_nanos()).unwrap_or(u64::MAX),
        every,
        pool_wait,
    })
}

/// Whether an error of the store may pass by itself (a leader change, a timeout, a full
/// pool), so that waiting for usable ids goes on.
fn passing(e: &ClaimError) -> bool {
    matches!(
        e,
        ClaimError::PoolFull { .. } | ClaimError::Unreachable { .. }
    )
}

/// Before a claim that follows earlier ones of this holder: the namespace is still in the
/// store and each reservation they found (`known`: node id, Unix ns) is still there, at
/// least as far. A store that cannot be listed is [`ClaimError::Unreachable`] as usual.
pub(super) fn check_known(
    store: &dyn ClaimStore,
    namespace: &str,
    known: &[(u64, u64)],
) -> Result<(), ClaimError> {
    let forgot = |found: String| ClaimError::StoreForgot {
        store: store.url(),
        namespace: namespace.into(),
        found,
    };
    if !store.namespaces()?.iter().any(|n| n.namespace == namespace) {
        return Err(forgot(std::format!(
            "namespace {namespace:?} is gone (not in the store's namespaces)"
        )));
    }
    let listed = store.list(namespace)?;
    let missing: Vec<std::string::String> = known
        .iter()
        .filter_map(|&(node, stored)| {
            let found = listed
                .iter()
                .find(|i| i.node == node)
                .map_or(0, |i| i.reserved_until_unix_ns);
            (found < stored).then(|| match found {
                0 => std::format!("node {node} has no reservation (this holder's earlier claim found {stored})"),
                f => std::format!(
                    "node {node}'s reservation is {f}, below the {stored} this holder's earlier claim found"
                ),
            })
        })
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(forgot(std::format!(
            "reservations are missing in namespace {namespace:?}: {}",
            missing.join("; ")
        )))
    }
}

/// A random duration below `bound` (from std's randomly keyed hasher: no generator needed
/// for a back-off).
fn jitter(bound: Duration) -> Duration {
    use core::hash::BuildHasher;
    let random =
        std::collections::hash_map::RandomState::new().hash_one(std::thread::current().id());
    let bound_ns = u64::try_from(bound.as_nanos()).unwrap_or(u64::MAX).max(1);
    Duration::from_nanos(random % bound_ns)
}

/// A claimant's place in the namespace's line ([`ClaimStore::join_line`]), taken once
/// the pool was full or others were waiting, and left when the claim ends, whichever way.
struct InLine<'a> {
    store: &'a dyn ClaimStore,
    namespace: &'a str,
    instance: &'a str,
    ticket: Option<Ticket>,
    /// Whether the store keeps a line at all (it gave a ticket, or none was asked yet).
    lines: bool,
}

impl InLine<'_> {
    /// Joins the line, unless in it already or the store keeps none.
    fn join(&mut self) -> Result<(), ClaimError> {
        if self.ticket.is_none() && self.lines {
            self.ticket = self.store.join_line(self.namespace, self.instance)?;
            self.lines = self.ticket.is_some();
        }
        Ok(())
    }

    /// Whether this claimant may try to take ids now: first in the line, or in none and
    /// nobody waits (`first_look`: before its first attempt a claimant joins the line if
    /// anyone waits in it, so that it never takes an id ahead of them).
    fn turn(&mut self, first_look: bool) -> Result<bool, ClaimError> {
        if !self.lines {
            return Ok(true);
        }
        if self.ticket.is_none() {
            if !first_look {
                return Ok(true);
            }
            if self.store.line(self.namespace)?.is_empty() {
                return Ok(true);
            }
            self.join()?;
        }
        let Some(ticket) = self.ticket.clone() else {
            return Ok(true);
        };
        let ticket = match self.store.stay_in_line(&ticket) {
            Err(ClaimError::NotOwner { .. }) => {
                // The place lapsed: to the back of the line.
                self.ticket = None;
                self.join()?;
                match self.ticket.clone() {
                    Some(ticket) => ticket,
                    None => return Ok(true),
                }
            }
            r => r.map(|()| ticket)?,
        };
        let line = self.store.line(self.namespace)?;
        match line.iter().position(|w| w.key == ticket.key) {
            Some(0) => Ok(true),
            Some(_) => Ok(false),
            None => {
                self.store.leave_line(&ticket);
                self.ticket = None;
                self.join()?;
                Ok(false)
            }
        }
    }

    /// The longest a claimant in the line may nap between looks: its place is kept alive
    /// by the looks (a lease of the store's TTL, 1 s at least).
    fn nap_bound(&self) -> Duration {
        match self.ticket {
            Some(_) => Duration::from_millis(250),
            None => Duration::MAX,
        }
    }
}

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            self.store.leave_line(&ticket);
        }
    }
}

/// Takes `count` usable node ids together, or none: the lowest free ones whose previous
/// holder's reservation the clock has passed or is within `max_wait` of. A free id further
/// ahead is held while the next is asked for, then let go with its reservation unchanged.
/// With fewer than `count` usable, every id taken is let go at once (its reservation
/// unchanged) and the claim waits, a randomised back-off for sets, so that claimants
/// waiting for the same ids never split them and hold each other's share. The layout is
/// bound to the namespace first ([`ClaimStore::bind_layout`]). Waits (bounded by
/// `pool_wait`) while the pool is full, the store cannot be reached or too few free ids
/// are usable yet; `cancel` ends the wait, with nothing held. Where the store keeps a
/// line of waiters ([`ClaimStore::join_line`]), a claimant that found the pool full, or
/// others waiting, takes ids only when first in it, so freed ids go to claimants in the
/// order they began waiting.
pub(super) fn claim_usable(c: &Claiming<'_>, count: usize) -> Result<Vec<Claimed>, ClaimError> {
    let (store, request, clock, max_wait) = (&*c.store, &c.request(), &c.clock, c.max_wait);
    let layout = &super::store::layout_record(c.layout);
    let (pool_wait, cancel) = (c.settings.pool_wait, c.claims.cancel.as_ref());
    let started = std::time::Instant::now();
    let max_wait_ns = u64::try_from(max_wait.as_nanos()).unwrap_or(u64::MAX);
    let mut bound = false;
    let mut round: u32 = 0;
    let cancelled = || ClaimError::Cancelled {
        namespace: request.namespace.into(),
    };
    let mut line = InLine {
        store,
        namespace: request.namespace,
        instance: request.instance,
        ticket: None,
        lines: true,
    };
    let mut first_look = true;
    let mut last_full: Option<ClaimError> = None;
    let nap = |d: Duration| match cancel {
        Some(c) if c.sleep(d) => Err(cancelled()),
        Some(_) => Ok(()),
        None => {
            std::thread::sleep(d);
            Ok(())
        }
    };
    loop {
        if cancel.is_some_and(Cancel::is_cancelled) {
            return Err(cancelled());
        }
        // Not this claimant's turn (others began waiting first), or the line could not be
        // read for now: wait. Past the wait bound, the pool's state as last seen, or one
        // last look at it.
        let turn = line.turn(core::mem::take(&mut first_look));
        let waited = started.elapsed();
        match turn {
            Ok(true) => {}
            Err(e) if !passing(&e) => return Err(e),
            _ if waited < pool_wait => {
                nap(Duration::from_millis(50).min(pool_wait - waited))?;
                continue;
            }
            Ok(false) => {
                if let Some(full) = last_full {
                    return Err(waited_for(full, waited, count));
                }
            }
            Err(e) => return Err(e),
        }
        let mut usable: Vec<Claimed> = Vec::with_capacity(count);
        let mut ahead: Vec<Claimed> = Vec::new();
        let binding = match bound {
            true => Ok(()),
            false => store.bind_layout(request.namespace, layout),
        };
        bound |= binding.is_ok();
        let outcome = binding.and_then(|()| {
            loop {
                if usable.len() == count {
                    break Ok(());
                }
                match store.claim(request) {
                    Ok(c)
                        if c.fenced
                            && c.not_before_unix_ns.saturating_sub(clock.unix_ns())
                                > max_wait_ns =>
                    {
                        ahead.push(c);
                    }
                    Ok(c) => usable.push(c),
                    Err(e) => break Err(e),
                }
            }
        });
        let nearest = ahead
            .iter()
            .min_by_key(|c| c.not_before_unix_ns)
            .map(|c| (c.node, c.not_before_unix_ns));
        let e = match outcome {
            Ok(()) => {
                for c in &ahead {
                    let _ = store.release(c, c.not_before_unix_ns);
                }
                return Ok(usable);
            }
            Err(e) => e,
        };
        for c in ahead.iter().chain(&usable) {
            let _ = store.release(c, c.not_before_unix_ns);
        }
        if matches!(e, ClaimError::PoolFull { .. }) {
            // Full: wait in the line (where the store keeps one) for a freed id.
            match line.join() {
                Err(j) if !passing(&j) => return Err(j),
                _ => {}
            }
            last_full = Some(e.clone());
        }
        let waited = started.elapsed();
        if !passing(&e) || waited >= pool_wait {
            return Err(match (nearest, e) {
                (Some((node, not_before)), ClaimError::PoolFull { .. }) => {
                    ClaimError::ClockBehind {
                        node,
                        behind: Duration::from_nanos(not_before.saturating_sub(clock.unix_ns())),
                        bound: max_wait,
                    }
                }
                (_, e) => waited_for(e, waited, count),
            });
        }
        // Until the nearest reservation comes within reach, or 50 ms; a set waits a
        // random while more, longer each round, so that two claimants of the same ids
        // come back at different times.
        let mut nap_for = Duration::from_millis(50);
        if count > 1 {
            round = round.saturating_add(1);
            nap_for = Duration::from_millis(10)
                + jitter(Duration::from_millis(50 * u64::from(round.min(8))));
        }
        if let Some((_, not_before)) = nearest {
            let reach = not_before
                .saturating_sub(max_wait_ns)
                .saturating_sub(clock.unix_ns());
            nap_for = nap_for.max(Duration::from_nanos(reach));
        }
        nap(nap_for.min(pool_wait - waited).min(line.nap_bound()))?;
    }
}

/// A full pool as the claim that waited for it reports it: how long it waited and how
/// many ids it wanted. Any other error as it is.
fn waited_for(e: ClaimError, waited: Duration, count: usize) -> ClaimError {
    match e {
        ClaimError::PoolFull {
            namespace,
            pool,
            held,
            corrupt,
            ..
        } => ClaimError::PoolFull {
            namespace,
            pool,
            held,
            waited,
            corrupt,
            wanted: count as u64,
        },
        e => e,
    }
}
