//! Taking a claim: its settings checked against the layout and the store, then a usable
//! node id taken (waiting, bounded, for one).

use core::time::Duration;
use std::vec::Vec;

use super::holder::RenewClock;
use super::{
    ClaimError, ClaimRequest, ClaimStore, Claimed, Claims, MAX_WINDOW, MIN_RENEW_EVERY,
    check_namespace,
};
use crate::layout::Layout;

/// A claim's settings, checked against the layout and the store.
pub(super) struct Settings {
    pub(super) pool: core::ops::Range<u64>,
    pub(super) window_ns: u64,
    pub(super) every: Duration,
    pub(super) pool_wait: Duration,
}

/// Checks the claim's settings: the namespace, the pool against the layout, the window
/// against the layout's tick and [`MAX_WINDOW`], and the renewal period against the
/// window and the store's lease TTL.
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
    let every = match claims.renew_every {
        Some(every) => every,
        None => (ttl.map_or(window, |t| t.min(window)) / 3).max(Duration::from_millis(1)),
    };
    if claims.background {
        if claims.renew_every.is_some() && every < MIN_RENEW_EVERY {
            return Err(ClaimError::RenewalTooOften { every });
        }
        if every >= window {
            return Err(ClaimError::RenewalSlowerThanWindow { every, window });
        }
        if let Some(ttl) = ttl
            && every >= ttl
        {
            return Err(ClaimError::RenewalTooRare { every, ttl });
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
/// pool), so that waiting for a usable id goes on.
fn passing(e: &ClaimError) -> bool {
    matches!(
        e,
        ClaimError::PoolFull { .. } | ClaimError::Unreachable { .. }
    )
}

/// Takes a usable node id: the lowest free one whose previous holder's reservation the
/// clock has passed or is within `max_wait` of. A free id further ahead is held while the
/// next is asked for, then let go with its reservation unchanged. Waits (bounded by
/// `pool_wait`) while the pool is full, the store cannot be reached or no free id is
/// usable yet.
pub(super) fn claim_usable(
    store: &dyn ClaimStore,
    request: &ClaimRequest<'_>,
    clock: &RenewClock,
    max_wait: Duration,
    pool_wait: Duration,
) -> Result<Claimed, ClaimError> {
    let started = std::time::Instant::now();
    let max_wait_ns = u64::try_from(max_wait.as_nanos()).unwrap_or(u64::MAX);
    loop {
        let mut ahead: Vec<Claimed> = Vec::new();
        let outcome = loop {
            match store.claim(request) {
                Ok(c)
                    if c.fenced
                        && c.not_before_unix_ns.saturating_sub(clock.unix_ns()) > max_wait_ns =>
                {
                    ahead.push(c);
                }
                other => break other,
            }
        };
        let nearest = ahead
            .iter()
            .min_by_key(|c| c.not_before_unix_ns)
            .map(|c| (c.node, c.not_before_unix_ns));
        for c in &ahead {
            let _ = store.release(c, c.not_before_unix_ns);
        }
        let e = match outcome {
            Ok(c) => return Ok(c),
            Err(e) => e,
        };
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
                (
                    _,
                    ClaimError::PoolFull {
                        namespace,
                        pool,
                        held,
                        corrupt,
                        ..
                    },
                ) => ClaimError::PoolFull {
                    namespace,
                    pool,
                    held,
                    waited,
                    corrupt,
                },
                (_, e) => e,
            });
        }
        // Until the nearest reservation comes within reach, or 50 ms.
        let mut nap = (pool_wait - waited).min(Duration::from_millis(50));
        if let Some((_, not_before)) = nearest {
            let reach = not_before
                .saturating_sub(max_wait_ns)
                .saturating_sub(clock.unix_ns());
            nap = nap.max(Duration::from_nanos(reach).min(pool_wait - waited));
        }
        std::thread::sleep(nap);
    }
}
