//! The checks of claimants that wait: sets of ids that are never split between waiters,
//! and the line that serves waiters in the order they began waiting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flakeid::claim::store::{ClaimRequest, Claimed, Repaired, Ticket, Waiter};
use flakeid::claim::{ClaimError, ClaimInfo, ClaimStore, Claims, NamespaceInfo, NodeState};
use flakeid::{Generator, Layout, ShardedGenerator};

use crate::{Backend, T, info, request};

/// A store handle that watches one claimant: how often it asks for an id, which ids it
/// holds, and whether it ever asks again after a full pool while still holding one (it
/// would be keeping an id while it waits for the rest of its set).
#[derive(Debug)]
struct Watched {
    store: Arc<dyn ClaimStore>,
    watch: Arc<Watch>,
}

/// What [`Watched`] saw.
#[derive(Debug, Default)]
struct Watch {
    asked: AtomicU64,
    state: Mutex<WatchState>,
}

#[derive(Debug, Default)]
struct WatchState {
    held: Vec<u64>,
    after_full: bool,
    kept_while_waiting: Vec<Vec<u64>>,
}

impl Watch {
    fn asked(&self) -> u64 {
        self.asked.load(Ordering::SeqCst)
    }
    fn state(&self) -> std::sync::MutexGuard<'_, WatchState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ClaimStore for Watched {
    fn url(&self) -> String {
        self.store.url()
    }
    fn claim(&self, r: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        {
            let mut state = self.watch.state();
            if state.after_full && !state.held.is_empty() {
                let held = state.held.clone();
                state.kept_while_waiting.push(held);
            }
        }
        self.watch.asked.fetch_add(1, Ordering::SeqCst);
        let claimed = self.store.claim(r);
        let mut state = self.watch.state();
        state.after_full = matches!(claimed, Err(ClaimError::PoolFull { .. }));
        if let Ok(c) = &claimed {
            state.held.push(c.node);
        }
        claimed
    }
    fn renew(&self, c: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        self.store.renew(c, reserved)
    }
    fn release(&self, c: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        self.watch.state().held.retain(|&n| n != c.node);
        self.store.release(c, reserved)
    }
    fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        self.store.list(namespace)
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
    fn lease_ttl(&self) -> Option<Duration> {
        self.store.lease_ttl()
    }
    fn failover_bound(&self, ttl: Duration) -> Option<Duration> {
        self.store.failover_bound(ttl)
    }
}

/// Two, then three, claimants of 2 shards each wait on a full pool of 4; one holder of 2
/// ids lets go of one, then of the other. While one id is free, no claimant keeps it: each
/// that finds the pool full gives back what it took before it asks again, and the free id
/// is seen free. Once both are free, exactly one claimant takes both; the others hold
/// nothing while they wait (the pool shows only the holders), and end with a full pool
/// that names the 2 ids they needed. (Taken one by one, the first id would be kept by one
/// claimant and the second, as often as not, by another: both would wait for ever.)
pub fn waiting_sets_never_split_a_pool(backend: &dyn Backend, ns: &str) {
    // Long enough that the claimants are still waiting when the second id comes free,
    // however slow the machine; the losers end when it has passed.
    let pool_wait = Duration::from_secs(8);
    for claimants in [2usize, 3] {
        let ns = format!("{ns}-{claimants}");
        let (keep, go) = (backend.handle(), backend.handle());
        let kept: Vec<Claimed> = (0..2)
            .map(|_| keep.claim(&request(&ns, 0..4)).unwrap())
            .collect();
        let freed: Vec<Claimed> = (0..2)
            .map(|_| go.claim(&request(&ns, 0..4)).unwrap())
            .collect();
        let watches: Vec<Arc<Watch>> = (0..claimants).map(|_| Arc::default()).collect();
        let threads: Vec<_> = watches
            .iter()
            .enumerate()
            .map(|(i, watch)| {
                let store: Arc<dyn ClaimStore> = Arc::new(Watched {
                    store: backend.handle(),
                    watch: Arc::clone(watch),
                });
                let ns = ns.clone();
                std::thread::spawn(move || {
                    let claims = Claims::new(store)
                        .namespace(ns)
                        .nodes(0..4)
                        .instance(format!("claimant-{i}"))
                        .window(Duration::from_secs(2))
                        .pool_wait(pool_wait)
                        .manual_renewal();
                    ShardedGenerator::builder(Layout::snowflake())
                        .shards(2)
                        .build_claimed(claims)
                })
            })
            .collect();
        let started = Instant::now();
        // Every claimant has found the pool full at least once.
        let deadline = Instant::now() + Duration::from_secs(20);
        while watches.iter().any(|w| w.asked() == 0) {
            assert!(Instant::now() < deadline, "the claimants never asked");
            std::thread::sleep(Duration::from_millis(5));
        }
        let claimants_holding = |listed: &[ClaimInfo]| -> Vec<(u64, String)> {
            listed
                .iter()
                .filter(|i| i.state == NodeState::Held)
                .filter_map(|i| {
                    let h = i.holder.clone()?;
                    h.starts_with("claimant-").then_some((i.node, h))
                })
                .collect()
        };
        // Released with nothing reserved (the claimants' clocks are the real one, before
        // T), one id first: each claimant tries again, takes the free id and finds no
        // second, so gives it back before it asks again.
        let before: Vec<u64> = watches.iter().map(|w| w.asked()).collect();
        go.release(&freed[0], 0).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while watches.iter().zip(&before).any(|(w, b)| w.asked() < b + 4) {
            assert!(Instant::now() < deadline, "the claimants stopped asking");
            std::thread::sleep(Duration::from_millis(5));
        }
        for (i, w) in watches.iter().enumerate() {
            let state = w.state();
            assert!(
                state.kept_while_waiting.is_empty(),
                "claimant-{i} asked again after a full pool while it held {:?}",
                state.kept_while_waiting
            );
        }
        // Seen from outside: between attempts the free id is free.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let held = claimants_holding(&keep.list(&ns).unwrap());
            if held.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "a waiting claimant keeps an id: {held:?}"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(
            started.elapsed() < pool_wait,
            "the machine was too slow for this check: the claimants' wait ran out"
        );
        go.release(&freed[1], 0).unwrap();
        // Soon one claimant holds both freed ids.
        let deadline = started + pool_wait;
        let winner = loop {
            let held = claimants_holding(&keep.list(&ns).unwrap());
            if held.len() == 2 && held[0].1 == held[1].1 {
                break held[0].1.clone();
            }
            assert!(
                Instant::now() < deadline,
                "no claimant took both ids before their wait ran out: {held:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        // Then, while the others wait, they hold nothing: only the winner's two ids and
        // the two kept are held.
        for _ in 0..10 {
            let listed = keep.list(&ns).unwrap();
            let held: Vec<_> = claimants_holding(&listed);
            assert!(
                held.len() == 2 && held.iter().all(|(_, h)| *h == winner),
                "a waiting claimant holds an id: {listed:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let mut won = 0;
        for (i, built) in results.into_iter().enumerate() {
            match built {
                Ok(generator) => {
                    won += 1;
                    assert_eq!(format!("claimant-{i}"), winner);
                    let mut nodes: Vec<u64> = generator.shards().iter().map(|g| g.node()).collect();
                    nodes.sort_unstable();
                    assert_eq!(nodes, [2, 3]);
                }
                Err(ClaimError::PoolFull { wanted, .. }) => assert_eq!(wanted, 2),
                Err(e) => panic!("claimant {i}: {e}"),
            }
        }
        assert_eq!(won, 1, "{claimants} claimants");
        for (i, w) in watches.iter().enumerate() {
            let state = w.state();
            assert!(
                state.kept_while_waiting.is_empty(),
                "claimant-{i} asked again after a full pool while it held {:?}",
                state.kept_while_waiting
            );
        }
        for c in &kept {
            keep.release(c, T).unwrap();
        }
    }
}

/// A store handle that counts its claimant's looks at the pool: its claims and its looks
/// at the line, whichever it makes while it waits.
#[derive(Debug)]
struct Looks {
    store: Arc<dyn ClaimStore>,
    looks: Arc<AtomicU64>,
}

impl ClaimStore for Looks {
    fn url(&self) -> String {
        self.store.url()
    }
    fn claim(&self, r: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        let claimed = self.store.claim(r);
        self.looks.fetch_add(1, Ordering::SeqCst);
        claimed
    }
    fn renew(&self, c: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        self.store.renew(c, reserved)
    }
    fn release(&self, c: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        self.store.release(c, reserved)
    }
    fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        self.store.list(namespace)
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
    fn lease_ttl(&self) -> Option<Duration> {
        self.store.lease_ttl()
    }
    fn failover_bound(&self, ttl: Duration) -> Option<Duration> {
        self.store.failover_bound(ttl)
    }
    fn join_line(&self, namespace: &str, instance: &str) -> Result<Option<Ticket>, ClaimError> {
        self.store.join_line(namespace, instance)
    }
    fn line(&self, namespace: &str) -> Result<Vec<Waiter>, ClaimError> {
        let line = self.store.line(namespace);
        self.looks.fetch_add(1, Ordering::SeqCst);
        line
    }
    fn stay_in_line(&self, ticket: &Ticket) -> Result<(), ClaimError> {
        self.store.stay_in_line(ticket)
    }
    fn leave_line(&self, ticket: &Ticket) {
        self.store.leave_line(ticket)
    }
}

/// Where the store keeps a line of waiters ([`ClaimStore::join_line`]; skipped, saying so,
/// where it keeps none): three claimants that begin waiting one after the other on a full
/// pool of one id, each started once the one before is in the line, take the id in that
/// order as each before them lets it go; the line shows them first first, with their
/// instance names, and is empty at the end. Each id is let go just after the claimant
/// whose turn it is looked and found it taken, so the others look before it does: a
/// store without order would give it to one of them.
pub fn waiters_are_served_in_the_order_they_began_waiting(backend: &dyn Backend, ns: &str) {
    let probe = backend.handle();
    match probe.join_line(ns, "probe") {
        Ok(Some(ticket)) => probe.leave_line(&ticket),
        Ok(None) => {
            eprintln!(
                "{ns}: {} keeps no line of waiters: order not checked",
                probe.url()
            );
            return;
        }
        Err(e) => panic!("join_line: {e}"),
    }
    let keep = backend.handle();
    let kept = keep.claim(&request(ns, 0..1)).unwrap();
    let waiting = |store: &dyn ClaimStore| -> Vec<String> {
        store
            .line(ns)
            .unwrap()
            .into_iter()
            .map(|w| w.instance)
            .collect()
    };
    let mut threads = Vec::new();
    let looks: Vec<Arc<AtomicU64>> = (0..3).map(|_| Arc::default()).collect();
    // Lets the id go once waiter `i` looked again.
    let after_a_look_of = |i: usize, let_go: &mut dyn FnMut()| {
        let before = looks[i].load(Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(20);
        while looks[i].load(Ordering::SeqCst) == before {
            assert!(Instant::now() < deadline, "waiter-{i} stopped looking");
            std::thread::yield_now();
        }
        let_go();
    };
    for (i, looked) in looks.iter().enumerate() {
        let store: Arc<dyn ClaimStore> = Arc::new(Looks {
            store: backend.handle(),
            looks: Arc::clone(looked),
        });
        let ns = String::from(ns);
        threads.push(std::thread::spawn(move || {
            let claims = Claims::new(store)
                .namespace(ns)
                .nodes(0..1)
                .instance(format!("waiter-{i}"))
                .window(Duration::from_secs(2))
                .pool_wait(Duration::from_secs(20))
                .manual_renewal();
            Generator::builder(Layout::snowflake()).build_claimed(claims)
        }));
        let deadline = Instant::now() + Duration::from_secs(20);
        while waiting(&*keep).len() < i + 1 {
            assert!(
                Instant::now() < deadline,
                "waiter-{i} never joined the line: {:?}",
                waiting(&*keep)
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    assert_eq!(waiting(&*keep), ["waiter-0", "waiter-1", "waiter-2"]);
    // Released with nothing reserved (the waiters' clocks are the real one, before T).
    after_a_look_of(0, &mut || keep.release(&kept, 0).unwrap());
    let mut held: Option<flakeid::claim::ClaimedGenerator> = None;
    for (i, thread) in threads.into_iter().enumerate() {
        let generator = thread
            .join()
            .unwrap()
            .unwrap_or_else(|e| panic!("waiter-{i}: {e}"));
        assert_eq!(generator.node(), 0);
        let holder = info(&*keep, ns, 0).holder;
        assert_eq!(holder.as_deref(), Some(format!("waiter-{i}").as_str()));
        let rest: Vec<String> = (i + 1..3).map(|j| format!("waiter-{j}")).collect();
        assert_eq!(waiting(&*keep), rest, "after waiter-{i} took the id");
        held = Some(generator);
        if i < 2 {
            after_a_look_of(i + 1, &mut || drop(held.take()));
        }
    }
    assert!(waiting(&*keep).is_empty());
    drop(held);
}
