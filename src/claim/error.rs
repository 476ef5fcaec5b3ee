//! [`ClaimError`]: why a claim could not be taken, renewed, released or listed, each
//! message saying what to do.

use core::fmt;
use core::ops::Range;
use core::time::Duration;
use std::string::String;
use std::vec::Vec;

use super::{MIN_RENEW_EVERY, Reason};

/// Why a claim could not be taken, renewed, released or listed. Each message says what to
/// do.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClaimError {
    /// Every id of the pool is held, still after waiting.
    PoolFull {
        /// The namespace.
        namespace: String,
        /// The pool.
        pool: Range<u64>,
        /// How many of its ids are held.
        held: u64,
        /// How long the claim waited for one to come free.
        waited: Duration,
        /// The ids skipped because their stored data cannot be read
        /// ([`ClaimError::Corrupt`]; `flakeid claims` lists them).
        corrupt: Vec<u64>,
        /// How many ids the claim needed at once (one per shard): fewer than this were
        /// free, and it held none of them while it waited.
        wanted: u64,
    },
    /// The claim is no longer this holder's: its lease expired, or another holder has the
    /// id now.
    NotOwner {
        /// The namespace.
        namespace: String,
        /// The node id.
        node: u64,
    },
    /// The store did not answer, or answered with an error.
    Unreachable {
        /// The store's URL.
        store: String,
        /// What went wrong, and the error it came from ([`source`](std::error::Error::source)).
        reason: Reason,
    },
    /// The store answered, and refused this client: its certificate, its user or
    /// password, or its permission on the store's keys.
    Refused {
        /// The store's URL (without its query).
        store: String,
        /// What was refused, and what to do; the error it came from, if any, is the
        /// [`source`](std::error::Error::source).
        reason: Reason,
    },
    /// A file of the store could not be read or written.
    Io {
        /// The file or directory.
        path: String,
        /// What went wrong; an I/O error it came from is the
        /// [`source`](std::error::Error::source).
        reason: Reason,
    },
    /// A node id's stored data (a state file, an etcd key, a znode) cannot be read. It is
    /// not read as 0 and not overwritten.
    Corrupt {
        /// The file, key or znode.
        path: String,
        /// What is wrong with it.
        reason: Reason,
    },
    /// The namespace cannot name a directory or key prefix.
    BadNamespace {
        /// The namespace given.
        namespace: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The store URL is not one this version reads.
    BadUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The pool is empty or reaches past the layout's node field.
    BadPool {
        /// The pool given.
        pool: Range<u64>,
        /// The layout's largest node id.
        max_node: u64,
    },
    /// The window is longer than [`MAX_WINDOW`](super::MAX_WINDOW).
    WindowTooLong {
        /// The window given.
        window: Duration,
        /// The limit.
        max: Duration,
    },
    /// The window is shorter than one tick of the layout.
    WindowTooShort {
        /// The window given.
        window: Duration,
        /// The layout's tick.
        unit: Duration,
    },
    /// Every free id's previous holder left a reservation further ahead of the clock than
    /// the wait bound, also after waiting [`Claims::pool_wait`](super::Claims::pool_wait).
    ClockBehind {
        /// The free id whose reservation ends first.
        node: u64,
        /// How far behind.
        behind: Duration,
        /// The wait bound (`max_wait`).
        bound: Duration,
    },
    /// A static node id outside the pool.
    NodeOutsidePool {
        /// The node id.
        node: u64,
        /// The pool.
        pool: Range<u64>,
    },
    /// The generator could not be built on the claimed id (a hook refused it, a resume
    /// point does not fit); the id was released.
    Build(crate::Error),
    /// The background renewal would come no more often than the store's lease lapses, so
    /// the lease would lapse between two renewals.
    RenewalTooRare {
        /// The renewal period ([`Claims::renew_every`](super::Claims::renew_every)).
        every: Duration,
        /// The store's lease TTL.
        ttl: Duration,
    },
    /// The renewal period is not shorter than the window: the generator would reach its
    /// fence before every renewal.
    RenewalSlowerThanWindow {
        /// The renewal period ([`Claims::renew_every`](super::Claims::renew_every)).
        every: Duration,
        /// The window.
        window: Duration,
    },
    /// The renewal period is shorter than [`MIN_RENEW_EVERY`](super::MIN_RENEW_EVERY): every renewal is a durable
    /// write.
    RenewalTooOften {
        /// The renewal period given.
        every: Duration,
    },
    /// The namespace's IDs have another layout: two layouts in one namespace can mint
    /// equal IDs from different node ids.
    LayoutMismatch {
        /// The namespace.
        namespace: String,
        /// The layout recorded for it (a [`layout_record`](super::store::layout_record)).
        recorded: String,
        /// This claim's layout.
        asked: String,
    },
    /// A store URL with `password=`: a password in a URL ends up in shell history, process
    /// lists and logs.
    PasswordInUrl {
        /// The URL, its query values hidden.
        url: String,
    },
    /// A store URL with a user (`user=`, or PostgreSQL's `ROLE@`) whose password the store
    /// needs, and no password: neither its `password-file=` nor one given apart from the
    /// URL ([`OpenOptions::password`](super::OpenOptions::password)).
    NoPassword {
        /// The URL, its query values hidden.
        url: String,
    },
    /// A claim that follows earlier claims of this holder ([`Claims::again_after`](super::Claims::again_after))
    /// found the store without what they stored: the namespace is gone, or a
    /// reservation is missing or lower. Claiming now would start from nothing and could
    /// mint earlier holders' IDs again.
    StoreForgot {
        /// The store's URL.
        store: String,
        /// The namespace.
        namespace: String,
        /// What was found: the namespace gone, or each reservation missing.
        found: String,
    },
    /// A repair of a node id that a live holder owns: nothing to repair while it renews.
    NodeHeld {
        /// The namespace.
        namespace: String,
        /// The node id.
        node: u64,
    },
    /// The store's lease TTL is too short for its request bounds: a renewal that meets a
    /// member that stopped answering would reach the next one after the lease ended.
    TtlTooShort {
        /// The TTL.
        ttl: Duration,
        /// The renewal period.
        every: Duration,
        /// How long a renewal can take to get past a member that stopped answering
        /// ([`ClaimStore::failover_bound`](super::ClaimStore::failover_bound)).
        failover: Duration,
        /// The shortest TTL that works with these settings.
        min_ttl: Duration,
    },
    /// Nothing renews the claim any more: its background renewal panicked, or the tokio
    /// runtime it ran on shut down. Minting stops at the fence for good; build a new
    /// generator.
    RenewalStopped {
        /// The node id.
        node: u64,
        /// What ended the renewal.
        reason: String,
    },
    /// The claim was called off ([`Cancel::cancel`](super::Cancel::cancel)) before it
    /// held every id it needed; whatever it had taken is released.
    Cancelled {
        /// The namespace.
        namespace: String,
    },
}

/// What to do about a [`ClaimError`] ([`ClaimError::kind`]): settings to fix before
/// building again, or what the store answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ClaimErrorKind {
    /// The claim's settings are wrong (URL, namespace, pool, window, renewal period) or
    /// the generator cannot be built on the id: fix them; retrying fails the same way.
    Settings,
    /// The store could not be reached or written (a network error, a timeout, a file
    /// system error): retry; a claim in progress retries by itself within its wait.
    Unavailable,
    /// The store is fine but has no id for this claim now (every id held, or every free
    /// one reserved too far ahead of this clock): retry later, or widen the pool.
    Busy,
    /// The claim is not this holder's any more (its lease expired, another holder took
    /// the id) or nothing renews it: take a new claim.
    NotOwner,
    /// The store refused this client (a certificate it does not trust or that does not
    /// trust it, a wrong user or password, no permission on the keys): fix the
    /// credentials or the store's grants; retrying fails the same way.
    Access,
    /// The store holds data this version cannot read: repair it (the message names the
    /// key, znode or file); claims skip that id meanwhile.
    Corrupt,
    /// The caller called the claim off ([`Cancel`](super::Cancel)): nothing is held.
    Cancelled,
}

impl ClaimErrorKind {
    /// The kind's name in snake case (`settings`, `unavailable`, `busy`, `not_owner`,
    /// `access`, `corrupt`, `cancelled`), as the Python and Node packages' `ClaimError`
    /// carries it in `kind`.
    pub fn name(self) -> &'static str {
        match self {
            ClaimErrorKind::Settings => "settings",
            ClaimErrorKind::Unavailable => "unavailable",
            ClaimErrorKind::Busy => "busy",
            ClaimErrorKind::NotOwner => "not_owner",
            ClaimErrorKind::Access => "access",
            ClaimErrorKind::Corrupt => "corrupt",
            ClaimErrorKind::Cancelled => "cancelled",
        }
    }
}

impl ClaimError {
    /// The remedy for this error: fix the settings, retry (store unavailable or busy),
    /// claim anew, or repair the store.
    pub fn kind(&self) -> ClaimErrorKind {
        match self {
            ClaimError::BadNamespace { .. }
            | ClaimError::BadUrl { .. }
            | ClaimError::BadPool { .. }
            | ClaimError::WindowTooLong { .. }
            | ClaimError::WindowTooShort { .. }
            | ClaimError::NodeOutsidePool { .. }
            | ClaimError::Build(_)
            | ClaimError::RenewalTooRare { .. }
            | ClaimError::RenewalSlowerThanWindow { .. }
            | ClaimError::RenewalTooOften { .. }
            | ClaimError::LayoutMismatch { .. }
            | ClaimError::PasswordInUrl { .. }
            | ClaimError::NoPassword { .. }
            | ClaimError::TtlTooShort { .. } => ClaimErrorKind::Settings,
            ClaimError::Unreachable { .. } | ClaimError::Io { .. } => ClaimErrorKind::Unavailable,
            ClaimError::PoolFull { .. }
            | ClaimError::ClockBehind { .. }
            | ClaimError::NodeHeld { .. } => ClaimErrorKind::Busy,
            ClaimError::NotOwner { .. } | ClaimError::RenewalStopped { .. } => {
                ClaimErrorKind::NotOwner
            }
            ClaimError::Corrupt { .. } | ClaimError::StoreForgot { .. } => ClaimErrorKind::Corrupt,
            ClaimError::Refused { .. } => ClaimErrorKind::Access,
            ClaimError::Cancelled { .. } => ClaimErrorKind::Cancelled,
        }
    }
}

impl fmt::Display for ClaimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClaimError::PoolFull {
                namespace,
                pool,
                held,
                waited,
                corrupt,
                wanted,
            } => {
                if *wanted > 1 {
                    write!(
                        f,
                        "pool full: node ids {}..{} of namespace {namespace:?} have fewer than the {wanted} free ids a claim of {wanted} shards takes together ({held} held",
                        pool.start, pool.end
                    )?;
                } else {
                    write!(
                        f,
                        "pool full: node ids {}..{} of namespace {namespace:?} are all taken ({held} held",
                        pool.start, pool.end
                    )?;
                }
                if !corrupt.is_empty() {
                    write!(
                        f,
                        ", {} with unreadable data: {corrupt:?}, which a listing shows as corrupt",
                        corrupt.len()
                    )?;
                }
                write!(
                    f,
                    "; waited {waited:?}): stop a holder, widen the pool, or use another namespace"
                )
            }
            ClaimError::NotOwner { namespace, node } => write!(
                f,
                "claim lost: node {node} of namespace {namespace:?} is no longer this holder's (its lease expired or another holder took it); start again to claim a new node id"
            ),
            ClaimError::Unreachable { store, reason } => write!(
                f,
                "claim store {store} cannot be reached: {reason}; check that it runs and the address is right"
            ),
            ClaimError::Refused { store, reason } => {
                write!(f, "claim store {store} refused this client: {reason}")
            }
            ClaimError::Io { path, reason } => write!(f, "cannot use {path}: {reason}"),
            ClaimError::Corrupt { path, reason } => write!(
                f,
                "{path} holds claim data this version cannot read ({reason}); the reservation it held is unknown, so its node id is skipped and nothing overwrites it. Repair it with ClaimStore::repair, which stores a reservation past now and past what any holder could have minted; do not remove it: the next holder would start from nothing and could mint IDs its last holder minted"
            ),
            ClaimError::BadNamespace { namespace, reason } => write!(
                f,
                "namespace {namespace:?} cannot be used: {reason}; use letters, digits, '.', '_' and '-' (at most 128)"
            ),
            ClaimError::BadUrl { url, reason } => write!(f, "claim store {url:?}: {reason}"),
            ClaimError::BadPool { pool, max_node } => write!(
                f,
                "node pool {}..{} {}: the layout's node ids are 0..={max_node}; give a non-empty range A..B with B <= {}",
                pool.start,
                pool.end,
                if pool.start >= pool.end {
                    "is empty"
                } else {
                    "does not fit the layout"
                },
                u128::from(*max_node) + 1
            ),
            ClaimError::WindowTooLong { window, max } => write!(
                f,
                "window {window:?} is longer than the limit of {max:?}: a reservation that long keeps a dead holder's id unusable for as long; give a window of seconds to minutes"
            ),
            ClaimError::WindowTooShort { window, unit } => write!(
                f,
                "window {window:?} is shorter than the layout's tick of {unit:?}: give a window of several ticks (the default is 5s)"
            ),
            ClaimError::ClockBehind {
                node,
                behind,
                bound,
            } => write!(
                f,
                "no usable node id: the clock reads {behind:?} behind the reservation node {node}'s previous holder left (the nearest of the free ids'), more than the wait bound of {bound:?}, and no other id came free while waiting: let the clock catch up (check NTP), raise max_wait or the pool wait, or widen the pool"
            ),
            ClaimError::NodeOutsidePool { node, pool } => write!(
                f,
                "static node id {node} lies outside the pool {}..{}: give a node id in the pool, or widen the pool",
                pool.start, pool.end
            ),
            ClaimError::Build(e) => fmt::Display::fmt(e, f),
            ClaimError::RenewalTooRare { every, ttl } => write!(
                f,
                "renewals every {every:?} would let the store's {ttl:?} lease lapse between them: renew more often than the lease TTL (by default a third of the shorter of the window and the TTL), or give a longer TTL"
            ),
            ClaimError::RenewalSlowerThanWindow { every, window } => write!(
                f,
                "renewals every {every:?} come no sooner than the {window:?} window runs out, so minting would stop at every fence: renew more often than the window (by default a third of it), or give a longer window"
            ),
            ClaimError::RenewalTooOften { every } => write!(
                f,
                "renewals every {every:?} are more often than the minimum period of {MIN_RENEW_EVERY:?} (each is a durable write): renew less often, or leave the period to its default"
            ),
            ClaimError::LayoutMismatch {
                namespace,
                recorded,
                asked,
            } => write!(
                f,
                "namespace {namespace:?} holds IDs of layout {}, and this claim's layout is {}: two layouts in one namespace can mint equal IDs from different node ids; use the namespace's layout, or a namespace of its own for this layout",
                named(recorded),
                named(asked)
            ),
            ClaimError::StoreForgot {
                store,
                namespace,
                found,
            } => write!(
                f,
                "{store}: {found}, though this holder claimed in namespace {namespace:?} before: a claim now would start without the reservations earlier holders stored and could mint their IDs again; restore the namespace where it was (from where it was moved, or a backup), or store a reservation past every ID minted for each of its node ids (ClaimStore::repair); claims go on once the store has them"
            ),
            ClaimError::PasswordInUrl { url } => write!(
                f,
                "claim store {url:?}: a password never goes in the URL (shell history, process lists, logs): give password-file=FILE, or the password apart from the URL"
            ),
            ClaimError::NoPassword { url } => write!(
                f,
                "claim store {url:?}: a user without a password (the URL names one, and the store asks for its password): give password-file=FILE, or the password apart from the URL"
            ),
            ClaimError::NodeHeld { namespace, node } => write!(
                f,
                "node {node} of namespace {namespace:?} is held by a live holder: there is nothing to repair while it renews; stop that holder first"
            ),
            ClaimError::TtlTooShort {
                ttl,
                every,
                failover,
                min_ttl,
            } => write!(
                f,
                "a lease TTL of {ttl:?} is too short: a renewal every {every:?} that meets a member which stopped answering reaches the next member up to {failover:?} later, after the lease has run out; give a TTL of at least {min_ttl:?}"
            ),
            ClaimError::RenewalStopped { node, reason } => write!(
                f,
                "nothing renews node {node}'s claim any more ({reason}): minting ends at its fence; build a new generator"
            ),
            ClaimError::Cancelled { namespace } => write!(
                f,
                "the claim in namespace {namespace:?} was called off before it held its node ids; nothing is held"
            ),
        }
    }
}

/// A layout record as people know it: with the preset's name when it is one.
fn named(record: &str) -> String {
    match super::store::layout_preset(record) {
        Some(name) => format!("{name} ({record})"),
        None => String::from(record),
    }
}

impl std::error::Error for ClaimError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClaimError::Build(e) => Some(e),
            ClaimError::Unreachable { reason, .. }
            | ClaimError::Refused { reason, .. }
            | ClaimError::Io { reason, .. }
            | ClaimError::Corrupt { reason, .. } => reason.cause().map(|c| c as _),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tool_words {
    use super::*;
    use std::format;
    use std::vec;

    /// The library's messages name its own API, never a flag or command of the tool
    /// (which adds its own words).
    #[test]
    fn library_messages_name_no_tool_flag() {
        let url = String::from("etcd://h:1?user=u");
        let errors = [
            ClaimError::PasswordInUrl { url: url.clone() },
            ClaimError::NoPassword { url },
            ClaimError::Corrupt {
                path: "ns/reserved/3".into(),
                reason: "garbage".into(),
            },
            ClaimError::StoreForgot {
                store: "etcd://h:1".into(),
                namespace: "ns".into(),
                found: "the namespace is gone".into(),
            },
            ClaimError::PoolFull {
                namespace: "ns".into(),
                pool: 0..2,
                held: 1,
                waited: Duration::ZERO,
                corrupt: vec![1],
                wanted: 1,
            },
        ];
        for e in errors {
            let text = format!("{e}");
            assert!(
                !text.contains("--") && !text.contains("flakeid ") && !text.contains("FLAKEID_"),
                "{text}"
            );
        }
    }
}
