//! Fleet-safe node ids: a generator **claims** its node id from a store and mints only
//! inside a **reserved window** of time that the store has accepted.
//!
//! Every generator of this crate is unique for one node id; in a fleet, duplicates come
//! from two processes with one node id. A claim closes that gap:
//!
//! - A claim on node id N gives its holder the ticks `[not_before, reserved_until)`.
//!   `not_before` is the last reservation *anyone* stored for N; the holder extends
//!   `reserved_until` ahead of its clock (now + window) by a write that succeeds only while
//!   it still owns N, and only then mints in it.
//! - The generator's **fence** lets it mint a tick only below `reserved_until`. It is read
//!   when the tick changes, never on the same-tick fast path. At the fence the generator
//!   waits for a renewal (bounded by `max_wait`), then fails closed with
//!   [`MintError::ReservationExpired`](crate::MintError::ReservationExpired), or with
//!   [`MintError::ClaimLost`](crate::MintError::ClaimLost) once the store said the id is
//!   someone else's; it recovers by itself when a renewal lands.
//!
//! So two holders of one node id never mint the same tick, whatever happens in between: a
//! `kill -9`, a pause longer than the lease, clocks that disagree between hosts, a clock set
//! back across a restart. What a holder that comes back late can do is mint up to its own
//! fence, which the next holder starts after.
//!
//! ```
//! use std::time::Duration;
//! use flakeid::claim::{Claims, FileStore};
//! use flakeid::{Generator, Layout};
//!
//! let dir = std::env::temp_dir().join(format!("flakeid-doc-{}", std::process::id()));
//! let claims = Claims::new(FileStore::open(&dir)?)
//!     .namespace("orders")
//!     .nodes(0..32)
//!     .window(Duration::from_secs(5));
//! let generator = Generator::builder(Layout::snowflake()).build_claimed(claims)?;
//! let id = generator.next_id()?;
//! let status = generator.claim_status().expect("claimed");
//! assert_eq!(status.node, generator.node());
//! println!("{id} on node {}, reserved until {:?}", status.node, status.reserved_until_unix_ns);
//! drop(generator); // releases node 0, with the reservation cut to what was minted
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The stores: [`FileStore`] (`file:DIR`, one host), `EtcdStore` (`etcd://`, feature
//! `etcd`: a fleet), `ZooKeeperStore` (`zookeeper://`, feature `zookeeper`), [`MemoryStore`] (`memory:`, one process: tests and simulations),
//! [`StaticNode`] (`static:N`, `static:pod`: the orchestrator guarantees uniqueness, no
//! fence). [`open`] reads a store's URL; the
//! [`ClaimStore`] trait is what a Redis, SQL or Consul store implements.

#[cfg(feature = "etcd")]
mod etcd;
mod fence;
mod file;
mod holder;
mod memory;
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
mod remote;
mod static_node;
#[cfg(feature = "zookeeper")]
mod zookeeper;

use core::fmt;
use core::ops::Range;
use core::time::Duration;
use std::string::String;
use std::sync::Arc;
use std::vec::Vec;

#[cfg(feature = "etcd")]
pub use etcd::EtcdStore;
pub use fence::{ClaimState, Fence};
pub use file::FileStore;
pub use holder::ClaimStatus;
pub(crate) use holder::Holder;
pub use memory::MemoryStore;
pub use static_node::StaticNode;
#[cfg(feature = "zookeeper")]
pub use zookeeper::ZooKeeperStore;

/// The namespace a claim lives in when none is given.
pub const DEFAULT_NAMESPACE: &str = "default";
/// The default reserved window: how far ahead of the clock a holder reserves.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(5);
/// What the default wait for a free id adds to the store's lease TTL and the window (see
/// [`Claims::pool_wait`]).
pub const DEFAULT_POOL_WAIT: Duration = Duration::from_secs(1);
/// The longest window a claim takes: a reservation is a promise that nobody mints on the
/// id until it ends, so a longer one only makes a dead holder's id unusable for longer.
pub const MAX_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);
/// The shortest renewal period ([`Claims::renew_every`]): every renewal is a durable write.
pub const MIN_RENEW_EVERY: Duration = Duration::from_millis(10);

/// What a store needs to take a node id: where, from which ids, for whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRequest<'a> {
    /// The namespace (checked by [`check_namespace`] before the store sees it).
    pub namespace: &'a str,
    /// The ids to take the lowest free one of.
    pub pool: Range<u64>,
    /// Who asks, as [`ClaimInfo::holder`] will show it.
    pub instance: &'a str,
}

/// A node id a store handed out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    /// The namespace.
    pub namespace: String,
    /// The node id.
    pub node: u64,
    /// The last reservation stored for this id by anyone (Unix ns; 0 if none): the holder
    /// mints nothing before it.
    pub not_before_unix_ns: u64,
    /// Whether the claim has a reserved window to renew and a fence. [`StaticNode`]'s do
    /// not: the orchestrator guarantees uniqueness.
    pub fenced: bool,
    /// The store's handle for this claim (a lease id, a session, an open file), opaque to
    /// the generator.
    pub token: u64,
}

/// A node id's entry in a store, as [`ClaimStore::list`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimInfo {
    /// The node id.
    pub node: u64,
    /// Whether it is held now.
    pub state: NodeState,
    /// The instance that holds it (or last held it).
    pub holder: Option<String>,
    /// The last reservation stored (Unix ns): the next holder starts there.
    pub reserved_until_unix_ns: u64,
    /// Why the entry is [`NodeState::Corrupt`]: what is wrong and where.
    pub problem: Option<String>,
}

/// Whether a node id is held, as a store sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NodeState {
    /// A live holder owns it.
    Held,
    /// Its holder went away without releasing it (killed, or its lease expired): free to
    /// take, after its reservation.
    Expired,
    /// Its holder released it: free to take, after its reservation.
    Released,
    /// Its stored data cannot be read ([`ClaimInfo::problem`] says why): claims skip it,
    /// and nothing overwrites it, until an operator repairs or removes it.
    Corrupt,
}

impl NodeState {
    /// The state's name in `flakeid claims`.
    pub const fn name(self) -> &'static str {
        match self {
            NodeState::Held => "held",
            NodeState::Expired => "expired",
            NodeState::Released => "released",
            NodeState::Corrupt => "corrupt",
        }
    }
}

/// Durable storage of claims: what the claim model needs from a coordinator.
///
/// The contract, which the fence's guarantee rests on (`tests/common/conformance.rs` checks
/// it against every store of this crate, the real etcd and ZooKeeper included):
/// - [`claim`](ClaimStore::claim) takes the lowest id of the pool that no live holder
///   owns and whose data is readable, and returns the last reservation stored for it by
///   anyone. An id whose data cannot be read is skipped, never overwritten. With none
///   free it returns [`ClaimError::PoolFull`] at once (the caller waits and retries),
///   naming the unreadable ids.
/// - [`renew`](ClaimStore::renew) stores a new reservation durably **only while the claim
///   is still this holder's**, and returns [`ClaimError::NotOwner`] otherwise. It returns
///   `Ok` only once the write is durable (fsynced, or acknowledged by a quorum). The
///   ownership check and the write are one atomic step: no claim of the id by another
///   holder can come between them.
/// - Stored reservations never go backwards except through `release`, whose caller
///   guarantees it minted nothing at or past the value it gives: a renewal stores the
///   larger of what is stored and what it was given, also when renewals overlap or a
///   late write arrives after a newer one.
/// - [`release`](ClaimStore::release) stores the final reservation and frees the id.
/// - Data that cannot be read is [`ClaimError::Corrupt`], naming the file or key; it is
///   never read as 0 and never overwritten.
pub trait ClaimStore: Send + Sync + fmt::Debug {
    /// The store's URL, for messages (`file:/var/lib/flakeid`).
    fn url(&self) -> String;
    /// Takes the lowest free id of `request.pool`.
    fn claim(&self, request: &ClaimRequest<'_>) -> Result<Claimed, ClaimError>;
    /// Stores `reserved_until_unix_ns` for the claim if it is still this holder's.
    fn renew(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError>;
    /// Stores the final reservation and frees the id.
    fn release(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError>;
    /// Every node id of `namespace` the store knows, in id order.
    fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError>;

    /// How long a claim lives without a renewal, for a store whose claims are leases
    /// (etcd, ZooKeeper, memory); `None` for one whose claims live as long as the holder
    /// (file, static). A background renewal must come at least twice per lease: a claim
    /// whose renewal period is longer than half of it is refused.
    fn lease_ttl(&self) -> Option<Duration> {
        None
    }
}

/// How a generator claims its node id: the store, the namespace, the pool, the window.
/// Give it to [`GeneratorBuilder::build_claimed`](crate::GeneratorBuilder::build_claimed)
/// or [`ShardedBuilder::build_claimed`](crate::ShardedBuilder::build_claimed).
#[derive(Clone)]
pub struct Claims {
    pub(crate) store: Arc<dyn ClaimStore>,
    pub(crate) namespace: String,
    pub(crate) pool: Option<Range<u64>>,
    pub(crate) window: Duration,
    pub(crate) instance: Option<String>,
    pub(crate) pool_wait: Option<Duration>,
    pub(crate) renew_every: Option<Duration>,
    pub(crate) background: bool,
    #[cfg(feature = "tokio")]
    pub(crate) runtime: Option<tokio::runtime::Handle>,
}

impl fmt::Debug for Claims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Claims")
            .field("store", &self.store.url())
            .field("namespace", &self.namespace)
            .field("pool", &self.pool)
            .field("window", &self.window)
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

impl Claims {
    /// Claims from `store`, in [`DEFAULT_NAMESPACE`], from the layout's whole node field,
    /// with a [`DEFAULT_WINDOW`] renewed in a background thread every third of it.
    pub fn new(store: impl ClaimStore + 'static) -> Claims {
        Claims::with_store(Arc::new(store))
    }

    /// [`Claims::new`] with a store already shared.
    pub fn with_store(store: Arc<dyn ClaimStore>) -> Claims {
        Claims {
            store,
            namespace: DEFAULT_NAMESPACE.into(),
            pool: None,
            window: DEFAULT_WINDOW,
            instance: None,
            pool_wait: None,
            renew_every: None,
            background: true,
            #[cfg(feature = "tokio")]
            runtime: None,
        }
    }

    /// [`Claims::new`] with the store a URL names (see [`open`]).
    pub fn open(url: &str) -> Result<Claims, ClaimError> {
        Ok(Claims::with_store(open(url)?))
    }

    /// [`Claims::open`] with the options of a network store (see [`open_with`]).
    pub fn open_with(url: &str, options: &OpenOptions) -> Result<Claims, ClaimError> {
        Ok(Claims::with_store(open_with(url, options)?))
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn ClaimStore> {
        &self.store
    }

    /// The namespace: ids in different namespaces are independent (one per ID space:
    /// a service, a table). Letters, digits, `.`, `_` and `-`; checked at build.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// The pool of node ids to take the lowest free one of (default: the layout's whole
    /// node field). Checked against the layout at build.
    pub fn nodes(mut self, pool: Range<u64>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// How far ahead of the clock the holder reserves (default [`DEFAULT_WINDOW`]). Longer
    /// means fewer store writes (three per window) and a longer wait for the next holder of
    /// a dead holder's id; at least one tick of the layout.
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// The holder's name in [`ClaimStore::list`] (default `host:pid`).
    pub fn instance(mut self, instance: impl Into<String>) -> Self {
        self.instance = Some(instance.into());
        self
    }

    /// How long to wait for a usable id: while the pool is full, while the store cannot
    /// be reached, and while every free id's reservation lies further ahead of the clock
    /// than `max_wait`. Then [`ClaimError::PoolFull`], [`ClaimError::Unreachable`] or
    /// [`ClaimError::ClockBehind`]. The default covers a holder that died without
    /// releasing its id: the store's lease TTL (none for files) plus the window plus
    /// [`DEFAULT_POOL_WAIT`], so a supervisor's restart takes the dead holder's id.
    pub fn pool_wait(mut self, bound: Duration) -> Self {
        self.pool_wait = Some(bound);
        self
    }

    /// How often the background renewal runs (default a third of the shorter of the
    /// window and the store's lease TTL). It must be at least [`MIN_RENEW_EVERY`] and
    /// shorter than both the window and the TTL, else the claim is refused at build.
    pub fn renew_every(mut self, every: Duration) -> Self {
        self.renew_every = Some(every);
        self
    }

    /// Renews in a task on this tokio runtime (feature `tokio`) instead of a thread of its
    /// own: the store calls run on the runtime's blocking pool.
    #[cfg(feature = "tokio")]
    pub fn renew_on(mut self, runtime: tokio::runtime::Handle) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// No background renewal: the caller renews with
    /// [`Generator::renew_claim`](crate::Generator::renew_claim) (deterministic tests,
    /// simulations, a runtime of the caller's own).
    pub fn manual_renewal(mut self) -> Self {
        self.background = false;
        self
    }
}

/// The store a URL names:
///
/// | URL | store |
/// |---|---|
/// | `file:DIR` (or `file://DIR`) | [`FileStore`] in `DIR`: one host, OS locks, fsynced reservations |
/// | `memory:` | a new [`MemoryStore`]: this process only, leases of [`OpenOptions::ttl`] |
/// | `static:N` | [`StaticNode`]: node id N, no fence |
/// | `static:pod` or `static:pod+K` | [`StaticNode::from_pod_name`]: the ordinal of a StatefulSet pod (`$POD_NAME`, else `$HOSTNAME`, else the host name), plus K |
///
/// | `etcd://HOST:PORT[,HOST:PORT...]` | [`EtcdStore`] (feature `etcd`): leases of [`OpenOptions::ttl`] |
///
/// | `zookeeper://HOST:PORT[,HOST:PORT...]` | [`ZooKeeperStore`] (feature `zookeeper`): sessions of [`OpenOptions::ttl`] |
///
/// In a build without the `etcd` or `zookeeper` feature, its URL is refused with a message
/// that says which feature to build with.
pub fn open(url: &str) -> Result<Arc<dyn ClaimStore>, ClaimError> {
    open_with(url, &OpenOptions::default())
}

/// How [`open_with`] opens a network store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenOptions {
    /// A claim's lease TTL on a coordinator (default 10 s): a holder that stops renewing
    /// loses its id this long after its last renewal.
    pub ttl: Duration,
    /// The bound on connecting and on each request (default 5 s).
    pub timeout: Duration,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            ttl: Duration::from_secs(10),
            timeout: Duration::from_secs(5),
        }
    }
}

impl OpenOptions {
    /// The lease TTL.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The bound on connecting and on each request.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// [`open`] with the TTL and timeout of a network store.
pub fn open_with(url: &str, options: &OpenOptions) -> Result<Arc<dyn ClaimStore>, ClaimError> {
    let bad = |reason: &str| ClaimError::BadUrl {
        url: url.into(),
        reason: reason.into(),
    };
    let (scheme, rest) = url
        .split_once(':')
        .ok_or_else(|| bad("no scheme: give file:DIR, memory:, static:N or static:pod"))?;
    match scheme {
        "file" => {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return Err(bad("file: needs a directory, as in file:/var/lib/flakeid"));
            }
            Ok(Arc::new(FileStore::open(path)?))
        }
        "memory" if rest.is_empty() || rest == "//" => Ok(Arc::new(MemoryStore::with_clock(
            options.ttl,
            crate::clock::SystemClock,
        ))),
        "memory" => Err(bad("memory: takes nothing after the colon")),
        "static" => Ok(Arc::new(StaticNode::from_url_rest(rest).map_err(
            |e| match e {
                ClaimError::BadUrl { reason, .. } => bad(&reason),
                e => e,
            },
        )?)),
        #[cfg(feature = "etcd")]
        "etcd" => {
            let endpoints = host_ports(rest, "etcd://127.0.0.1:2379").map_err(|r| bad(&r))?;
            if options.ttl < Duration::from_secs(1) {
                return Err(bad("the lease TTL is at least 1s"));
            }
            Ok(Arc::new(EtcdStore::connect(
                &endpoints,
                options.ttl,
                options.timeout,
            )?))
        }
        #[cfg(not(feature = "etcd"))]
        "etcd" => Err(bad(
            "this build has no etcd store: build flakeid with --features etcd",
        )),
        #[cfg(feature = "zookeeper")]
        "zookeeper" => {
            let hosts = host_ports(rest, "zookeeper://127.0.0.1:2181")
                .map_err(|r| bad(&r))?
                .join(",");
            Ok(Arc::new(ZooKeeperStore::connect(
                &hosts,
                options.ttl,
                options.timeout,
            )?))
        }
        #[cfg(not(feature = "zookeeper"))]
        "zookeeper" => Err(bad(
            "this build has no ZooKeeper store: build flakeid with --features zookeeper",
        )),
        _ => Err(bad(
            "unknown scheme: give file:DIR, memory:, static:N or static:pod",
        )),
    }
}

/// What follows `etcd:` or `zookeeper:`: `//HOST:PORT[,HOST:PORT...]`, as a list; or why
/// not, with `example`.
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
fn host_ports(rest: &str, example: &str) -> Result<Vec<String>, String> {
    let bad = || format!("give //HOST:PORT[,HOST:PORT...], each endpoint HOST:PORT, as {example}");
    let list = rest
        .strip_prefix("//")
        .ok_or_else(bad)?
        .trim_end_matches('/');
    let endpoints: Vec<String> = list.split(',').map(str::to_string).collect();
    let valid = |e: &String| {
        e.rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
    };
    if list.is_empty() || !endpoints.iter().all(valid) {
        return Err(bad());
    }
    Ok(endpoints)
}

/// Checks a namespace: 1 to 128 of `A-Z a-z 0-9 . _ -`, not `.` or `..` (it names a
/// directory or a key prefix in every store).
pub fn check_namespace(namespace: &str) -> Result<(), ClaimError> {
    let bad = |reason: &'static str| ClaimError::BadNamespace {
        namespace: namespace.into(),
        reason,
    };
    if namespace.is_empty() {
        return Err(bad("it is empty"));
    }
    if namespace.len() > 128 {
        return Err(bad("it is longer than 128 bytes"));
    }
    if namespace == "." || namespace == ".." {
        return Err(bad("it is a path component (. or ..)"));
    }
    if namespace.contains('/') {
        return Err(bad("it contains '/'"));
    }
    if namespace.contains('\0') {
        return Err(bad("it contains a NUL byte"));
    }
    if !namespace
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err(bad(
            "it has a character other than letters, digits, '.', '_' and '-'",
        ));
    }
    Ok(())
}

/// The default instance name: `host:pid`.
pub fn default_instance() -> String {
    format!("{}:{}", static_node::host_name(), std::process::id())
}

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
        /// What went wrong.
        reason: String,
    },
    /// A file of the store could not be read or written.
    Io {
        /// The file or directory.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// A node id's stored data (a state file, an etcd key, a znode) cannot be read. It is
    /// not read as 0 and not overwritten.
    Corrupt {
        /// The file, key or znode.
        path: String,
        /// What is wrong with it.
        reason: String,
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
    /// The window is longer than [`MAX_WINDOW`].
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
    /// the wait bound, also after waiting [`Claims::pool_wait`].
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
    /// The generator holds no claim (for [`Generator::renew_claim`](crate::Generator::renew_claim)).
    NotClaimed,
    /// The background renewal would come no more often than the store's lease lapses, so
    /// the lease would lapse between two renewals.
    RenewalTooRare {
        /// The renewal period ([`Claims::renew_every`]).
        every: Duration,
        /// The store's lease TTL.
        ttl: Duration,
    },
    /// The renewal period is not shorter than the window: the generator would reach its
    /// fence before every renewal.
    RenewalSlowerThanWindow {
        /// The renewal period ([`Claims::renew_every`]).
        every: Duration,
        /// The window.
        window: Duration,
    },
    /// The renewal period is shorter than [`MIN_RENEW_EVERY`]: every renewal is a durable
    /// write.
    RenewalTooOften {
        /// The renewal period given.
        every: Duration,
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
            } => {
                write!(
                    f,
                    "pool full: node ids {}..{} of namespace {namespace:?} are all taken ({held} held",
                    pool.start, pool.end
                )?;
                if !corrupt.is_empty() {
                    write!(
                        f,
                        ", {} with unreadable data: {corrupt:?}, which `flakeid claims` lists",
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
            ClaimError::Io { path, reason } => write!(
                f,
                "cannot use {path}: {reason}; give a directory this process can create and write"
            ),
            ClaimError::Corrupt { path, reason } => write!(
                f,
                "{path} holds claim data this version cannot read ({reason}); the reservation it held is unknown, so its node id is skipped and nothing overwrites it: repair it, or remove it only once no process uses this namespace"
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
            ClaimError::RenewalStopped { node, reason } => write!(
                f,
                "nothing renews node {node}'s claim any more ({reason}): minting ends at its fence; build a new generator"
            ),
            ClaimError::NotClaimed => f.write_str(
                "this generator holds no claim: build it with GeneratorBuilder::build_claimed",
            ),
        }
    }
}

impl std::error::Error for ClaimError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClaimError::Build(e) => Some(e),
            _ => None,
        }
    }
}
