//! The claim store contract on the stores of one host (memory, file, static), and the
//! claim layer's guarantees where a duplicate or a dead claim could come about: a file
//! lock replaced between check and write, overlapping renewals, shards sharing a static
//! id, a forgotten lease, a renewer that died, a restart on an unusable id.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use flakeid::claim::store::{ClaimRequest, Claimed, Repaired};
use flakeid::claim::{
    ClaimError, ClaimGate, ClaimInfo, ClaimState, ClaimStore, Claims, FileStore, MemoryStore,
    NamespaceInfo, NodeState, StaticNode,
};
use flakeid::clock::ManualClock;
use flakeid::{Generator, Layout, MintError, ShardedGenerator};
use flakeid_testkit as conformance;
use flakeid_testkit::Backend;

/// 2026-10-31T12:00:00Z.
const T0_NS: u64 = 1_793_448_000_000_000_000;
const TTL: Duration = Duration::from_secs(2);

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flakeid-contract-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

struct Memory {
    store: MemoryStore,
    clock: ManualClock,
}

impl Backend for Memory {
    fn handle(&self) -> Arc<dyn ClaimStore> {
        Arc::new(self.store.client())
    }
    fn lose(&self, _: &Arc<dyn ClaimStore>, _: &Claimed) {
        // Every lease lapses; the checks renew what they still hold afterwards.
        self.clock.advance(TTL + Duration::from_millis(1));
    }
    fn corrupt(&self, namespace: &str, node: u64) {
        self.store.set_corrupt(namespace, node);
    }
    fn raw(&self, namespace: &str, node: u64) -> Option<Vec<u8>> {
        let infos = self.store.list(namespace).ok()?;
        let info = infos.into_iter().find(|i| i.node == node)?;
        Some(info.reserved_until_unix_ns.to_string().into_bytes())
    }
    fn remove_reservation(&self, _: &str, _: u64) -> bool {
        false
    }
}

struct Files {
    dir: PathBuf,
}

impl Backend for Files {
    fn handle(&self) -> Arc<dyn ClaimStore> {
        Arc::new(FileStore::open(&self.dir).unwrap())
    }
    /// The lock file removed under its holder (which still holds its lock on the old
    /// file), as an operator or a cleanup job might.
    fn lose(&self, _: &Arc<dyn ClaimStore>, claimed: &Claimed) {
        let lock = self
            .dir
            .join(&claimed.namespace)
            .join(format!("node-{}.lock", claimed.node));
        std::fs::remove_file(lock).unwrap();
    }
    fn corrupt(&self, namespace: &str, node: u64) {
        let path = self.dir.join(namespace).join(format!("node-{node}.state"));
        std::fs::write(
            path,
            b"flakeid-claim v1\nnode 0\nreserved_until_unix_ns 12x4\n",
        )
        .unwrap();
    }
    fn raw(&self, namespace: &str, node: u64) -> Option<Vec<u8>> {
        std::fs::read(self.dir.join(namespace).join(format!("node-{node}.state"))).ok()
    }
    fn remove_reservation(&self, namespace: &str, node: u64) -> bool {
        std::fs::remove_file(self.dir.join(namespace).join(format!("node-{node}.state"))).is_ok()
    }
}

#[test]
fn the_memory_store_keeps_the_contract() {
    let clock = ManualClock::new(T0_NS);
    let store = MemoryStore::with_clock(TTL, clock.clone());
    conformance::run_all(&Memory { store, clock }, "memory");
}

#[test]
fn the_file_store_keeps_the_contract() {
    let dir = temp_dir("conformance");
    conformance::run_all(&Files { dir: dir.clone() }, "file");
    std::fs::remove_dir_all(dir).unwrap();
}

/// `static:N`: claims held at once get N, N+1, ...; a release frees its id; renewing a
/// released claim is not the owner's; the pool still bounds it.
#[test]
fn the_static_store_gives_held_claims_distinct_ids() {
    let store = StaticNode::new(5);
    let request = ClaimRequest {
        namespace: "s",
        pool: 0..8,
        instance: "t",
    };
    let a = store.claim(&request).unwrap();
    let b = store.claim(&request).unwrap();
    let c = store.claim(&request).unwrap();
    assert_eq!((a.node, b.node, c.node), (5, 6, 7));
    assert!(!a.fenced);
    assert!(matches!(
        store.claim(&request),
        Err(ClaimError::NodeOutsidePool { node: 8, .. })
    ));
    store.release(&b, 0).unwrap();
    assert!(matches!(
        store.renew(&b, 0),
        Err(ClaimError::NotOwner { .. })
    ));
    assert_eq!(
        store.claim(&request).unwrap().node,
        6,
        "a released id is reused"
    );
    let listed: Vec<u64> = store.list("s").unwrap().iter().map(|i| i.node).collect();
    assert_eq!(listed, [5, 6, 7]);
}

/// A sharded generator on `static:N` mints on N, N+1, ... (one id per shard): no two
/// shards mint the same ID in the same tick.
#[test]
fn shards_on_a_static_id_mint_on_consecutive_ids_without_duplicates() {
    let clock = ManualClock::new(T0_NS);
    let sharded: ShardedGenerator<ManualClock, ClaimGate> =
        ShardedGenerator::builder(Layout::snowflake())
            .shards(3)
            .clock(clock.clone())
            .build_claimed(Claims::open("static:4").unwrap())
            .unwrap();
    let nodes: Vec<u64> = sharded.shards().iter().map(Generator::node).collect();
    assert_eq!(nodes, [4, 5, 6]);
    let mut seen = HashSet::new();
    for shard in sharded.shards() {
        for _ in 0..100 {
            assert!(
                seen.insert(shard.next_id().unwrap()),
                "a duplicate across shards"
            );
        }
    }
}

/// A store that writes whatever it is given (as the file and etcd stores did before), and
/// stalls the first renewal after it computed its value: what the holder must order.
#[derive(Debug, Default)]
struct PlainPutState {
    stored: Mutex<Vec<u64>>,
    stall_next: AtomicBool,
    stalled: AtomicBool,
}

#[derive(Debug, Default, Clone)]
struct PlainPut(Arc<PlainPutState>);

impl std::ops::Deref for PlainPut {
    type Target = PlainPutState;
    fn deref(&self) -> &PlainPutState {
        &self.0
    }
}

impl ClaimStore for PlainPut {
    fn url(&self) -> String {
        "plain:".into()
    }
    fn claim(&self, r: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        Ok(Claimed {
            namespace: r.namespace.into(),
            node: 0,
            not_before_unix_ns: 0,
            fenced: true,
            token: 1,
        })
    }
    fn renew(&self, _: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        if self.stall_next.swap(false, Ordering::SeqCst) {
            self.stalled.store(true, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(300));
        }
        self.stored.lock().unwrap().push(reserved);
        Ok(())
    }
    fn release(&self, _: &Claimed, _: u64) -> Result<(), ClaimError> {
        Ok(())
    }
    fn list(&self, _: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        Ok(Vec::new())
    }
    fn bind_layout(&self, _: &str, _: &str) -> Result<(), ClaimError> {
        Ok(())
    }
    fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
        Ok(Vec::new())
    }
    fn repair(&self, _: &str, _: u64, reserved: u64) -> Result<Repaired, ClaimError> {
        Ok(Repaired {
            previous_unix_ns: None,
            reserved_until_unix_ns: reserved,
        })
    }
}

/// Renewal A computes its reservation and stalls in the store; renewal B, on a later
/// clock, stores a higher one: B waits for A, so the store never ends below what the fence
/// let through.
#[test]
fn overlapping_renewals_of_one_claim_store_in_order() {
    let store = PlainPut::default();
    let clock = ManualClock::new(T0_NS);
    let g = Arc::new(
        Generator::builder(Layout::snowflake())
            .clock(clock.clone())
            .build_claimed(
                Claims::new(store.clone())
                    .window(Duration::from_secs(1))
                    .manual_renewal(),
            )
            .unwrap(),
    );
    store.stall_next.store(true, Ordering::SeqCst);
    let a = {
        let g = Arc::clone(&g);
        std::thread::spawn(move || g.renew_claim().unwrap())
    };
    while !store.stalled.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    // Less than half a renewal period: renewal A is not late enough to be followed by
    // another at once.
    clock.advance(Duration::from_millis(100));
    g.renew_claim().unwrap();
    a.join().unwrap();
    let stored = store.stored.lock().unwrap().clone();
    assert_eq!(stored.len(), 3, "{stored:?}");
    assert!(
        stored.windows(2).all(|w| w[0] <= w[1]),
        "a renewal stored a lower reservation after a higher one: {stored:?}"
    );
    let fence = g.claim_status().reserved_until_unix_ns.unwrap();
    assert_eq!(
        *stored.last().unwrap(),
        fence,
        "the store ends at the fence"
    );
}

/// While a holder renews, its lock file is removed and another process
/// claims the id. No reservation the old holder was told is stored may lie above where
/// the new holder starts, and nothing the old holder writes lands after the new claim.
#[test]
fn a_replaced_lock_file_never_lets_the_old_holders_write_land_after_the_new_claim() {
    let dir = temp_dir("replaced");
    for round in 0..40u64 {
        let ns = format!("r{round}");
        let old = Arc::new(FileStore::open(&dir).unwrap());
        let request = ClaimRequest {
            namespace: &ns,
            pool: 0..1,
            instance: "old",
        };
        let claimed = old.claim(&request).unwrap();
        let acked = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let renewer = {
            let (old, claimed, acked, stop) = (
                Arc::clone(&old),
                claimed.clone(),
                Arc::clone(&acked),
                Arc::clone(&stop),
            );
            std::thread::spawn(move || {
                let mut value = T0_NS;
                while !stop.load(Ordering::SeqCst) {
                    value += 1_000_000;
                    if old.renew(&claimed, value).is_ok() {
                        acked.fetch_max(value, Ordering::SeqCst);
                    }
                }
            })
        };
        std::thread::sleep(Duration::from_millis(2));
        std::fs::remove_file(dir.join(&ns).join("node-0.lock")).unwrap();
        let new = FileStore::open(&dir).unwrap();
        let taken = new
            .claim(&ClaimRequest {
                instance: "new",
                ..request.clone()
            })
            .unwrap();
        std::thread::sleep(Duration::from_millis(3));
        stop.store(true, Ordering::SeqCst);
        renewer.join().unwrap();
        let acked = acked.load(Ordering::SeqCst);
        assert!(
            acked <= taken.not_before_unix_ns,
            "round {round}: the old holder was told {acked} is stored, the new one starts at {}",
            taken.not_before_unix_ns
        );
        let stored = new.list(&ns).unwrap()[0].reserved_until_unix_ns;
        assert_eq!(
            stored, taken.not_before_unix_ns,
            "round {round}: the old holder wrote after the new claim"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A lease forgotten (`mem::forget`) while it had minted in later ticks
/// than the shared word records: the release must cut the reservation at or above the
/// lease's last tick, or the next holder mints the lease's IDs again.
#[test]
fn a_forgotten_lease_does_not_cut_the_release_below_its_ids() {
    let store_clock = ManualClock::new(T0_NS);
    let store = MemoryStore::with_clock(TTL, store_clock.clone());
    let clock = ManualClock::new(T0_NS);
    let claimed = |clock: &ManualClock| {
        Generator::builder(Layout::snowflake())
            .clock(clock.clone())
            .build_claimed(
                Claims::new(store.client())
                    .nodes(0..1)
                    .window(Duration::from_secs(1))
                    .manual_renewal(),
            )
            .unwrap()
    };
    let g = claimed(&clock);
    g.next_id().unwrap();
    let mut lease = g.lease().unwrap();
    let mut leased = Vec::new();
    for _ in 0..5 {
        clock.advance(Duration::from_millis(20));
        leased.push(lease.next_id().unwrap());
    }
    std::mem::forget(lease);
    drop(g);
    let released = store.list("default").unwrap()[0].reserved_until_unix_ns;
    let last = Layout::snowflake().decompose(leased[4].get()).unwrap();
    let last_end = Layout::snowflake().unix_ns_of(last.ticks + 1).unwrap() as u64;
    assert!(
        released >= last_end,
        "released at {released}, the lease minted up to {last_end}"
    );
    // The next holder, on a clock 50 ms behind (another host), starts after the lease:
    // it hands out nothing until its clock gets there, then only IDs above the lease's.
    let behind = ManualClock::new(T0_NS + 50_000_000);
    let next = claimed(&behind);
    assert!(next.claim_status().not_before_unix_ns >= last_end);
    assert!(
        next.try_next_id().is_err(),
        "an ID below the lease's last tick"
    );
    behind.set(last_end);
    let first = next.next_id().unwrap();
    assert!(
        first > leased[4],
        "{first} is not above the leased {}",
        leased[4]
    );
}

/// A memory store whose renewals first ask `hook` with their count (1 for the first): it
/// may panic, or fail the renewal. When each renewal was asked is recorded.
#[derive(Debug)]
struct OnRenewal {
    store: MemoryStore,
    asked: Mutex<Vec<std::time::Instant>>,
    hook: fn(usize) -> Result<(), ClaimError>,
}

impl OnRenewal {
    fn new(hook: fn(usize) -> Result<(), ClaimError>) -> OnRenewal {
        OnRenewal {
            store: MemoryStore::new(),
            asked: Mutex::default(),
            hook,
        }
    }
}

impl ClaimStore for OnRenewal {
    fn url(&self) -> String {
        "on-renewal:".into()
    }
    fn claim(&self, r: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        self.store.claim(r)
    }
    fn renew(&self, c: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        let count = {
            let mut asked = self.asked.lock().unwrap();
            asked.push(std::time::Instant::now());
            asked.len()
        };
        (self.hook)(count)?;
        self.store.renew(c, reserved)
    }
    fn release(&self, c: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        self.store.release(c, reserved)
    }
    fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        self.store.list(namespace)
    }
    fn lease_ttl(&self) -> Option<Duration> {
        self.store.lease_ttl()
    }
    fn bind_layout(&self, namespace: &str, layout: &str) -> Result<(), ClaimError> {
        self.store.bind_layout(namespace, layout)
    }
    fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
        self.store.namespaces()
    }
    fn repair(&self, namespace: &str, node: u64, reserved: u64) -> Result<Repaired, ClaimError> {
        self.store.repair(namespace, node, reserved)
    }
}

/// `Claims::on_change` tells each change of state once, in order, with the node id: a
/// renewal that failed (renewing), the next that lands (active), the store's "not yours"
/// (lost, which a release leaves as it is). Renewals that change nothing tell nothing.
#[test]
fn on_change_tells_each_change_of_state_once_in_order() {
    // The first renewal writes the claim's first reservation, at build.
    let store = OnRenewal::new(|count| match count {
        1 | 3 | 4 => Ok(()),
        2 => Err(ClaimError::Unreachable {
            store: "on-renewal:".into(),
            reason: "cut off".into(),
        }),
        _ => Err(ClaimError::NotOwner {
            namespace: "default".into(),
            node: 0,
        }),
    });
    let told = Arc::new(Mutex::new(Vec::new()));
    let t = Arc::clone(&told);
    let g = Generator::builder(Layout::snowflake())
        .build_claimed(
            Claims::new(store)
                .manual_renewal()
                .on_change(move |node, state| t.lock().unwrap().push((node, state))),
        )
        .unwrap();
    let node = g.node();
    assert!(g.renew_claim().is_err());
    g.renew_claim().unwrap();
    g.renew_claim().unwrap();
    assert!(g.renew_claim().is_err());
    drop(g);
    let told = told.lock().unwrap().clone();
    let expected = [ClaimState::Renewing, ClaimState::Active, ClaimState::Lost];
    assert_eq!(told, expected.map(|s| (node, s)));
}

/// A callback that panics is its own: the claim still renews, and is still released.
#[test]
fn a_panicking_on_change_stops_neither_renewal_nor_release() {
    let store = Arc::new(MemoryStore::new());
    let g = Generator::builder(Layout::snowflake())
        .build_claimed(
            Claims::new(Arc::clone(&store) as Arc<dyn ClaimStore>)
                .manual_renewal()
                .on_change(|_, _| panic!("a bug in the callback")),
        )
        .unwrap();
    g.renew_claim().unwrap();
    assert_eq!(g.claim_status().state, ClaimState::Active);
    drop(g);
    let listed = store.list("default").unwrap();
    assert!(
        listed
            .iter()
            .all(|i| i.state == flakeid::claim::store::NodeState::Released),
        "{listed:?}"
    );
}

/// A renewal that panics marks the claim stopped: its state says nothing renews, and
/// minting at the fence fails with a final error that says so.
#[test]
fn a_renewal_that_panics_marks_the_claim_stopped_and_minting_fails_for_good() {
    // Renewals panic after the first: the background renewal ends.
    let store = OnRenewal::new(|count| match count {
        1 => Ok(()),
        _ => panic!("a bug in the store"),
    });
    let g = Generator::builder(Layout::snowflake())
        .max_wait(Duration::ZERO)
        .build_claimed(
            Claims::new(store)
                .window(Duration::from_millis(300))
                .renew_every(Duration::from_millis(20)),
        )
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while g.claim_status().state != ClaimState::Stopped {
        assert!(std::time::Instant::now() < deadline, "never marked stopped");
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = g.claim_status();
    assert!(
        matches!(&status.last_error, Some(ClaimError::RenewalStopped { reason, .. }) if reason.contains("a bug in the store")),
        "{:?}",
        status.last_error
    );
    // Past the fence: a final error, not "resumes by itself".
    std::thread::sleep(Duration::from_millis(350));
    let e = loop {
        match g.next_id() {
            Ok(_) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => break e,
        }
    };
    assert_eq!(e, MintError::RenewalStopped { node: 0 });
    assert!(e.is_final());
}

/// A background renewal that failed is asked again long before the next period (100 ms
/// after, where the period is 6 s), so a store that refused for a moment does not leave
/// the fence a period short; the retry lands and the claim is active again.
#[test]
fn a_failed_background_renewal_is_tried_again_before_the_next_period() {
    let every = Duration::from_secs(6);
    // The first renewal after the build's fails at once (a client between servers).
    let store = Arc::new(OnRenewal::new(|count| match count {
        2 => Err(ClaimError::Unreachable {
            store: "on-renewal:".into(),
            reason: "between servers".into(),
        }),
        _ => Ok(()),
    }));
    let g = Generator::builder(Layout::snowflake())
        .build_claimed(
            Claims::new(Arc::clone(&store) as Arc<dyn ClaimStore>)
                .window(Duration::from_secs(20))
                .renew_every(every),
        )
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let asked = loop {
        let asked = store.asked.lock().unwrap().clone();
        if asked.len() >= 3 {
            break asked;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never retried: {asked:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        asked.len(),
        3,
        "the build's, the failed one, the retry: {asked:?}"
    );
    // Half a period between them would already be a retry; a whole one is the old rule.
    assert!(
        asked[2] - asked[1] < every / 2,
        "the retry came {:?} after the failure",
        asked[2] - asked[1]
    );
    // The retry landed: the failure is behind the claim.
    while g.claim_status().last_error.is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "the retry never landed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(g.claim_status().failures, 1);
}

/// The same on tokio: the runtime the renewal task ran on shut down.
#[cfg(feature = "tokio")]
#[test]
fn a_renewal_task_whose_runtime_shut_down_marks_the_claim_stopped() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let g = Generator::builder(Layout::snowflake())
        .build_claimed(
            Claims::new(MemoryStore::new())
                .window(Duration::from_secs(3))
                .renew_on(runtime.handle().clone()),
        )
        .unwrap();
    assert_eq!(g.claim_status().state, ClaimState::Active);
    drop(runtime);
    let status = g.claim_status();
    assert_eq!(status.state, ClaimState::Stopped);
    assert!(matches!(
        status.last_error,
        Some(ClaimError::RenewalStopped { .. })
    ));
}

/// After a crash with a long window, id 0's reservation lies ten
/// minutes ahead; the restart takes free id 1 instead of failing, and lets id 0 go with
/// its reservation untouched.
#[test]
fn a_restart_prefers_a_usable_free_id_to_one_reserved_far_ahead() {
    let dir = temp_dir("usable");
    let clock = ManualClock::new(T0_NS);
    let claims = || {
        Claims::new(FileStore::open(&dir).unwrap())
            .nodes(0..4)
            .window(Duration::from_secs(600))
            .pool_wait(Duration::ZERO)
            .manual_renewal()
    };
    let build = || {
        Generator::builder(Layout::snowflake())
            .clock(clock.clone())
            .max_wait(Duration::from_secs(1))
            .build_claimed(claims())
    };
    let crashed = build().unwrap();
    assert_eq!(crashed.node(), 0);
    let reserved = crashed.claim_status().reserved_until_unix_ns.unwrap();
    // A crash: the lock goes with the process, the reservation stays.
    std::mem::forget(crashed);
    let lock = dir.join("default/node-0.lock");
    std::fs::remove_file(&lock).unwrap();
    let restarted = build().unwrap();
    assert_eq!(restarted.node(), 1, "the usable free id");
    let listed = FileStore::open(&dir).unwrap().list("default").unwrap();
    assert_eq!(listed[0].node, 0);
    assert_eq!(
        listed[0].reserved_until_unix_ns, reserved,
        "id 0's reservation changed"
    );
    assert_eq!(listed[0].state, NodeState::Released);
    drop(restarted);
    std::fs::remove_dir_all(dir).unwrap();
}

/// With no pool wait given, a claim on a full pool waits out the dead holder's lease (TTL
/// + window + 1 s) and takes its id.
#[test]
fn the_default_pool_wait_covers_a_dead_holders_lease() {
    // A lease longer than the old fixed default wait of 1 s.
    let store = MemoryStore::with_clock(Duration::from_millis(1500), flakeid::clock::SystemClock);
    let dead = store.client();
    let claimed = |s: &MemoryStore| {
        Generator::builder(Layout::snowflake()).build_claimed(
            Claims::new(s.clone())
                .nodes(0..1)
                .window(Duration::from_millis(300))
                .manual_renewal(),
        )
    };
    let g = claimed(&dead).unwrap();
    dead.set_partitioned(true); // dead: no renewal, no release reaches the store
    std::mem::forget(g);
    let started = std::time::Instant::now();
    let next = claimed(&store.client()).expect("the dead holder's id, once its lease lapsed");
    assert_eq!(next.node(), 0);
    assert!(started.elapsed() >= Duration::from_millis(1400));
}

/// A store error that passes (a leader change, a timeout) does not end the wait for an
/// id: the claim retries within the pool wait.
#[test]
fn waiting_for_an_id_rides_out_a_store_that_is_briefly_unreachable() {
    let store = MemoryStore::new();
    let cut = store.client();
    cut.set_partitioned(true);
    let healer = {
        let cut = cut.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            cut.set_partitioned(false);
        })
    };
    let g = Generator::builder(Layout::snowflake())
        .build_claimed(
            Claims::new(cut)
                .pool_wait(Duration::from_secs(5))
                .manual_renewal(),
        )
        .expect("the store came back within the pool wait");
    healer.join().unwrap();
    assert_eq!(g.node(), 0);
    // Without a pool wait the error is reported at once, naming the store.
    let gone = store.client();
    gone.set_partitioned(true);
    let e = Generator::builder(Layout::snowflake())
        .build_claimed(Claims::new(gone).pool_wait(Duration::ZERO).manual_renewal())
        .map(drop)
        .unwrap_err();
    assert!(matches!(e, ClaimError::Unreachable { .. }), "{e}");
}

/// Each claim error says what to do by its kind, from what the store really answered: fix
/// the settings, retry an unavailable store or a busy pool, claim anew, repair the store.
#[test]
fn claim_errors_say_their_remedy() {
    use flakeid::claim::ClaimErrorKind;
    let request = ClaimRequest {
        namespace: "kinds",
        pool: 0..1,
        instance: "a",
    };
    assert_eq!(
        Claims::open("ftp://nowhere").unwrap_err().kind(),
        ClaimErrorKind::Settings
    );
    let store = MemoryStore::new();
    let held = store.claim(&request).unwrap();
    assert_eq!(
        store.claim(&request).unwrap_err().kind(),
        ClaimErrorKind::Busy
    );
    store.release(&held, 0).unwrap();
    assert_eq!(
        store.renew(&held, 1).unwrap_err().kind(),
        ClaimErrorKind::NotOwner
    );
    let cut = store.client();
    cut.set_partitioned(true);
    assert_eq!(
        cut.claim(&request).unwrap_err().kind(),
        ClaimErrorKind::Unavailable
    );
    let held = store.claim(&request).unwrap();
    store.set_corrupt("kinds", 0);
    assert_eq!(
        store.renew(&held, 2).unwrap_err().kind(),
        ClaimErrorKind::Corrupt
    );
}

/// A memory store whose next renewal is slow (the clock moves on while it waits, as a
/// request held up by a partition that then heals), and which says its failover takes
/// `failover`.
#[derive(Debug, Clone)]
struct Slow {
    inner: MemoryStore,
    clock: ManualClock,
    /// How long the next renewal takes, then none.
    next: Arc<Mutex<Duration>>,
    failover: Option<Duration>,
}

impl ClaimStore for Slow {
    fn url(&self) -> String {
        "slow:".into()
    }
    fn claim(&self, r: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        self.inner.claim(r)
    }
    fn renew(&self, c: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        let took = std::mem::take(&mut *self.next.lock().unwrap());
        self.clock.advance(took);
        self.inner.renew(c, reserved)
    }
    fn release(&self, c: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        self.inner.release(c, reserved)
    }
    fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        self.inner.list(namespace)
    }
    fn bind_layout(&self, namespace: &str, layout: &str) -> Result<(), ClaimError> {
        self.inner.bind_layout(namespace, layout)
    }
    fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
        self.inner.namespaces()
    }
    fn repair(&self, namespace: &str, node: u64, reserved: u64) -> Result<Repaired, ClaimError> {
        self.inner.repair(namespace, node, reserved)
    }
    fn lease_ttl(&self) -> Option<Duration> {
        self.inner.lease_ttl()
    }
    fn failover_bound(&self, _: Duration) -> Option<Duration> {
        self.failover
    }
}

fn slow(clock: &ManualClock, ttl: Duration, failover: Option<Duration>) -> Slow {
    Slow {
        inner: MemoryStore::with_clock(ttl, clock.clone()),
        clock: clock.clone(),
        next: Arc::default(),
        failover,
    }
}

/// A renewal that lands late (its request held up for two of the three seconds of the
/// window, then through) carried a reservation reckoned from the clock when it began, a
/// second ahead of the clock when it landed: it is followed at once by a renewal from the
/// clock now, so the fence is a whole window ahead and readiness (a third of the window)
/// does not drop again before the next renewal.
#[test]
fn a_late_renewal_is_followed_at_once_by_one_from_the_clock_now() {
    let clock = ManualClock::new(T0_NS);
    let store = slow(&clock, Duration::from_secs(10), None);
    let window = Duration::from_secs(3);
    let g = Generator::builder(Layout::snowflake())
        .clock(clock.clone())
        .build_claimed(Claims::new(store.clone()).window(window).manual_renewal())
        .unwrap();
    *store.next.lock().unwrap() = Duration::from_secs(2);
    let renewals = g.claim_status().renewals;
    g.renew_claim().unwrap();
    let status = g.claim_status();
    assert_eq!(status.fence_left, Some(window), "{status:?}");
    assert_eq!(status.renewals, renewals + 2);
    // A renewal on time is one write.
    clock.advance(Duration::from_millis(100));
    g.renew_claim().unwrap();
    assert_eq!(g.claim_status().renewals, renewals + 3);
}

/// A lease TTL too short for the store's failover (a renewal that meets a member which
/// stopped answering would reach the next one after the lease ended) is refused at build,
/// with the smallest TTL that works for these settings.
#[test]
fn a_ttl_too_short_for_the_failover_is_refused_with_the_smallest_that_works() {
    let clock = ManualClock::new(T0_NS);
    // Renewals every second (a third of the 3 s TTL); the failover takes 2 s: 3 s > 2.7 s.
    let store = slow(&clock, Duration::from_secs(3), Some(Duration::from_secs(2)));
    let built = Generator::builder(Layout::snowflake())
        .clock(clock.clone())
        .build_claimed(Claims::new(store).window(Duration::from_secs(5)));
    let e = built.map(|g| g.node()).unwrap_err();
    assert!(
        matches!(
            e,
            ClaimError::TtlTooShort { ttl, min_ttl, .. }
                if (ttl, min_ttl) == (Duration::from_secs(3), Duration::from_secs(4))
        ),
        "{e:?}"
    );
    assert_eq!(e.kind(), flakeid::claim::ClaimErrorKind::Settings);
    assert!(e.to_string().contains("at least 4s"), "{e}");
    // With room for the failover it builds.
    let store = slow(&clock, Duration::from_secs(4), Some(Duration::from_secs(2)));
    Generator::builder(Layout::snowflake())
        .clock(clock)
        .build_claimed(Claims::new(store).window(Duration::from_secs(5)))
        .unwrap();
}

/// A claim that follows earlier claims of its holder (`Claims::again_after`) takes no id
/// from a store that lost the namespace or a reservation they stored: it fails as
/// `StoreForgot`, naming what is missing and the repair, and holds nothing; with the
/// reservations there, it claims.
#[test]
fn a_claim_again_after_a_loss_refuses_a_store_that_forgot() {
    let dir = std::env::temp_dir().join(format!("flakeid-forgot-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store: Arc<dyn ClaimStore> = Arc::new(FileStore::open(&dir).unwrap());
    let claims = || {
        Claims::new(Arc::clone(&store))
            .namespace("forgot")
            .nodes(0..2)
            .manual_renewal()
    };
    let first = Generator::builder(Layout::snowflake())
        .build_claimed(claims())
        .unwrap();
    first.next_id().unwrap();
    let node = first.node();
    drop(first);
    // What a holder knows it found stored: the reservation its claim started after.
    let second = Generator::builder(Layout::snowflake())
        .build_claimed(claims())
        .unwrap();
    let stored = second.claim_status().not_before_unix_ns;
    assert!(stored > 0);
    drop(second);
    let build = |known: Vec<(u64, u64)>| {
        Generator::builder(Layout::snowflake()).build_claimed(claims().again_after(known))
    };
    // The reservation is there: the claim goes on.
    drop(build(vec![(node, stored)]).unwrap());
    // One this holder saw further than the store now has: missing.
    let e = build(vec![(node, u64::MAX)]).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, ClaimError::StoreForgot { .. }), "{e:?}");
    assert!(
        text.contains(&format!("node {node}'s reservation")),
        "{text}"
    );
    // The library names its own repair; the tool adds its command (cli's stores::remedy).
    assert!(text.contains("ClaimStore::repair"), "{text}");
    // The namespace moved away: gone, and not made again.
    std::fs::rename(dir.join("forgot"), dir.join("forgot-aside")).unwrap();
    let e = build(vec![(node, stored)]).unwrap_err();
    assert_eq!(e.kind(), flakeid::claim::ClaimErrorKind::Corrupt);
    assert!(e.to_string().contains("is gone"), "{e}");
    assert!(
        !dir.join("forgot").exists(),
        "the claim made the namespace again"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
