//! Observability (features `metrics`, `tracing`): exhaustion waits and clock-behind events
//! are counted, with the size of the step back; failed claim renewals, and lost claims.
#![cfg(any(feature = "metrics", feature = "tracing"))]

mod common;
use common::*;

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use flakeid::clock::ManualClock;
use flakeid::{ClockPolicy, Generator};

/// Held by each test for its whole run. `tracing` caches, per call site, whether any
/// subscriber wants its events; a call site first reached on another test's thread while
/// this test's subscriber is being installed can be cached as "never" (a race inside
/// tracing-core), and the tracing test would then see no events. One test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Mints through one exhausted tick (refused: the wait bound is 0) and then through a
/// clock stepped back 5 ms under `policy`.
fn scenario(policy: ClockPolicy) {
    let clock = ManualClock::from_unix_ms(T0_MS);
    let g = Generator::builder(tiny())
        .node(1)
        .policy(policy)
        .max_wait(Duration::ZERO)
        .clock(clock.clone())
        .build()
        .unwrap();
    for _ in 0..4 {
        g.next_id().unwrap();
    }
    assert!(g.next_id().is_err(), "the tick is used up");
    clock.advance(Duration::from_millis(10));
    g.next_id().unwrap();
    clock.step_back(Duration::from_millis(5));
    let _ = g.next_id();
}

/// A claimed generator whose renewal fails, recovers, and fails twice more: the store
/// unreachable (a partition), then, once its lease lapsed, the claim lost; dropped, it is
/// released.
fn claim_scenario() {
    use flakeid::claim::{Claims, MemoryStore};
    let clock = ManualClock::from_unix_ms(T0_MS);
    let store = MemoryStore::with_clock(Duration::from_secs(1), clock.clone());
    let g = Generator::builder(tiny())
        .clock(clock.clone())
        .build_claimed(Claims::new(store.clone()).manual_renewal())
        .unwrap();
    g.renew_claim().unwrap();
    store.set_partitioned(true);
    assert!(g.renew_claim().is_err());
    store.set_partitioned(false);
    g.renew_claim().unwrap();
    store.set_partitioned(true);
    assert!(g.renew_claim().is_err());
    clock.advance(Duration::from_secs(2));
    store.set_partitioned(false);
    assert!(g.renew_claim().is_err());
    let status = g.claim_status();
    assert_eq!((status.renewals, status.failures), (3, 3));
}

#[cfg(feature = "metrics")]
#[test]
fn metrics_count_failed_claim_renewals_and_lost_claims() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    let _one = one_at_a_time();
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, claim_scenario);
    let mut counts = std::collections::BTreeMap::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        if let DebugValue::Counter(n) = value {
            counts.insert(key.key().name().to_string(), n);
        }
    }
    let count = |name: &str| counts.get(name).copied();
    assert_eq!(
        (
            count("flakeid_claims_taken_total"),
            count("flakeid_claim_renewal_failures_total"),
            count("flakeid_claim_renewals_recovered_total"),
            count("flakeid_claim_lost_total"),
            count("flakeid_claims_released_total"),
        ),
        (Some(1), Some(3), Some(1), Some(1), Some(1)),
        "{counts:?}"
    );
}

#[cfg(feature = "metrics")]
#[test]
fn metrics_count_exhaustion_and_clock_behind() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    let _one = one_at_a_time();
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || scenario(ClockPolicy::Continue));
    let mut exhausted = None;
    let mut behind = None;
    let mut sizes = Vec::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        match (key.key().name(), value) {
            ("flakeid_sequence_exhausted_total", DebugValue::Counter(n)) => exhausted = Some(n),
            ("flakeid_clock_behind_total", DebugValue::Counter(n)) => behind = Some(n),
            ("flakeid_clock_behind_seconds", DebugValue::Histogram(v)) => {
                sizes = v.into_iter().map(|x| x.into_inner()).collect()
            }
            _ => {}
        }
    }
    assert_eq!(exhausted, Some(1));
    assert_eq!(behind, Some(1));
    assert_eq!(sizes.len(), 1);
    // The clock stood at the start of its tick and stepped back 5 ms.
    assert!((sizes[0] - 0.005).abs() < 1e-9, "{sizes:?}");
}

/// A `tracing` subscriber that records each event's level and fields.
#[cfg(feature = "tracing")]
mod events {
    use std::sync::{Arc, Mutex};
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    /// Records each event's level and fields.
    #[derive(Default, Clone)]
    pub struct Events(pub Arc<Mutex<Vec<String>>>);
    struct Fields(String);
    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0 += &format!("{}={value:?} ", field.name());
        }
    }
    impl Subscriber for Events {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            let mut fields = Fields(format!("{} ", event.metadata().level()));
            event.record(&mut fields);
            self.0.lock().unwrap().push(fields.0);
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }
}
#[cfg(feature = "tracing")]
use events::Events;

#[cfg(feature = "tracing")]
#[test]
fn tracing_events_for_exhaustion_and_clock_behind() {
    let _one = one_at_a_time();
    let events = Events::default();
    tracing::subscriber::with_default(events.clone(), || {
        // Call sites first reached before this subscriber existed are asked again.
        tracing::callsite::rebuild_interest_cache();
        scenario(ClockPolicy::Reject);
        claim_scenario();
    });
    let seen = events.0.lock().unwrap().clone();
    assert_eq!(seen.len(), 8, "{seen:?}");
    // The claim's life, one event per change: taken, a failed renewal, recovered, failed
    // again, lost, released (the store no longer names it, so the release is not stored).
    assert!(
        seen[2].starts_with("INFO") && seen[2].contains("claimed node id"),
        "{seen:?}"
    );
    assert!(seen[2].contains("node=0") && seen[2].contains("namespace=\"default\""));
    assert!(
        seen[3].starts_with("WARN") && seen[3].contains("lost=false"),
        "{seen:?}"
    );
    assert!(seen[3].contains("claim renewal failed") && seen[3].contains("node=0"));
    assert!(
        seen[4].starts_with("INFO") && seen[4].contains("claim renewal recovered"),
        "{seen:?}"
    );
    assert!(seen[4].contains("failed=1"), "{seen:?}");
    assert!(seen[5].starts_with("WARN") && seen[5].contains("lost=false"));
    assert!(
        seen[6].starts_with("ERROR")
            && seen[6].contains("lost=true")
            && seen[6].contains("claim lost"),
        "{seen:?}"
    );
    assert!(seen[7].contains("claim release"), "{seen:?}");
    assert!(seen[0].starts_with("DEBUG") && seen[0].contains("sequence exhausted"));
    assert!(seen[1].starts_with("WARN") && seen[1].contains("behind_ns=5000000"));
    assert!(seen[1].contains("policy=Reject"), "{seen:?}");
}

/// A generator built on a layout that runs out within its end warning (a year by default)
/// says how long is left, once, at build; one whose end lies further off, or whose
/// warning is off, says nothing.
#[cfg(feature = "metrics")]
#[test]
fn a_layout_that_runs_out_soon_is_a_gauge_of_the_seconds_left() {
    use flakeid::Layout;
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    let _one = one_at_a_time();
    // 2^31 ms (24.86 days) from a day before T0: 23.86 days left at T0.
    let short = Layout::builder()
        .time_bits(31)
        .sequence_bits(2)
        .node_bits(3)
        .epoch_unix_ms(T0_MS - 86_400_000)
        .build()
        .unwrap();
    let gauge = |layout: Layout, margin: Option<Duration>| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            let mut b = Generator::builder(layout)
                .node(1)
                .clock(ManualClock::from_unix_ms(T0_MS));
            if let Some(margin) = margin {
                b = b.end_warning(margin);
            }
            b.build().unwrap();
        });
        snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .find_map(|(key, _, _, value)| match (key.key().name(), value) {
                ("flakeid_layout_seconds_left", DebugValue::Gauge(v)) => Some(v.into_inner()),
                _ => None,
            })
    };
    let left = (1u64 << 31) as f64 / 1e3 - 86_400.0;
    let seen = gauge(short, None).expect("a gauge for a layout ending in 24 days");
    assert!((seen - left).abs() < 1e-3, "{seen} vs {left}");
    assert_eq!(gauge(short, Some(Duration::ZERO)), None, "warning off");
    assert_eq!(
        gauge(short, Some(Duration::from_secs(86_400))),
        None,
        "a day's margin"
    );
    assert_eq!(gauge(tiny(), None), None, "34.8 years left");
}

/// The end warning is said once for each build, not once a shard: a sharded generator of
/// three shards on a layout that runs out in 24 days is one `warn` event.
#[cfg(feature = "tracing")]
#[test]
fn a_sharded_build_warns_of_the_layouts_end_once() {
    let _one = one_at_a_time();
    let short = flakeid::Layout::builder()
        .time_bits(31)
        .sequence_bits(2)
        .node_bits(3)
        .epoch_unix_ms(T0_MS - 86_400_000)
        .build()
        .unwrap();
    let events = Events::default();
    tracing::subscriber::with_default(events.clone(), || {
        tracing::callsite::rebuild_interest_cache();
        flakeid::ShardedGenerator::builder(short)
            .nodes(0..3)
            .shards(3)
            .clock(ManualClock::from_unix_ms(T0_MS))
            .build()
            .unwrap();
    });
    let seen = events.0.lock().unwrap().clone();
    let warned = seen.iter().filter(|e| e.contains("runs out soon")).count();
    assert_eq!(warned, 1, "{seen:?}");
}
