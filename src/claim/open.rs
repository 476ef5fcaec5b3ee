//! Stores by URL ([`open`], [`open_with`], [`open_url`]): the stores of this crate by
//! scheme.

use std::sync::Arc;

#[cfg(unix)]
use super::FileStore;
use super::store::{FromUrl, StoreUrl};
use super::{ClaimError, ClaimStore, MemoryStore, OpenOptions, StaticNode};

/// The store a URL names:
///
/// | URL | store |
/// |---|---|
/// | `file:DIR` (or `file://DIR`) | [`FileStore`] in `DIR`: one host, OS locks, fsynced reservations; owner-only files |
/// | `file:DIR?share=group` | the same, shared with the owner's group ([`FileStore::shared_with_group`]) |
/// | `memory:` | a new [`MemoryStore`]: this process only, leases of [`OpenOptions::ttl`] |
/// | `static:N` | [`StaticNode`]: node id N, no fence |
/// | `static:pod` or `static:pod+K` | [`StaticNode::from_pod_name`]: the ordinal of a StatefulSet pod (`$POD_NAME`, else `$HOSTNAME`, else the host name), plus K |
///
/// The coordinators are stores of their own crates, which open from the same [`StoreUrl`]
/// ([`FromUrl`]): `etcd://` and `etcds://` in `flakeid-etcd`, `zookeeper://` in
/// `flakeid-zookeeper`, `postgres://` and `postgresql://` in `flakeid-postgres`;
/// `flakeid_stores::open` opens all of them (and stores registered by scheme), and the
/// `flakeid` tool opens through it. Here their URLs, and any scheme this crate does not
/// know, are refused with a message naming `flakeid_stores::open`. A network store's query says how it authenticates
/// ([`Access`](super::Access)).
pub fn open(url: &str) -> Result<Arc<dyn ClaimStore>, ClaimError> {
    open_with(url, &OpenOptions::default())
}

/// [`open`] with the TTL and timeout of a network store.
pub fn open_with(url: &str, options: &OpenOptions) -> Result<Arc<dyn ClaimStore>, ClaimError> {
    open_url(&StoreUrl::parse(url)?, options)
}

/// [`open_with`] of a URL already read: the stores of this crate by scheme.
/// `flakeid-stores`, which composes every store, hands these schemes to this.
pub fn open_url(url: &StoreUrl, options: &OpenOptions) -> Result<Arc<dyn ClaimStore>, ClaimError> {
    match url.scheme() {
        #[cfg(not(unix))]
        "file" => Err(url.bad(
            "the file store is built for Unix (openat, flock, owner checks): on this system use a coordinator, memory: or static:",
        )),
        #[cfg(unix)]
        "file" => Ok(Arc::new(FileStore::from_url(url, options)?)),
        "memory" => Ok(Arc::new(MemoryStore::from_url(url, options)?)),
        "static" => Ok(Arc::new(StaticNode::from_url(url, options)?)),
        scheme @ ("etcd" | "etcds" | "zookeeper" | "postgres" | "postgresql") => {
            let package = match scheme {
                "etcd" | "etcds" => "flakeid-etcd",
                "zookeeper" => "flakeid-zookeeper",
                _ => "flakeid-postgres",
            };
            Err(url.bad(format!(
                "{scheme}:// is a store of the {package} crate, not of flakeid: open this URL with flakeid_stores::open (crate flakeid-stores), which opens every store"
            )))
        }
        other => Err(url.bad(format!(
            "unknown scheme {other:?}: flakeid opens file:DIR, memory:, static:N and static:pod; flakeid_stores::open (crate flakeid-stores) opens those, etcd://, etcds://, zookeeper://, postgres:// and stores registered by scheme"
        ))),
    }
}

#[cfg(unix)]
impl FromUrl for FileStore {
    /// `file:DIR` (or `file://DIR`), `?share=owner` (the default) or `?share=group`.
    fn from_url(url: &StoreUrl, _: &OpenOptions) -> Result<FileStore, ClaimError> {
        url.only(&["share"])?;
        let path = url.location();
        if path.is_empty() {
            return Err(url.bad("file: needs a directory, as in file:/var/lib/flakeid"));
        }
        let store = FileStore::open(&path)?;
        match url.get("share") {
            None | Some("owner") => Ok(store),
            Some("group") => Ok(store.shared_with_group()),
            Some(_) => Err(url.bad(
                "share= takes owner (the default: 0600 files, 0700 directories) or group (0660, 0770)",
            )),
        }
    }
}

impl FromUrl for MemoryStore {
    /// `memory:`: a new store, leases of [`OpenOptions::ttl`] on the system clock.
    fn from_url(url: &StoreUrl, options: &OpenOptions) -> Result<MemoryStore, ClaimError> {
        url.only(&[])?;
        if !url.location().is_empty() {
            return Err(url.bad("memory: takes nothing after the colon"));
        }
        Ok(MemoryStore::with_clock(
            options.ttl,
            crate::clock::SystemClock,
        ))
    }
}

impl FromUrl for StaticNode {
    /// `static:N`, `static:pod`, `static:pod+K`.
    fn from_url(url: &StoreUrl, _: &OpenOptions) -> Result<StaticNode, ClaimError> {
        url.only(&[])?;
        StaticNode::from_url_rest(&url.location()).map_err(|e| match e {
            ClaimError::BadUrl { reason, .. } => url.bad(reason),
            e => e,
        })
    }
}
