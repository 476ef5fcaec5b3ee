//! Claims: a generator fenced by a node id claimed from a store (`file:`, `etcd://`,
//! `zookeeper://`, `postgres://`, through `flakeid_stores::open`), its status, its
//! release, and what a store holds (`claims`).

use std::sync::Arc;
use std::time::Duration;

use flakeid::claim::{ClaimStore, ClaimedGenerator, Claims, OpenOptions, Secret};
use flakeid::clock::MonotonicClock;
use flakeid::{Generator, Layout};
use napi_derive::napi;

use crate::errors::{claim_error, range_error};
use crate::layout::NodeLayout;
use crate::mint::{ClaimSlot, MintOptions, Minter, NativeGenerator, millis, options};
use crate::numbers::{Whole, whole};
use crate::watch::{Listener, Watchers, state_name};

/// How a claim is taken: the namespace, the pool of node ids (`[start, end)`), the
/// reserved window, the lease TTL, the holder's name, how long to wait for a free id, the
/// password of the URL's `user=`.
#[napi(object)]
pub struct ClaimOptions {
    pub namespace: Option<String>,
    pub nodes: Option<Vec<Whole>>,
    pub window_ms: Option<f64>,
    pub ttl_ms: Option<f64>,
    pub instance: Option<String>,
    pub pool_wait_ms: Option<f64>,
    pub password: Option<String>,
}

/// A claim's state now, as `status()` gives it.
#[napi(object)]
pub struct ClaimStatusInfo {
    pub store: String,
    pub namespace: String,
    pub node: f64,
    pub instance: String,
    pub state: String,
    pub fenced: bool,
    pub fence_left_ms: Option<f64>,
    pub renewals: f64,
    pub failures: f64,
    pub last_error: Option<String>,
    pub released: bool,
}

/// One node id as a store lists it.
#[napi(object)]
pub struct ClaimListing {
    pub node: f64,
    pub state: String,
    pub holder: Option<String>,
    pub reserved_until_unix_ms: Option<f64>,
    pub problem: Option<String>,
}

/// The store's options: a password, a lease TTL.
fn open_options(o: Option<&ClaimOptions>) -> napi::Result<OpenOptions> {
    let mut options = OpenOptions::default();
    if let Some(p) = o.and_then(|o| o.password.clone()) {
        options = options.password(Secret::new(p));
    }
    if let Some(ttl) = o.and_then(|o| o.ttl_ms) {
        options = options.ttl(millis("ttlMs", Some(ttl), Duration::ZERO)?);
    }
    Ok(options)
}

/// The claims of `o` on `store` for `layout`, telling `watchers` of their changes.
pub(crate) fn claims(
    store: Arc<dyn ClaimStore>,
    layout: &Layout,
    o: Option<&ClaimOptions>,
    watchers: &Arc<Watchers>,
) -> napi::Result<Claims> {
    let w = Arc::clone(watchers);
    let mut claims = Claims::new(store)
        .on_change(move |_, state| w.tell(state))
        .namespace(
            o.and_then(|o| o.namespace.clone())
                .unwrap_or_else(|| "default".into()),
        )
        .window(millis(
            "windowMs",
            o.and_then(|o| o.window_ms),
            Duration::from_secs(5),
        )?);
    if let Some(nodes) = o.and_then(|o| o.nodes.as_ref()) {
        let [start, end] = nodes.as_slice() else {
            return Err(range_error(
                "nodes is [start, end): two whole numbers, the first node id of the pool and one past its last",
            ));
        };
        let start = whole("nodes[0]", start, layout.max_node())?;
        let end = whole("nodes[1]", end, layout.max_node().saturating_add(1))?;
        claims = claims.nodes(start..end);
    }
    if let Some(i) = o.and_then(|o| o.instance.clone()) {
        claims = claims.instance(i);
    }
    if let Some(w) = o.and_then(|o| o.pool_wait_ms) {
        claims = claims.pool_wait(millis("poolWaitMs", Some(w), Duration::ZERO)?);
    }
    Ok(claims)
}

/// A generator on a node id claimed by `claims`.
pub(crate) fn build(
    layout: &Layout,
    claims: Claims,
    mint: Option<&MintOptions>,
) -> napi::Result<(ClaimedGenerator<MonotonicClock>, Duration)> {
    let (max_wait, async_wait, policy) = options(mint)?;
    let g = Generator::builder(*layout)
        .clock(MonotonicClock::new())
        .max_wait(max_wait)
        .policy(policy)
        .build_claimed(claims)
        .map_err(claim_error)?;
    Ok((g, async_wait))
}

/// A generator on a node id claimed from the store at `url`, fenced by its window and
/// renewed on a thread of its own until `close()`.
#[napi(catch_unwind)]
pub fn claim(
    url: String,
    layout: &NodeLayout,
    options: Option<ClaimOptions>,
    mint: Option<MintOptions>,
) -> napi::Result<NativeGenerator> {
    let l = layout.layout;
    let store =
        flakeid_stores::open(&url, &open_options(options.as_ref())?).map_err(claim_error)?;
    let watchers = Arc::default();
    let claims = claims(store, &l, options.as_ref(), &watchers)?;
    let (g, async_wait) = build(&l, claims, mint.as_ref())?;
    let slot = ClaimSlot::new(g, watchers);
    Ok(NativeGenerator {
        node: slot.node,
        minter: Minter::Claimed(Arc::new(slot)),
        layout: l,
        async_wait,
    })
}

/// What the store at `url` holds for `namespace`.
#[napi(catch_unwind)]
pub fn claims_of(
    url: String,
    namespace: String,
    options: Option<ClaimOptions>,
) -> napi::Result<Vec<ClaimListing>> {
    let store =
        flakeid_stores::open(&url, &open_options(options.as_ref())?).map_err(claim_error)?;
    let listed = store.list(&namespace).map_err(claim_error)?;
    Ok(listed
        .into_iter()
        .map(|i| ClaimListing {
            node: i.node as f64,
            state: format!("{:?}", i.state).to_lowercase(),
            holder: i.holder,
            reserved_until_unix_ms: Some((i.reserved_until_unix_ns / 1_000_000) as f64),
            problem: i.problem,
        })
        .collect())
}

#[napi]
impl NativeGenerator {
    /// Releases a claim: nothing more is minted on it, and the store gets the id back with
    /// a reservation past every ID minted. A plain generator has nothing to release.
    #[napi(catch_unwind)]
    pub fn close(&self) {
        if let Minter::Claimed(slot) = &self.minter {
            slot.release();
        }
    }

    /// Calls `listener` on this environment's event loop with the name of the claim's
    /// state each time it changes, until `unwatch` with the number returned (a generator
    /// on a node id given has no claim, and never calls it). It keeps no event loop alive.
    #[napi(catch_unwind)]
    pub fn watch(&self, listener: Listener) -> u32 {
        let Minter::Claimed(slot) = &self.minter else {
            return 0;
        };
        slot.watchers.add(listener)
    }

    /// Stops calling the listener `watch` returned `id` for.
    #[napi(catch_unwind)]
    pub fn unwatch(&self, id: u32) {
        if let Minter::Claimed(slot) = &self.minter {
            slot.watchers.remove(id);
        }
    }

    /// The claim's state now (`null` for a generator on a node id given).
    #[napi(catch_unwind)]
    pub fn status(&self) -> Option<ClaimStatusInfo> {
        let Minter::Claimed(slot) = &self.minter else {
            return None;
        };
        let Some(g) = slot.g.load_full() else {
            return Some(ClaimStatusInfo {
                store: String::new(),
                namespace: String::new(),
                node: slot.node as f64,
                instance: String::new(),
                state: "released".into(),
                fenced: true,
                fence_left_ms: None,
                renewals: 0.0,
                failures: 0.0,
                last_error: None,
                released: true,
            });
        };
        let s = g.claim_status();
        Some(ClaimStatusInfo {
            store: s.store,
            namespace: s.namespace,
            node: s.node as f64,
            instance: s.instance,
            state: state_name(s.state),
            fenced: s.fenced,
            fence_left_ms: s.fence_left.map(|d| d.as_secs_f64() * 1e3),
            renewals: s.renewals as f64,
            failures: s.failures as f64,
            last_error: s.last_error.map(|e| e.to_string()),
            released: false,
        })
    }
}
