//! One generator per process: a node id claimed from a directory on this host (the file
//! store), shared by every `worker_thread` of the process (an addon is loaded once per
//! process, whichever thread loads it first), and released when the last JavaScript
//! environment that used it ends (each registers a cleanup hook), or at `close()`.
//! Processes on one host (`cluster`, PM2, `child_process.fork`) each get their own node
//! id from the same directory, with no coordinator.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use flakeid::claim::FileStore;
use napi::Env;
use napi_derive::napi;

use crate::claimed::{ClaimOptions, build, claims};
use crate::errors::claim_error;
use crate::layout::NodeLayout;
use crate::mint::{ClaimSlot, MintOptions, Minter, NativeGenerator};

/// A process's shared claim and how many environments use it.
struct Shared {
    slot: Arc<ClaimSlot>,
    users: usize,
    async_wait: std::time::Duration,
}

/// The process's shared claims, by directory, namespace and layout.
static SHARED: Mutex<Option<HashMap<String, Shared>>> = Mutex::new(None);

/// The key of a shared claim.
fn key(dir: &str, namespace: &str, layout: &flakeid::Layout) -> String {
    format!("{dir}\u{0}{namespace}\u{0}{layout}")
}

/// This process's generator for `layout` in `namespace` of the directory `dir`: claimed
/// the first time any thread asks, the same one after (until it is released).
#[napi(catch_unwind)]
pub fn per_process(
    env: Env,
    dir: String,
    layout: &NodeLayout,
    options: Option<ClaimOptions>,
    mint: Option<MintOptions>,
) -> napi::Result<NativeGenerator> {
    let l = layout.layout;
    let namespace = options
        .as_ref()
        .and_then(|o| o.namespace.clone())
        .unwrap_or_else(|| "default".into());
    let k = key(&dir, &namespace, &l);
    let mut all = SHARED.lock().unwrap_or_else(|p| p.into_inner());
    let map = all.get_or_insert_with(HashMap::new);
    let live = map.get(&k).is_some_and(|s| s.slot.g.load().is_some());
    if !live {
        let store = FileStore::open(&dir).map_err(claim_error)?;
        let watchers = Arc::default();
        let claims = claims(Arc::new(store), &l, options.as_ref(), &watchers)?;
        let (g, async_wait) = build(&l, claims, mint.as_ref())?;
        map.insert(
            k.clone(),
            Shared {
                slot: Arc::new(ClaimSlot::new(g, watchers)),
                users: 0,
                async_wait,
            },
        );
    }
    let shared = map.get_mut(&k).expect("inserted above");
    shared.users += 1;
    let slot = Arc::clone(&shared.slot);
    let async_wait = shared.async_wait;
    drop(all);
    // This environment's use ends with it: the last one out releases the claim.
    env.add_env_cleanup_hook(k, leave)?;
    Ok(NativeGenerator {
        node: slot.node,
        minter: Minter::Claimed(slot),
        layout: l,
        async_wait,
    })
}

/// An environment that used the shared claim `k` ended.
fn leave(k: String) {
    let mut all = SHARED.lock().unwrap_or_else(|p| p.into_inner());
    let Some(map) = all.as_mut() else { return };
    let Some(shared) = map.get_mut(&k) else {
        return;
    };
    shared.users = shared.users.saturating_sub(1);
    if shared.users == 0 {
        shared.slot.release();
        map.remove(&k);
    }
}
