//! [`MemoryStore`]: claims in this process's memory, with leases that expire on the
//! store's own clock, and clients that can be cut off: several generators sharing one
//! behave like several hosts sharing a coordinator.

use core::time::Duration;
use std::collections::BTreeMap;
use std::string::String;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::vec::Vec;

use super::store::{ClaimRequest, Claimed, Repaired, Ticket, Waiter};
use super::{ClaimError, ClaimInfo, ClaimStore, NamespaceInfo, NodeState};
use crate::clock::{Clock, SystemClock};

#[derive(Debug)]
struct Entry {
    /// The live claim's token, if any.
    owner: Option<u64>,
    holder: String,
    reserved_until_ns: u64,
    /// When the owner's lease lapses unless renewed (store clock, Unix ns).
    expires_ns: u64,
    released: bool,
    /// Plays data that cannot be read ([`MemoryStore::set_corrupt`]).
    corrupt: bool,
}

#[derive(Debug, Default)]
struct Entries {
    by_id: BTreeMap<(String, u64), Entry>,
    /// Each namespace's layout record.
    layouts: BTreeMap<String, String>,
    next_token: u64,
    /// Each namespace's line of waiting claimants, first first: (ticket number, instance).
    lines: BTreeMap<String, Vec<(u64, String)>>,
    next_ticket: u64,
}

/// An in-process claim store for tests and simulations. A claim is a lease of `ttl` on
/// the store's clock: a holder that stops renewing loses it, as with etcd or ZooKeeper.
///
/// [`MemoryStore::client`] gives another handle on the same claims, which
/// [`MemoryStore::set_partitioned`] can cut off (every call then fails with
/// [`ClaimError::Unreachable`]), to play a host that is paused or partitioned away.
///
/// ```
/// use std::time::Duration;
/// use flakeid::claim::{Claims, MemoryStore};
/// use flakeid::{Generator, Layout};
/// use flakeid::clock::ManualClock;
///
/// let clock = ManualClock::from_unix_ms(1_800_000_000_000);
/// let store = MemoryStore::with_clock(Duration::from_secs(10), clock.clone());
/// let a = Generator::builder(Layout::snowflake()).clock(clock.clone())
///     .build_claimed(Claims::new(store.client()).nodes(0..2).manual_renewal())?;
/// let b = Generator::builder(Layout::snowflake()).clock(clock.clone())
///     .build_claimed(Claims::new(store.client()).nodes(0..2).manual_renewal())?;
/// assert_eq!((a.node(), b.node()), (0, 1));
/// # Ok::<(), flakeid::claim::ClaimError>(())
/// ```
#[derive(Clone)]
pub struct MemoryStore {
    entries: Arc<Mutex<Entries>>,
    ttl: Duration,
    clock: Arc<dyn Clock + Send + Sync>,
    cut: Arc<AtomicBool>,
}

impl core::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("ttl", &self.ttl)
            .field("partitioned", &self.cut.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl MemoryStore {
    /// A store whose leases last 10 s on the system clock.
    pub fn new() -> MemoryStore {
        MemoryStore::with_clock(Duration::from_secs(10), SystemClock)
    }

    /// A store whose leases last `ttl` on `clock`.
    pub fn with_clock(ttl: Duration, clock: impl Clock + Send + Sync + 'static) -> MemoryStore {
        MemoryStore {
            entries: Arc::default(),
            ttl,
            clock: Arc::new(clock),
            cut: Arc::default(),
        }
    }

    /// Another handle on the same claims, with its own partition switch: one per
    /// simulated host.
    pub fn client(&self) -> MemoryStore {
        MemoryStore {
            entries: Arc::clone(&self.entries),
            ttl: self.ttl,
            clock: Arc::clone(&self.clock),
            cut: Arc::default(),
        }
    }

    /// Marks node `node` of `namespace` as holding data that cannot be read, as a damaged
    /// file or key would: claims skip it, renewals of it fail with
    /// [`ClaimError::Corrupt`], [`ClaimStore::list`] reports it. For tests of what a fleet
    /// does with damaged state.
    pub fn set_corrupt(&self, namespace: &str, node: u64) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .by_id
            .entry((namespace.into(), node))
            .or_insert_with(Entry::vacant)
            .corrupt = true;
    }

    /// Cuts this handle off from the store (`true`) or reconnects it.
    pub fn set_partitioned(&self, cut: bool) {
        self.cut.store(cut, Ordering::SeqCst);
    }

    fn reach(&self) -> Result<std::sync::MutexGuard<'_, Entries>, ClaimError> {
        if self.cut.load(Ordering::SeqCst) {
            return Err(ClaimError::Unreachable {
                store: self.url(),
                reason: "partitioned (MemoryStore::set_partitioned)".into(),
            });
        }
        Ok(self.entries.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn ttl_ns(&self) -> u64 {
        u64::try_from(self.ttl.as_nanos()).unwrap_or(u64::MAX)
    }
}

impl Entry {
    /// An id no claim has taken yet.
    fn vacant() -> Entry {
        Entry {
            owner: None,
            holder: String::new(),
            reserved_until_ns: 0,
            expires_ns: 0,
            released: false,
            corrupt: false,
        }
    }

    fn live(&self, now: u64) -> bool {
        self.owner.is_some() && now <= self.expires_ns
    }
}

/// The claim's entry, if it is still the claimant's and its lease has not lapsed.
fn owned<'e>(
    entries: &'e mut Entries,
    claimed: &Claimed,
    now: u64,
) -> Result<&'e mut Entry, ClaimError> {
    match entries
        .by_id
        .get_mut(&(claimed.namespace.clone(), claimed.node))
    {
        Some(e) if e.corrupt => Err(corrupt(&claimed.namespace, claimed.node)),
        Some(e) if e.owner == Some(claimed.token) && e.live(now) => Ok(e),
        _ => Err(ClaimError::NotOwner {
            namespace: claimed.namespace.clone(),
            node: claimed.node,
        }),
    }
}

fn corrupt(namespace: &str, node: u64) -> ClaimError {
    ClaimError::Corrupt {
        path: format!("memory:{namespace}/{node}"),
        reason: "marked corrupt (MemoryStore::set_corrupt)".into(),
    }
}

impl ClaimStore for MemoryStore {
    /// A line per namespace in the store's memory: claimants are served in the order they
    /// joined it (a claimant leaves it when its claim ends, whichever way).
    fn join_line(&self, namespace: &str, instance: &str) -> Result<Option<Ticket>, ClaimError> {
        let mut entries = self.reach()?;
        entries.next_ticket += 1;
        let number = entries.next_ticket;
        entries
            .lines
            .entry(namespace.into())
            .or_default()
            .push((number, instance.into()));
        Ok(Some(Ticket {
            namespace: namespace.into(),
            key: std::format!("{number}"),
        }))
    }

    fn line(&self, namespace: &str) -> Result<Vec<Waiter>, ClaimError> {
        let entries = self.reach()?;
        Ok(entries.lines.get(namespace).map_or_else(Vec::new, |line| {
            line.iter()
                .map(|(number, instance)| Waiter {
                    key: std::format!("{number}"),
                    instance: instance.clone(),
                })
                .collect()
        }))
    }

    fn stay_in_line(&self, ticket: &Ticket) -> Result<(), ClaimError> {
        let entries = self.reach()?;
        let number = ticket.key.parse::<u64>().ok();
        let placed = entries
            .lines
            .get(&ticket.namespace)
            .is_some_and(|line| line.iter().any(|(n, _)| Some(*n) == number));
        if placed {
            Ok(())
        } else {
            Err(ClaimError::NotOwner {
                namespace: ticket.namespace.clone(),
                node: 0,
            })
        }
    }

    fn leave_line(&self, ticket: &Ticket) {
        // Not through `reach`: a partitioned claimant's place still goes.
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let number = ticket.key.parse::<u64>().ok();
        if let Some(line) = entries.lines.get_mut(&ticket.namespace) {
            line.retain(|(n, _)| Some(*n) != number);
        }
    }

    fn lease_ttl(&self) -> Option<Duration> {
        Some(self.ttl)
    }

    fn url(&self) -> String {
        "memory:".into()
    }

    fn claim(&self, request: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        let mut entries = self.reach()?;
        let now = self.clock.unix_ns();
        let ns = request.namespace;
        let (mut held, mut skipped) = (0, Vec::new());
        for node in request.pool.clone() {
            let key = (String::from(ns), node);
            let not_before = match entries.by_id.get(&key) {
                Some(e) if e.corrupt => {
                    skipped.push(node);
                    continue;
                }
                Some(e) if e.live(now) => {
                    held += 1;
                    continue;
                }
                Some(e) => e.reserved_until_ns,
                None => 0,
            };
            entries.next_token += 1;
            let token = entries.next_token;
            entries.by_id.insert(
                key,
                Entry {
                    owner: Some(token),
                    holder: request.instance.into(),
                    reserved_until_ns: not_before,
                    expires_ns: now.saturating_add(self.ttl_ns()),
                    released: false,
                    corrupt: false,
                },
            );
            return Ok(Claimed {
                namespace: ns.into(),
                node,
                not_before_unix_ns: not_before,
                fenced: true,
                token,
            });
        }
        Err(ClaimError::PoolFull {
            namespace: ns.into(),
            pool: request.pool.clone(),
            held,
            waited: Duration::ZERO,
            corrupt: skipped,
            wanted: 1,
        })
    }

    fn renew(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError> {
        let mut entries = self.reach()?;
        let now = self.clock.unix_ns();
        let e = owned(&mut entries, claimed, now)?;
        e.reserved_until_ns = e.reserved_until_ns.max(reserved_until_unix_ns);
        e.expires_ns = now.saturating_add(self.ttl_ns());
        Ok(())
    }

    fn release(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError> {
        let mut entries = self.reach()?;
        let e = owned(&mut entries, claimed, self.clock.unix_ns())?;
        e.reserved_until_ns = reserved_until_unix_ns;
        e.owner = None;
        e.released = true;
        Ok(())
    }

    fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        let entries = self.reach()?;
        let now = self.clock.unix_ns();
        Ok(entries
            .by_id
            .iter()
            .filter(|((ns, _), _)| ns == namespace)
            .map(|((ns, node), e)| ClaimInfo {
                node: *node,
                state: if e.corrupt {
                    NodeState::Corrupt
                } else if e.live(now) {
                    NodeState::Held
                } else if e.released {
                    NodeState::Released
                } else {
                    NodeState::Expired
                },
                holder: Some(e.holder.clone()),
                reserved_until_unix_ns: e.reserved_until_ns,
                problem: e.corrupt.then(|| corrupt(ns, *node).to_string()),
            })
            .collect())
    }

    fn bind_layout(&self, namespace: &str, layout: &str) -> Result<(), ClaimError> {
        let mut entries = self.reach()?;
        let recorded = entries
            .layouts
            .entry(namespace.into())
            .or_insert_with(|| layout.into());
        super::store::same_layout(namespace, recorded, layout)
    }

    fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
        let entries = self.reach()?;
        let mut names: Vec<&String> = entries
            .by_id
            .keys()
            .map(|(ns, _)| ns)
            .chain(entries.layouts.keys())
            .collect();
        names.sort_unstable();
        names.dedup();
        Ok(names
            .into_iter()
            .map(|ns| NamespaceInfo {
                namespace: ns.clone(),
                layout: entries.layouts.get(ns).cloned(),
                problem: None,
            })
            .collect())
    }

    fn repair(
        &self,
        namespace: &str,
        node: u64,
        reserved_until_unix_ns: u64,
    ) -> Result<Repaired, ClaimError> {
        let mut entries = self.reach()?;
        let now = self.clock.unix_ns();
        let e = entries
            .by_id
            .entry((namespace.into(), node))
            .or_insert_with(Entry::vacant);
        if !e.corrupt && e.live(now) {
            return Err(ClaimError::NodeHeld {
                namespace: namespace.into(),
                node,
            });
        }
        let previous = (!e.corrupt).then_some(e.reserved_until_ns);
        e.reserved_until_ns = previous.unwrap_or(0).max(reserved_until_unix_ns);
        e.owner = None;
        e.released = true;
        e.corrupt = false;
        e.holder = "repaired".into();
        Ok(Repaired {
            previous_unix_ns: previous,
            reserved_until_unix_ns: e.reserved_until_ns,
        })
    }
}
