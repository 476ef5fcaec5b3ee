//! [`Claims`]: how a generator claims its node id (the store, the namespace, the pool,
//! the window, the renewal), as a builder.

use core::fmt;
use core::ops::Range;
use core::time::Duration;
use std::string::String;
use std::sync::Arc;

use super::{
    ClaimError, ClaimStore, DEFAULT_NAMESPACE, DEFAULT_WINDOW, OpenOptions, open, open_with,
};

/// A store [`Claims::new`] takes: any [`ClaimStore`], or one already shared
/// (`Arc<dyn ClaimStore>`, as the stores opened by URL come).
pub trait IntoClaimStore {
    /// The store, shared.
    fn into_claim_store(self) -> Arc<dyn ClaimStore>;
}

impl<S: ClaimStore + 'static> IntoClaimStore for S {
    fn into_claim_store(self) -> Arc<dyn ClaimStore> {
        Arc::new(self)
    }
}

impl IntoClaimStore for Arc<dyn ClaimStore> {
    fn into_claim_store(self) -> Arc<dyn ClaimStore> {
        self
    }
}

/// How a generator claims its node id: the store, the namespace, the pool, the window.
/// Give it to [`GeneratorBuilder::build_claimed`](crate::GeneratorBuilder::build_claimed)
/// or [`ShardedBuilder::build_claimed`](crate::generator::ShardedBuilder::build_claimed).
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
    pub(crate) cancel: Option<super::Cancel>,
    /// The reservations earlier claims of this holder stored (node id, Unix ns).
    pub(crate) known: Option<Arc<Vec<(u64, u64)>>>,
    /// Told each change of a claim's state (node id, new state).
    pub(crate) on_change: Option<OnChange>,
    #[cfg(feature = "tokio")]
    pub(crate) runtime: Option<tokio::runtime::Handle>,
}

/// What [`Claims::on_change`] calls.
pub(crate) type OnChange = Arc<dyn Fn(u64, super::ClaimState) + Send + Sync>;

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
    /// Claims from `store` (a store, or one already shared: an `Arc<dyn ClaimStore>` as
    /// [`open`] and `flakeid_stores::open` return), in [`DEFAULT_NAMESPACE`], from the
    /// layout's whole node field, with a [`DEFAULT_WINDOW`] renewed in a background thread
    /// every third of it.
    pub fn new(store: impl IntoClaimStore) -> Claims {
        Claims {
            store: store.into_claim_store(),
            namespace: DEFAULT_NAMESPACE.into(),
            pool: None,
            window: DEFAULT_WINDOW,
            instance: None,
            pool_wait: None,
            renew_every: None,
            background: true,
            cancel: None,
            known: None,
            on_change: None,
            #[cfg(feature = "tokio")]
            runtime: None,
        }
    }

    /// [`Claims::new`] with the store a URL names (see [`open`]).
    pub fn open(url: &str) -> Result<Claims, ClaimError> {
        Ok(Claims::new(open(url)?))
    }

    /// [`Claims::open`] with the options of a network store (see [`open_with`]).
    pub fn open_with(url: &str, options: &OpenOptions) -> Result<Claims, ClaimError> {
        Ok(Claims::new(open_with(url, options)?))
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
    /// [`DEFAULT_POOL_WAIT`](super::DEFAULT_POOL_WAIT), so a supervisor's restart takes the dead holder's id.
    pub fn pool_wait(mut self, bound: Duration) -> Self {
        self.pool_wait = Some(bound);
        self
    }

    /// How often the background renewal runs (default a third of the shorter of the
    /// window and the store's lease TTL). It must be at least [`MIN_RENEW_EVERY`](super::MIN_RENEW_EVERY) and
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

    /// Lets `cancel` call the claim off while it waits for usable ids: it then releases
    /// what it took and fails with [`ClaimError::Cancelled`] (a server asked to stop while
    /// it starts).
    pub fn cancel_on(mut self, cancel: super::Cancel) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// This claim follows earlier claims of this holder in the namespace (a server that
    /// lost a claim and claims again in process), which stored `reservations` (node id,
    /// reserved until, Unix ns). Before it takes an id, the store must still have the
    /// namespace and, for each of those node ids, a reservation at least as far; else
    /// the claim fails with [`ClaimError::StoreForgot`](super::ClaimError::StoreForgot),
    /// saying what is missing, instead of starting the namespace from nothing (which
    /// would lose every earlier holder's reservation with it).
    pub fn again_after(mut self, reservations: impl IntoIterator<Item = (u64, u64)>) -> Self {
        self.known = Some(Arc::new(reservations.into_iter().collect()));
        self
    }

    /// Calls `f` with the node id and its claim's new state each time the state changes:
    /// [`ClaimState::Renewing`](super::ClaimState::Renewing) after a renewal failed,
    /// `Active` after the next that lands, `Lost`, `Stopped`, `Released`, in the order they
    /// happen, as each renewal or release leaves the claim. It runs on the thread that
    /// changed the state (the renewal's, or the one that released the claim), so keep it
    /// short and never wait in it on the generator (a renewal waits for it): hand the
    /// change to a channel or an event loop. A panic in it is caught and goes no further.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use flakeid::claim::{ClaimState, Claims, MemoryStore};
    /// use flakeid::{Generator, Layout};
    ///
    /// let (tx, rx) = mpsc::channel();
    /// let claims = Claims::new(MemoryStore::new())
    ///     .on_change(move |node, state| drop(tx.send((node, state))));
    /// let g = Generator::builder(Layout::snowflake()).build_claimed(claims)?;
    /// let node = g.node();
    /// drop(g);
    /// assert_eq!(rx.recv()?, (node, ClaimState::Released));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_change(mut self, f: impl Fn(u64, super::ClaimState) + Send + Sync + 'static) -> Self {
        self.on_change = Some(Arc::new(f));
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
