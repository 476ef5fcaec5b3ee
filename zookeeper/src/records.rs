//! A namespace's layout znode, the list of namespaces, the repair of a reservation, and
//! the reservation a lost claim leaves behind.

use super::*;

impl ZooKeeperStore {
    /// [`ClaimStore::list`]: each id's `nodes/N` (the holder) and `reserved/N`, read
    /// in either order into one listing.
    pub(super) fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        let url = self.remote.url.clone();
        let client = self.session()?;
        let keys = self.keys(namespace);
        self.remote.run(async move {
            let e = |e: ZkError| Self::error(&url, None, e);
            let mut nodes: BTreeMap<u64, Listing> = BTreeMap::new();
            for (record, dir) in [
                (Record::Reserved, keys.reservations()),
                (Record::Node, keys.nodes()),
            ] {
                let children = match client.list_children(&dir).await {
                    Ok(children) => children,
                    Err(ZkError::NoNode) => continue,
                    Err(err) => return Err(e(err)),
                };
                for child in children {
                    let Ok(node) = child.parse::<u64>() else {
                        continue;
                    };
                    let path = format!("{dir}/{child}");
                    let data = match client.get_data(&path).await {
                        Ok((data, _)) => data,
                        Err(ZkError::NoNode) => continue,
                        Err(err) => return Err(e(err)),
                    };
                    let listing = nodes.entry(node).or_insert_with(|| Listing::new(node));
                    match record {
                        Record::Node => listing.held_by(&data),
                        Record::Reserved => listing.reserved(&data, &path),
                        // A record a later release keeps: not part of this listing.
                        _ => {}
                    }
                }
            }
            Ok(nodes.into_values().map(|l| l.0).collect())
        })
    }

    /// After a release that found the claim no longer this holder's: its final
    /// reservation stored where none is (created, never written over one), through the
    /// store's current session (the claim's may have expired).
    pub(super) fn leave_reservation(&self, claimed: &Claimed, reserved: u64) {
        let Ok(client) = self.session() else {
            return;
        };
        let path = self.keys(&claimed.namespace).reserved(claimed.node);
        let acls = self.connect.acls();
        let _ = self.remote.run(async move {
            let persistent = CreateMode::Persistent.with_acls(Acls::new(&acls));
            let text = format!("{reserved} released -");
            let _ = client.create(&path, text.as_bytes(), &persistent).await;
            Ok(())
        });
    }
}

/// A chroot in the URL that does not exist (only it can be missing: mkdir makes the rest).
pub(super) fn missing_chroot(url: &str) -> ClaimError {
    ClaimError::BadUrl {
        url: url.into(),
        reason:
            "its chroot does not exist: create it first (zkCli.sh create /PATH), or leave it out"
                .into(),
    }
}
