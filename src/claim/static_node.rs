//! [`StaticNode`]: a node id the deployment guarantees unique (given, or a StatefulSet
//! pod's ordinal); no store, no fence.

use std::collections::BTreeSet;
use std::string::String;
use std::sync::{Arc, Mutex};
use std::vec::Vec;

use super::store::{ClaimRequest, Claimed, Repaired};
use super::{ClaimError, ClaimInfo, ClaimStore, NamespaceInfo, NodeState};

/// A node id the orchestrator guarantees unique: given outright (`static:N`), or the
/// ordinal of a Kubernetes StatefulSet pod (`static:pod`, `static:pod+K`; pod `web-3` is
/// node 3, plus K).
///
/// There is no fence and no store: **you** guarantee that no two live processes ever have
/// the same id (a StatefulSet's "at most one pod per ordinal", which holds unless a node
/// is partitioned and the pod force-deleted), and that a restarted process's clock is not
/// behind the time its predecessor last minted at (or persist the last ID and use
/// [`GeneratorBuilder::resume_after`](crate::GeneratorBuilder::resume_after)).
///
/// Claims held at once get consecutive ids: the first N, the next N+1, and so on (a
/// [`ShardedGenerator`](crate::ShardedGenerator) of k shards on `static:N` mints on N..N+k),
/// so two generators of one process never share an id. Give each process a block that
/// far apart. Clones share the ids held.
#[derive(Debug, Clone)]
pub struct StaticNode {
    node: u64,
    source: String,
    /// The offsets from `node` of the claims held now.
    held: Arc<Mutex<BTreeSet<u64>>>,
}

impl PartialEq for StaticNode {
    fn eq(&self, other: &Self) -> bool {
        (self.node, &self.source) == (other.node, &other.source)
    }
}

impl Eq for StaticNode {}

impl StaticNode {
    /// Node id `node`.
    pub fn new(node: u64) -> StaticNode {
        StaticNode {
            node,
            source: format!("static:{node}"),
            held: Arc::default(),
        }
    }

    /// The ordinal of a StatefulSet pod name (`name-<ordinal>`), plus `offset`.
    pub fn from_pod_name(pod: &str, offset: u64) -> Result<StaticNode, ClaimError> {
        let bad = |reason: String| ClaimError::BadUrl {
            url: format!("static:pod (pod name {pod:?})"),
            reason,
        };
        let ordinal: u64 = pod
            .rsplit_once('-')
            .and_then(|(_, n)| n.parse().ok())
            .ok_or_else(|| {
                bad("a StatefulSet pod name ends in -<ordinal>, as web-3; set POD_NAME, or give static:N".into())
            })?;
        let node = ordinal
            .checked_add(offset)
            .ok_or_else(|| bad(format!("ordinal {ordinal} + {offset} overflows")))?;
        Ok(StaticNode {
            node,
            source: format!("static:pod ({pod}, +{offset})"),
            held: Arc::default(),
        })
    }

    /// [`StaticNode::from_pod_name`] with this pod's name: `$POD_NAME` (set it from the
    /// downward API, `metadata.name`), else `$HOSTNAME`, else the host name.
    pub fn from_environment(offset: u64) -> Result<StaticNode, ClaimError> {
        let name = std::env::var("POD_NAME")
            .or_else(|_| std::env::var("HOSTNAME"))
            .unwrap_or_else(|_| host_name());
        StaticNode::from_pod_name(name.trim(), offset)
    }

    /// What follows `static:` in a URL: `N`, `pod` or `pod+K`.
    pub(crate) fn from_url_rest(rest: &str) -> Result<StaticNode, ClaimError> {
        let bad = |reason: &str| ClaimError::BadUrl {
            url: format!("static:{rest}"),
            reason: reason.into(),
        };
        if let Some(offset) = rest.strip_prefix("pod") {
            let offset = match offset.strip_prefix('+') {
                Some(k) => k
                    .parse()
                    .map_err(|_| bad("static:pod+K needs a non-negative integer K"))?,
                None if offset.is_empty() => 0,
                None => return Err(bad("give static:pod or static:pod+K")),
            };
            return StaticNode::from_environment(offset);
        }
        rest.parse()
            .map(StaticNode::new)
            .map_err(|_| bad("give static:N with a non-negative integer N, or static:pod"))
    }

    /// The node id (the first claim's; claims held at once get the ids after it).
    pub fn node(&self) -> u64 {
        self.node
    }

    fn held(&self) -> std::sync::MutexGuard<'_, BTreeSet<u64>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// This host's name (`/proc/sys/kernel/hostname`, `/etc/hostname`, else `localhost`).
pub(crate) fn host_name() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| {
            let name = std::fs::read_to_string(p).ok()?;
            let name = name.trim();
            (!name.is_empty()).then(|| name.to_string())
        })
        .unwrap_or_else(|| "localhost".into())
}

impl ClaimStore for StaticNode {
    fn url(&self) -> String {
        self.source.clone()
    }

    fn claim(&self, request: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        let mut held = self.held();
        let offset = (0..).find(|k| !held.contains(k)).unwrap_or(0);
        let node = self
            .node
            .checked_add(offset)
            .filter(|n| request.pool.contains(n));
        let Some(node) = node else {
            return Err(ClaimError::NodeOutsidePool {
                node: self.node.saturating_add(offset),
                pool: request.pool.clone(),
            });
        };
        held.insert(offset);
        Ok(Claimed {
            namespace: request.namespace.into(),
            node,
            not_before_unix_ns: 0,
            fenced: false,
            token: offset,
        })
    }

    fn renew(&self, claimed: &Claimed, _: u64) -> Result<(), ClaimError> {
        if self.held().contains(&claimed.token) {
            Ok(())
        } else {
            Err(ClaimError::NotOwner {
                namespace: claimed.namespace.clone(),
                node: claimed.node,
            })
        }
    }

    fn release(&self, claimed: &Claimed, _: u64) -> Result<(), ClaimError> {
        if self.held().remove(&claimed.token) {
            Ok(())
        } else {
            Err(ClaimError::NotOwner {
                namespace: claimed.namespace.clone(),
                node: claimed.node,
            })
        }
    }

    fn list(&self, _: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        let held = self.held();
        let offsets = if held.is_empty() {
            Vec::from([0])
        } else {
            held.iter().copied().collect()
        };
        Ok(offsets
            .into_iter()
            .map(|k| ClaimInfo {
                node: self.node.saturating_add(k),
                state: NodeState::Held,
                holder: Some(self.source.clone()),
                reserved_until_unix_ns: 0,
                problem: None,
            })
            .collect())
    }

    /// Nothing to record: the orchestrator, not a store, keeps the node ids apart.
    fn bind_layout(&self, _: &str, _: &str) -> Result<(), ClaimError> {
        Ok(())
    }

    fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
        Ok(Vec::new())
    }

    /// Nothing to repair: a static node id has no reservation.
    fn repair(&self, _: &str, _: u64, reserved: u64) -> Result<Repaired, ClaimError> {
        Ok(Repaired {
            previous_unix_ns: None,
            reserved_until_unix_ns: reserved,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_ordinals() {
        assert_eq!(StaticNode::from_pod_name("web-3", 0).unwrap().node(), 3);
        assert_eq!(
            StaticNode::from_pod_name("my-app-db-12", 100)
                .unwrap()
                .node(),
            112
        );
        for bad in ["web", "web-", "web-x", "-", ""] {
            assert!(StaticNode::from_pod_name(bad, 0).is_err(), "{bad}");
        }
        assert!(StaticNode::from_pod_name("a-1", u64::MAX).is_err());
        assert_eq!(StaticNode::from_url_rest("17").unwrap().node(), 17);
        assert!(StaticNode::from_url_rest("-1").is_err());
        assert!(StaticNode::from_url_rest("pod+x").is_err());
        assert!(StaticNode::from_url_rest("podx").is_err());
    }
}
