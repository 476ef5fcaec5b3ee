//! [`Keys`]: where a coordinator keeps a namespace's records, written once for every store
//! that keeps keys (etcd) or znodes (ZooKeeper).

use std::format;
use std::string::String;

/// The keys of one namespace under a store's root (etcd's prefix `flakeid/`, ZooKeeper's
/// `/flakeid`):
///
/// | key | what |
/// |---|---|
/// | `ROOT/NS/layout` | the layout of the namespace's IDs, recorded by the first claim |
/// | `ROOT/NS/nodes/N` | the claim of id N, bound to its holder's lease or session |
/// | `ROOT/NS/reserved/N` | the last reservation stored for id N |
/// | `ROOT/NS/line/...` | the claimants waiting for a free id |
///
/// ```
/// use flakeid::claim::store::{Keys, Record};
///
/// let keys = Keys::new("/flakeid", "orders");
/// assert_eq!(keys.node(3), "/flakeid/orders/nodes/3");
/// assert_eq!(keys.reserved(3), "/flakeid/orders/reserved/3");
/// assert_eq!(Keys::new("flakeid/", "orders").layout(), "flakeid/orders/layout");
/// assert_eq!(keys.record("/flakeid/orders/reserved/3"), Some((Record::Reserved, 3)));
/// assert_eq!(keys.record("/flakeid/orders/reserved/x"), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    namespace: String,
}

/// Which record of an id a key is ([`Keys::record`]). A store may keep more records of an
/// id in a later release (a `match` needs a `_` arm).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Record {
    /// `nodes/N`: the claim.
    Node,
    /// `reserved/N`: the reservation.
    Reserved,
}

impl Keys {
    /// The keys of `namespace` under `root` (with or without its trailing `/`; an empty
    /// root puts the namespace at the top).
    pub fn new(root: &str, namespace: &str) -> Keys {
        let namespace = match root {
            "" => namespace.into(),
            r if r.ends_with('/') => format!("{r}{namespace}"),
            r => format!("{r}/{namespace}"),
        };
        Keys { namespace }
    }

    /// `ROOT/NS`: the namespace itself.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// `ROOT/NS/layout`.
    pub fn layout(&self) -> String {
        format!("{}/layout", self.namespace)
    }

    /// `ROOT/NS/nodes`: the claims' parent (a prefix of their keys once a `/` is added).
    pub fn nodes(&self) -> String {
        format!("{}/nodes", self.namespace)
    }

    /// `ROOT/NS/nodes/N`.
    pub fn node(&self, node: u64) -> String {
        format!("{}/nodes/{node}", self.namespace)
    }

    /// `ROOT/NS/reserved`: the reservations' parent.
    pub fn reservations(&self) -> String {
        format!("{}/reserved", self.namespace)
    }

    /// `ROOT/NS/reserved/N`.
    pub fn reserved(&self, node: u64) -> String {
        format!("{}/reserved/{node}", self.namespace)
    }

    /// `ROOT/NS/line`: the waiting claimants' parent.
    pub fn line(&self) -> String {
        format!("{}/line", self.namespace)
    }

    /// The record and the id of `key` if it is `ROOT/NS/nodes/N` or `ROOT/NS/reserved/N`
    /// with N a number; `None` for any other key.
    pub fn record(&self, key: &str) -> Option<(Record, u64)> {
        let rest = key
            .strip_prefix(self.namespace.as_str())?
            .strip_prefix('/')?;
        let (kind, node) = rest.split_once('/')?;
        let kind = match kind {
            "nodes" => Record::Node,
            "reserved" => Record::Reserved,
            _ => return None,
        };
        // Digits only: `+3` and ` 3` are keys no store wrote.
        if node.is_empty() || !node.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some((kind, node.parse().ok()?))
    }
}
