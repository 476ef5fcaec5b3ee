//! A store written as an outside author would write one, against the published surface only
//! (`flakeid::claim::store`): a text key-value table behind a mutex, holders with no lease
//! (a claim lives until released or taken away). It passes the conformance kit by one call;
//! a variant that lowers a reservation on renewal does not.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use flakeid::claim::store::{
    ClaimRequest, Claimed, Listing, Repaired, parse_reserved, same_layout,
};
use flakeid::claim::{ClaimError, ClaimInfo, ClaimStore, NamespaceInfo};
use flakeid_testkit::Backend;

/// What the table holds: `nodes/N` (the holder's token and name) and `reserved/N` (a
/// reservation's text), per namespace; and each namespace's layout.
#[derive(Debug, Default)]
struct Table {
    holders: BTreeMap<(String, u64), (u64, String)>,
    reserved: BTreeMap<(String, u64), Vec<u8>>,
    layouts: BTreeMap<String, String>,
    tokens: u64,
}

#[derive(Debug, Clone, Default)]
struct KvStore {
    table: Arc<Mutex<Table>>,
    /// The known-wrong variant: a renewal stores what it is given, even if lower.
    lowers: Arc<AtomicBool>,
}

fn key(ns: &str, node: u64) -> (String, u64) {
    (ns.to_string(), node)
}

fn text(reserved: u64, released: bool, holder: &str) -> Vec<u8> {
    let state = if released { "released" } else { "held" };
    format!("{reserved} {state} {holder}").into_bytes()
}

impl KvStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Table {
    fn stored(&self, ns: &str, node: u64) -> Result<Option<u64>, ClaimError> {
        match self.reserved.get(&key(ns, node)) {
            None => Ok(None),
            Some(v) => parse_reserved(v, &format!("kv:{ns}/reserved/{node}")).map(|r| Some(r.0)),
        }
    }

    fn owner(&self, c: &Claimed) -> Result<String, ClaimError> {
        match self.holders.get(&key(&c.namespace, c.node)) {
            Some((token, name)) if *token == c.token => Ok(name.clone()),
            _ => Err(ClaimError::NotOwner {
                namespace: c.namespace.clone(),
                node: c.node,
            }),
        }
    }
}

impl ClaimStore for KvStore {
    fn url(&self) -> String {
        "kv:".into()
    }

    fn claim(&self, r: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        let mut t = self.lock();
        let (mut held, mut corrupt) = (0, Vec::new());
        for node in r.pool.clone() {
            if t.holders.contains_key(&key(r.namespace, node)) {
                held += 1;
                continue;
            }
            let Ok(stored) = t.stored(r.namespace, node) else {
                corrupt.push(node);
                continue;
            };
            t.tokens += 1;
            let token = t.tokens;
            let not_before = stored.unwrap_or(0);
            t.holders
                .insert(key(r.namespace, node), (token, r.instance.into()));
            t.reserved
                .insert(key(r.namespace, node), text(not_before, false, r.instance));
            return Ok(Claimed {
                namespace: r.namespace.into(),
                node,
                not_before_unix_ns: not_before,
                fenced: true,
                token,
            });
        }
        Err(ClaimError::PoolFull {
            namespace: r.namespace.into(),
            pool: r.pool.clone(),
            held,
            waited: Default::default(),
            corrupt,
            wanted: 1,
        })
    }

    fn renew(&self, c: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        let mut t = self.lock();
        let name = t.owner(c)?;
        let stored = t.stored(&c.namespace, c.node)?.unwrap_or(0);
        let next = if self.lowers.load(Ordering::Relaxed) {
            reserved
        } else {
            stored.max(reserved)
        };
        t.reserved
            .insert(key(&c.namespace, c.node), text(next, false, &name));
        Ok(())
    }

    fn release(&self, c: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        let mut t = self.lock();
        let Ok(name) = t.owner(c) else {
            // No longer this holder's: its final reservation only where none is stored.
            t.reserved
                .entry(key(&c.namespace, c.node))
                .or_insert_with(|| text(reserved, true, "lost"));
            return Err(ClaimError::NotOwner {
                namespace: c.namespace.clone(),
                node: c.node,
            });
        };
        t.stored(&c.namespace, c.node)?;
        t.reserved
            .insert(key(&c.namespace, c.node), text(reserved, true, &name));
        t.holders.remove(&key(&c.namespace, c.node));
        Ok(())
    }

    fn list(&self, ns: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        let t = self.lock();
        let mut by_node: BTreeMap<u64, Listing> = BTreeMap::new();
        for ((n, node), value) in &t.reserved {
            if n == ns {
                by_node
                    .entry(*node)
                    .or_insert_with(|| Listing::new(*node))
                    .reserved(value, &format!("kv:{ns}/reserved/{node}"));
            }
        }
        for ((n, node), (_, name)) in &t.holders {
            if n == ns {
                by_node
                    .entry(*node)
                    .or_insert_with(|| Listing::new(*node))
                    .held_by(name.as_bytes());
            }
        }
        Ok(by_node.into_values().map(|l| l.0).collect())
    }

    fn bind_layout(&self, ns: &str, layout: &str) -> Result<(), ClaimError> {
        let mut t = self.lock();
        let recorded = t.layouts.entry(ns.into()).or_insert_with(|| layout.into());
        same_layout(ns, recorded, layout)
    }

    fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
        let t = self.lock();
        let mut names: Vec<&String> = t
            .reserved
            .keys()
            .map(|(n, _)| n)
            .chain(t.layouts.keys())
            .collect();
        names.sort_unstable();
        names.dedup();
        Ok(names
            .into_iter()
            .map(|n| NamespaceInfo {
                namespace: n.clone(),
                layout: t.layouts.get(n).cloned(),
                problem: None,
            })
            .collect())
    }

    fn repair(&self, ns: &str, node: u64, reserved: u64) -> Result<Repaired, ClaimError> {
        let mut t = self.lock();
        if t.holders.contains_key(&key(ns, node)) {
            return Err(ClaimError::NodeHeld {
                namespace: ns.into(),
                node,
            });
        }
        let previous = t.stored(ns, node).ok().flatten();
        let now = previous.unwrap_or(0).max(reserved);
        t.reserved
            .insert(key(ns, node), text(now, true, "repaired"));
        Ok(Repaired {
            previous_unix_ns: previous,
            reserved_until_unix_ns: now,
        })
    }
}

struct Kv(KvStore);

impl Backend for Kv {
    fn handle(&self) -> Arc<dyn ClaimStore> {
        Arc::new(self.0.clone())
    }
    fn lose(&self, _: &Arc<dyn ClaimStore>, c: &Claimed) {
        self.0.lock().holders.remove(&key(&c.namespace, c.node));
    }
    fn corrupt(&self, ns: &str, node: u64) {
        self.0
            .lock()
            .reserved
            .insert(key(ns, node), b"12x4 held nobody".to_vec());
    }
    fn raw(&self, ns: &str, node: u64) -> Option<Vec<u8>> {
        self.0.lock().reserved.get(&key(ns, node)).cloned()
    }
    fn remove_reservation(&self, ns: &str, node: u64) -> bool {
        self.0.lock().reserved.remove(&key(ns, node)).is_some()
    }
}

/// An outside store that keeps the contract passes the whole kit.
#[test]
fn an_outside_store_passes_the_kit() {
    flakeid_testkit::run_all(&Kv(KvStore::default()), "kv");
}

/// The kit is not a formality: the same store with renewals that store what they are given
/// (a reservation can go down) fails it, at the check that says so.
#[test]
fn a_store_whose_renewals_lower_the_reservation_fails_the_kit() {
    let store = KvStore::default();
    store.lowers.store(true, Ordering::Relaxed);
    let failed = std::panic::catch_unwind(|| flakeid_testkit::run_all(&Kv(store), "kv-lowers"));
    let payload = failed.expect_err("the kit passed a store that lowers reservations");
    // Failed by the check that guards this, not by any panic on the way.
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    assert!(
        message.contains("a late renewal lowered the stored reservation"),
        "the kit failed for another reason: {message}"
    );
}
