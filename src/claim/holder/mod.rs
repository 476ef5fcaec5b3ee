//! [`Holder`]: a claim taken for one generator, its renewal (a background thread, or
//! [`Generator::renew_claim`](crate::Generator::renew_claim)) and its release.

use core::time::Duration;
use std::string::String;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::store::Claimed;
use super::take::{Claiming, RenewClock, claim_usable, settings};
use super::{ClaimError, ClaimState, ClaimStore, Claims, Fence, Reason, default_instance};
use crate::clock::Clock;
use crate::layout::Layout;
mod renewal;
#[cfg(feature = "tokio")]
use renewal::StopGuard;

/// A claim's state, as [`Generator::claim_status`](crate::Generator::claim_status)
/// reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClaimStatus {
    /// The store's URL.
    pub store: String,
    /// The namespace.
    pub namespace: String,
    /// The node id claimed.
    pub node: u64,
    /// This holder's name in the store.
    pub instance: String,
    /// What the claim is doing.
    pub state: ClaimState,
    /// Whether the claim has a reserved window (not for [`StaticNode`](super::StaticNode)).
    pub fenced: bool,
    /// The reservation the previous holder left (Unix ns): nothing is minted before it.
    pub not_before_unix_ns: u64,
    /// The reservation the store accepted last (Unix ns): nothing is minted at or past it.
    pub reserved_until_unix_ns: Option<u64>,
    /// How long the generator's clock has left until the fence.
    pub fence_left: Option<Duration>,
    /// Renewals that succeeded.
    pub renewals: u64,
    /// Renewals that failed.
    pub failures: u64,
    /// The error of the last failed renewal, if the last renewal failed.
    pub last_error: Option<ClaimError>,
    /// Callers blocked at the fence now, waiting (at most `max_wait`) for a renewal to
    /// move it: more than 0 for long means renewals are late.
    pub waiting_at_fence: usize,
}

#[derive(Debug, Default)]
struct Stats {
    renewals: u64,
    failures: u64,
    /// Renewals failed in a row, up to the last.
    streak: u64,
    last_error: Option<ClaimError>,
}

/// What the generator, its renewal thread and the status share.
struct Shared {
    store: Arc<dyn ClaimStore>,
    claimed: Claimed,
    instance: String,
    fence: Fence,
    layout: Layout,
    window_ns: u64,
    /// The background renewal's period.
    every: Duration,
    clock: RenewClock,
    /// Held across a whole renewal (clock read, store write, fence raise) and the
    /// release: renewals of one claim run one at a time, so a renewal computed from an
    /// older clock reading never lands after a newer one.
    one_at_a_time: crate::sync::Mutex<()>,
    stop: Mutex<bool>,
    wake: Condvar,
    stats: Mutex<Stats>,
    /// Callers blocked at the fence now, waiting for a renewal.
    waiting: std::sync::atomic::AtomicUsize,
    /// Told each change of state ([`Claims::on_change`]), and the state it was told last.
    on_change: Option<super::claims::OnChange>,
    told: Mutex<ClaimState>,
}

/// Where the background renewal runs.
enum Renewer {
    None,
    Thread(JoinHandle<()>),
    #[cfg(feature = "tokio")]
    Task(tokio::task::JoinHandle<()>),
}

/// A claim held for one generator. Dropping it stops the renewal and releases the id.
pub(crate) struct Holder {
    shared: Arc<Shared>,
    renewer: Renewer,
    released: bool,
}

impl core::fmt::Debug for Holder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Holder")
            .field("store", &self.shared.store.url())
            .field("node", &self.shared.claimed.node)
            .field("state", &self.shared.fence.state())
            .finish_non_exhaustive()
    }
}

/// The tick an instant falls in (0 before the epoch, one past the last tick after the
/// lifetime): a fence at `tick_of(reserved)` lets through exactly the ticks that end by
/// `reserved`, and a holder starting at `tick_of(not_before)` mints none of them.
pub(crate) fn tick_of(layout: &Layout, unix_ns: u64) -> u64 {
    (unix_ns.saturating_sub(layout.tick0_ns()) / layout.unit_ns()).min(layout.max_ticks() + 1)
}

/// Where tick `tick` ends, in Unix ns (saturating at `u64::MAX`).
fn tick_end_ns(layout: &Layout, tick: u64) -> u64 {
    let end = (u128::from(tick) + 1) * u128::from(layout.unit_ns()) + u128::from(layout.tick0_ns());
    u64::try_from(end).unwrap_or(u64::MAX)
}

/// One renewal: reserve `now + window` (never less than the reservation held), write it
/// to the store, and only once the store accepted it raise the fence. Returns the new
/// reservation. The order is the guarantee: a fence raised before the write could let the
/// generator mint past a reservation the store then refuses (the id having moved on).
fn renew_step(
    store: &dyn ClaimStore,
    claimed: &Claimed,
    fence: &Fence,
    layout: &Layout,
    now_ns: u64,
    window_ns: u64,
) -> Result<u64, ClaimError> {
    let reserved = now_ns.saturating_add(window_ns).max(fence.reserved_ns());
    match store.renew(claimed, reserved) {
        Ok(()) => {
            fence.grant(tick_of(layout, reserved), reserved);
            Ok(reserved)
        }
        Err(e) => {
            fence.set_state(if matches!(e, ClaimError::NotOwner { .. }) {
                ClaimState::Lost
            } else {
                ClaimState::Renewing
            });
            Err(e)
        }
    }
}

impl Holder {
    /// Checks the claim's settings against the layout and the store, takes a usable node
    /// id (see [`claim_usable`]), writes the first reservation and starts the renewal.
    pub(crate) fn take(
        claims: &Claims,
        layout: &Layout,
        clock: RenewClock,
        max_wait: Duration,
    ) -> Result<Holder, ClaimError> {
        Holder::take_all(claims, layout, clock, max_wait, 1)?
            .pop()
            .ok_or_else(|| ClaimError::Unreachable {
                store: claims.store.url(),
                reason: "the store handed out no node id".into(),
            })
    }

    /// [`Holder::take`] for `count` node ids taken together (one per shard of a sharded
    /// generator), or none: while fewer than `count` are usable, the claim holds none of
    /// them and waits (see [`claim_usable`]).
    pub(crate) fn take_all(
        claims: &Claims,
        layout: &Layout,
        clock: RenewClock,
        max_wait: Duration,
        count: usize,
    ) -> Result<Vec<Holder>, ClaimError> {
        let settings = settings(claims, layout)?;
        if let Some(known) = &claims.known {
            super::take::check_known(&*claims.store, &claims.namespace, known)?;
        }
        let claiming = Claiming {
            claims,
            layout,
            store: Arc::clone(&claims.store),
            instance: claims.instance.clone().unwrap_or_else(default_instance),
            clock,
            max_wait,
            settings,
        };
        let store = &claiming.store;
        let claimed = claim_usable(&claiming, count)?;
        if claims
            .cancel
            .as_ref()
            .is_some_and(super::Cancel::is_cancelled)
        {
            for c in &claimed {
                let _ = store.release(c, c.not_before_unix_ns);
            }
            return Err(ClaimError::Cancelled {
                namespace: claims.namespace.clone(),
            });
        }
        let mut holders = Vec::with_capacity(count);
        let mut rest = claimed.into_iter();
        while let Some(claimed) = rest.next() {
            let started = Holder::start(&claiming, claimed);
            match started {
                Ok(holder) => holders.push(holder),
                Err(e) => {
                    for c in rest {
                        let _ = store.release(&c, c.not_before_unix_ns);
                    }
                    // Dropping the holders started releases their ids.
                    return Err(e);
                }
            }
        }
        Ok(holders)
    }

    /// Writes a claimed id's first reservation and starts its renewal; on failure the id
    /// is released, its reservation unchanged.
    fn start(c: &Claiming<'_>, claimed: Claimed) -> Result<Holder, ClaimError> {
        let (claims, layout, max_wait) = (c.claims, c.layout, c.max_wait);
        let (store, instance, clock) = (
            Arc::clone(&c.store),
            c.instance.clone(),
            Arc::clone(&c.clock),
        );
        let (window_ns, every) = (c.settings.window_ns, c.settings.every);
        let not_before = claimed.not_before_unix_ns;
        let fence = if claimed.fenced {
            let now = clock.unix_ns();
            let behind = Duration::from_nanos(not_before.saturating_sub(now));
            if behind > max_wait {
                let _ = store.release(&claimed, not_before);
                return Err(ClaimError::ClockBehind {
                    node: claimed.node,
                    behind,
                    bound: max_wait,
                });
            }
            let reserved = now.max(not_before).saturating_add(window_ns);
            if let Err(e) = store.renew(&claimed, reserved) {
                let _ = store.release(&claimed, not_before);
                return Err(e);
            }
            Fence::new(tick_of(layout, reserved), reserved)
        } else {
            Fence::new(u64::MAX, u64::MAX)
        };
        let background = claims.background && claimed.fenced;
        #[cfg(any(feature = "metrics", feature = "tracing"))]
        crate::observe::claim_taken(
            claimed.node,
            &claimed.namespace,
            &store.url(),
            &instance,
            claimed.fenced.then(|| fence.reserved_ns()),
        );
        let shared = Arc::new(Shared {
            store,
            claimed,
            instance,
            fence,
            layout: *layout,
            window_ns,
            every,
            clock,
            one_at_a_time: crate::sync::Mutex::new(()),
            stop: Mutex::new(false),
            wake: Condvar::new(),
            stats: Mutex::new(Stats {
                renewals: 1,
                ..Stats::default()
            }),
            waiting: std::sync::atomic::AtomicUsize::new(0),
            on_change: claims.on_change.clone(),
            told: Mutex::new(ClaimState::Active),
        });
        #[cfg(feature = "tokio")]
        if let (true, Some(runtime)) = (background, &claims.runtime) {
            // Made before the task: a task its runtime drops before its first poll drops
            // the guard too.
            let guard = StopGuard(
                Arc::clone(&shared),
                "the renewal task ended: its tokio runtime shut down",
            );
            let task = runtime.spawn(async move {
                let guard = guard;
                loop {
                    tokio::time::sleep(guard.0.next_wait(every)).await;
                    let s = Arc::clone(&guard.0);
                    let go_on = tokio::task::spawn_blocking(move || {
                        s.renew_in_background().is_ok() && s.fence.state() != ClaimState::Lost
                    })
                    .await;
                    match go_on {
                        Ok(true) => {}
                        Ok(false) => return,
                        Err(e) => {
                            guard.0.stopped(format!("the renewal task failed: {e}"));
                            return;
                        }
                    }
                }
            });
            return Ok(Holder {
                shared,
                renewer: Renewer::Task(task),
                released: false,
            });
        }
        let renewer = if background {
            let s = Arc::clone(&shared);
            let spawned = std::thread::Builder::new()
                .name(format!("flakeid-renew-{}", s.claimed.node))
                .spawn(move || s.run(every));
            match spawned {
                Ok(handle) => Renewer::Thread(handle),
                Err(e) => {
                    let _ = shared.store.release(&shared.claimed, not_before);
                    return Err(ClaimError::Unreachable {
                        store: shared.store.url(),
                        reason: Reason::caused_by(
                            format!("cannot start the renewal thread: {e}"),
                            e,
                        ),
                    });
                }
            }
        } else {
            Renewer::None
        };
        Ok(Holder {
            shared,
            renewer,
            released: false,
        })
    }

    /// The node id claimed.
    pub(crate) fn node(&self) -> u64 {
        self.shared.claimed.node
    }

    /// The first tick the generator may mint (the previous holder's reservation).
    pub(crate) fn first_tick(&self) -> u64 {
        if self.shared.claimed.fenced {
            tick_of(&self.shared.layout, self.shared.claimed.not_before_unix_ns)
        } else {
            0
        }
    }

    /// The fence the generator checks when the tick changes.
    #[inline]
    pub(crate) fn fence(&self) -> &Fence {
        &self.shared.fence
    }

    /// Renews now, on the calling thread (one renewal of the claim at a time).
    pub(crate) fn renew(&self) -> Result<(), ClaimError> {
        if !self.shared.claimed.fenced {
            return Ok(());
        }
        self.shared.renew()
    }

    pub(crate) fn status(&self) -> ClaimStatus {
        let s = &self.shared;
        let stats = s.stats.lock().unwrap_or_else(|e| e.into_inner());
        let fenced = s.claimed.fenced;
        let reserved = s.fence.reserved_ns();
        ClaimStatus {
            store: s.store.url(),
            namespace: s.claimed.namespace.clone(),
            node: s.claimed.node,
            instance: s.instance.clone(),
            state: s.fence.state(),
            fenced,
            not_before_unix_ns: s.claimed.not_before_unix_ns,
            reserved_until_unix_ns: fenced.then_some(reserved),
            fence_left: fenced
                .then(|| Duration::from_nanos(reserved.saturating_sub(s.clock.unix_ns()))),
            renewals: stats.renewals,
            failures: stats.failures,
            last_error: stats.last_error.clone(),
            waiting_at_fence: s.waiting.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// A caller starts (`true`) or stops waiting at the fence.
    pub(crate) fn waiting(&self, entered: bool) {
        use std::sync::atomic::Ordering::Relaxed;
        match entered {
            true => self.shared.waiting.fetch_add(1, Relaxed),
            false => self.shared.waiting.fetch_sub(1, Relaxed),
        };
    }

    /// Stops the renewal and releases the id with the reservation cut to the end of
    /// `last_tick` (the last tick minted), never below what the previous holder left nor
    /// above what the store accepted. Only with no minting possible any more: the
    /// generator calls it from its drop.
    pub(crate) fn release(&mut self, last_tick: Option<u64>) {
        if self.released {
            return;
        }
        self.released = true;
        {
            let mut stop = self.shared.stop.lock().unwrap_or_else(|e| e.into_inner());
            *stop = true;
            self.shared.wake.notify_all();
        }
        match core::mem::replace(&mut self.renewer, Renewer::None) {
            Renewer::None => {}
            Renewer::Thread(handle) => {
                let _ = handle.join();
            }
            // A renewal under way on the blocking pool may still land after the release:
            // the store refuses it (the claim is no longer this holder's), or it raises the
            // reservation, which only makes the next holder start later.
            #[cfg(feature = "tokio")]
            Renewer::Task(task) => task.abort(),
        }
        let s = &self.shared;
        // No renewal runs from here on: one under way (a `renew_claim` on another thread)
        // lands first.
        let _one = s.one_at_a_time.lock().unwrap_or_else(|e| e.into_inner());
        let not_before = s.claimed.not_before_unix_ns;
        let last = if s.claimed.fenced {
            let minted_to = last_tick.map_or(not_before, |t| tick_end_ns(&s.layout, t));
            minted_to.max(not_before).min(s.fence.reserved_ns())
        } else {
            0
        };
        let released = s.store.release(&s.claimed, last);
        #[cfg(any(feature = "metrics", feature = "tracing"))]
        crate::observe::claim_released(
            s.claimed.node,
            last,
            released
                .as_ref()
                .err()
                .map(|e| e as &dyn core::fmt::Display),
        );
        let _ = released;
        s.fence.set_state(ClaimState::Released);
        s.tell();
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.release(None);
    }
}
