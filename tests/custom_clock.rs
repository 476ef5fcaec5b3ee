//! The generator on a clock the user writes, through `GeneratorBuilder::with_clock`: the API a
//! `no_std` build offers (no default clock there).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use flakeid::{Clock, ClockPolicy, GeneratorBuilder, Id, Layout, MintError};

/// A clock a firmware might keep: ticks counted by an interrupt, here set by hand.
struct InterruptClock {
    unix_ms: AtomicU64,
}

impl Clock for InterruptClock {
    fn unix_ns(&self) -> u64 {
        self.unix_ms.load(Ordering::Acquire) * 1_000_000
    }
}

#[test]
fn a_user_clock_drives_the_generator() {
    let clock = InterruptClock {
        unix_ms: AtomicU64::new(1_793_448_000_000),
    };
    let layout = Layout::javascript_safe();
    let g = GeneratorBuilder::with_clock(layout, &clock)
        .node(9)
        .max_wait(core::time::Duration::ZERO)
        .build()
        .unwrap();
    let mut ids = Vec::new();
    for _ in 0..128 {
        ids.push(g.next_id().unwrap());
    }
    // 128 per tick: the 129th needs the next millisecond, which this clock has not reached.
    assert!(matches!(g.next_id(), Err(MintError::WaitTooLong { .. })));
    clock.unix_ms.fetch_add(1, Ordering::AcqRel);
    ids.push(g.next_id().unwrap());
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert!(ids.iter().all(|id| id.get() < 1 << 53), "JavaScript-safe");
    let last = layout.decompose(ids[128].get()).unwrap();
    assert_eq!((last.sequence, last.node), (0, 9));
}

/// A clock with a coarse reading that a test moves by hand, published in an atomic: with
/// `publish`, [`Clock::recent_atomic`] hands the atomic out (as `CoarseClock` does), so a
/// lease loads it itself; without, only [`Clock::recent_unix_ns`] reads it. Counts the
/// calls of `recent_unix_ns`.
struct PublishingClock {
    now: Arc<AtomicU64>,
    recent: Arc<AtomicU64>,
    publish: bool,
    calls: AtomicU64,
}

impl Clock for PublishingClock {
    fn unix_ns(&self) -> u64 {
        self.now.load(Ordering::Acquire)
    }

    fn recent_unix_ns(&self) -> u64 {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.recent.load(Ordering::Relaxed)
    }

    fn recent_atomic(&self) -> Option<&AtomicU64> {
        self.publish.then_some(&*self.recent)
    }
}

/// A lease on a clock that publishes its coarse reading mints from the atomic itself, never
/// calling `recent_unix_ns` on its fast path, and hands out exactly what the shared path
/// hands out on the same readings (the oracle: one more generator, on a clock that does not
/// publish), through single mints, `try_next_id`, batches, iterators and lease ends, with
/// the coarse reading caught up, lagging inside the tick and lagging a tick behind. While
/// the lease is held, `last_id` (which another thread may read to persist) is never below
/// the last ID it minted and stays in its tick; once it ends, `last_id` is exact.
#[test]
fn a_lease_reads_a_published_coarse_reading_and_mints_what_the_shared_path_mints() {
    let mut checked = 0;
    for spec in [
        "time=41,seq=12,node=10",
        "time=41,seq=3,node=6,order=tsn",
        "time=41,seq=0,node=6",
    ] {
        let layout: Layout = spec.parse().unwrap();
        let (now, recent) = (
            Arc::new(AtomicU64::new(1_800_000_000_000_000_000)),
            Arc::new(AtomicU64::new(1_800_000_000_000_000_000)),
        );
        let clock = |publish| PublishingClock {
            now: now.clone(),
            recent: recent.clone(),
            publish,
            calls: AtomicU64::new(0),
        };
        let (ca, cb) = (clock(true), clock(false));
        fn make(layout: Layout, clock: &PublishingClock) -> flakeid::Generator<&PublishingClock> {
            GeneratorBuilder::with_clock(layout, clock)
                .node(5)
                .policy(ClockPolicy::Continue)
                .max_wait(Duration::ZERO)
                .build()
                .unwrap()
        }
        let (a, b) = (make(layout, &ca), make(layout, &cb));
        let mut lease = a.lease().unwrap();
        let mut minted = 0u64;
        let mut rng = common::Rng(0x5EED_F0C0_A25E_0001 ^ u64::from(layout.sequence_bits()));
        let mut catch_up = false;
        for i in 0..20_000u32 {
            let rng = rng.next();
            let last = match rng % 64 {
                0 => {
                    let (mut oa, mut ob) = ([Id::default(); 7], [Id::default(); 7]);
                    let (na, nb) = (lease.next_ids(&mut oa), b.next_ids(&mut ob));
                    assert_eq!(na.is_ok(), nb.is_ok(), "{layout} step {i}");
                    let n = na.unwrap_or(0);
                    assert_eq!(oa[..n], ob[..nb.unwrap_or(0)], "{layout} step {i}");
                    oa[..n].last().copied()
                }
                1 => {
                    let x: Vec<_> = lease.ids(5).map_while(Result::ok).collect();
                    let y: Vec<_> = b.ids(5).map_while(Result::ok).collect();
                    assert_eq!(x, y, "{layout} step {i}");
                    // The iterator left the lease's copy stale, so its next mint takes the
                    // slow path, on the precise clock; the shared path would mint on a
                    // lagging coarse reading in the old tick (both right, not the same).
                    catch_up = true;
                    x.last().copied()
                }
                2 => {
                    // The lease ends (writing its word back) and is taken again.
                    drop(lease);
                    assert_eq!(a.last_id(), b.last_id(), "{layout} step {i}");
                    lease = a.lease().unwrap();
                    None
                }
                r => {
                    let (x, y) = if r < 8 {
                        (lease.try_next_id(), b.try_next_id())
                    } else {
                        (lease.next_id(), b.next_id())
                    };
                    assert_eq!(x.ok(), y.ok(), "{layout} step {i}");
                    assert_eq!(
                        x.err().map(|e| std::mem::discriminant(&e)),
                        y.err().map(|e| std::mem::discriminant(&e)),
                        "{layout} step {i}"
                    );
                    x.ok()
                }
            };
            if let Some(last) = last {
                minted += 1;
                let reported = a.last_id();
                assert!(reported >= last, "{layout} step {i}: {reported} < {last}");
                let tick = |id: Id| layout.decompose(id.get()).unwrap().ticks;
                assert_eq!(tick(reported), tick(last), "{layout} step {i}");
            }
            checked += 1;
            // The precise clock moves on by up to 2 ms; the coarse reading catches up,
            // stays where it was, or lags a little (never ahead of the precise one).
            if rng >> 20 & 3 == 0 {
                now.fetch_add(rng >> 24 & 0x1f_ffff, Ordering::AcqRel);
            }
            let n = now.load(Ordering::Acquire);
            match rng >> 50 & 3 {
                _ if std::mem::take(&mut catch_up) => recent.store(n, Ordering::Relaxed),
                0 => recent.store(n, Ordering::Relaxed),
                1 => recent.store(n.saturating_sub(rng >> 30 & 0xf_ffff), Ordering::Relaxed),
                _ => {}
            }
        }
        drop(lease);
        assert_eq!(a.last_id(), b.last_id(), "{layout}");
        assert!(minted > 3_000, "{layout}: {minted} minted");
        assert_eq!(
            ca.calls.load(Ordering::Relaxed),
            0,
            "{layout}: the lease read the atomic"
        );
        // The counter counts: the oracle's fast path reads the coarse one through the call
        // (with no sequence, a tick's one ID never takes a fast path).
        if layout.sequence_bits() > 0 {
            assert!(cb.calls.load(Ordering::Relaxed) > 3_000, "{layout}");
        }
    }
    assert_eq!(checked, 3 * 20_000);
}
