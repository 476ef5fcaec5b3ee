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

    /// [`ClaimStore::bind_layout`]: `/ROOT/NS/layout`, created with the first claim's
    /// layout; its ACL and its parents' checked as a claim's are.
    pub(super) fn bind_layout(&self, namespace: &str, layout: &str) -> Result<(), ClaimError> {
        check_namespace(namespace)?;
        let url = self.remote.url.clone();
        let client = self.session()?;
        let (connect, notices) = (self.connect.clone(), Arc::clone(&self.notices));
        let root = self.connect.root.clone();
        let keys = self.keys(namespace);
        let ns_path = keys.namespace().to_owned();
        let path = keys.layout();
        let (namespace, layout) = (String::from(namespace), String::from(layout));
        self.remote.run(async move {
            let e = |e: ZkError| Self::error(&url, None, e);
            let acls = connect.acls();
            let persistent = CreateMode::Persistent.with_acls(Acls::new(&acls));
            match client.mkdir(&ns_path, &persistent).await {
                Ok(()) => {}
                Err(ZkError::NoNode) => return Err(missing_chroot(&url)),
                Err(err) => return Err(e(err)),
            }
            connect
                .guard_all(&client, &[root.as_str(), ns_path.as_str()], &url, &notices)
                .await?;
            loop {
                match client.create(&path, layout.as_bytes(), &persistent).await {
                    Ok(_) => return Ok(()),
                    Err(ZkError::NodeExists) => {}
                    Err(err) => return Err(e(err)),
                }
                connect
                    .guard_all(&client, &[path.as_str()], &url, &notices)
                    .await?;
                match client.get_data(&path).await {
                    Ok((data, _)) => {
                        let recorded =
                            String::from_utf8(data).map_err(|_| ClaimError::Corrupt {
                                path: path.clone(),
                                reason: "the namespace's layout record is not UTF-8 text".into(),
                            })?;
                        return flakeid::claim::store::same_layout(&namespace, &recorded, &layout);
                    }
                    // Removed between the create and the read: create it again.
                    Err(ZkError::NoNode) => continue,
                    Err(err) => return Err(e(err)),
                }
            }
        })
    }

    /// [`ClaimStore::namespaces`]: the children of the root, with their layout znodes.
    pub(super) fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
        let url = self.remote.url.clone();
        let client = self.session()?;
        let root = self.connect.root.clone();
        self.remote.run(async move {
            let e = |e: ZkError| Self::error(&url, None, e);
            let mut names = match client.list_children(&root).await {
                Ok(children) => children,
                Err(ZkError::NoNode) => return Ok(Vec::new()),
                Err(err) => return Err(e(err)),
            };
            names.retain(|n| check_namespace(n).is_ok());
            names.sort_unstable();
            let mut infos = Vec::with_capacity(names.len());
            for namespace in names {
                let path = Keys::new(&root, &namespace).layout();
                let (layout, problem) = match client.get_data(&path).await {
                    Ok((data, _)) => match String::from_utf8(data) {
                        Ok(layout) => (Some(layout), None),
                        Err(_) => (None, Some(format!("{path} is not UTF-8 text"))),
                    },
                    Err(ZkError::NoNode) => (None, None),
                    Err(err) => return Err(e(err)),
                };
                infos.push(NamespaceInfo {
                    namespace,
                    layout,
                    problem,
                });
            }
            Ok(infos)
        })
    }

    /// [`ClaimStore::repair`]: while `nodes/N` does not exist, `reserved/N` set (at the
    /// version read, so that a claim between the read and the write makes one of the two
    /// fail and read again) or created.
    pub(super) fn repair(
        &self,
        namespace: &str,
        node: u64,
        reserved: u64,
    ) -> Result<Repaired, ClaimError> {
        check_namespace(namespace)?;
        let url = self.remote.url.clone();
        let client = self.session()?;
        let (connect, notices) = (self.connect.clone(), Arc::clone(&self.notices));
        let keys = self.keys(namespace);
        let ns_path = keys.namespace().to_owned();
        let node_path = keys.node(node);
        let reserved_path = keys.reserved(node);
        let held = ClaimError::NodeHeld {
            namespace: namespace.into(),
            node,
        };
        self.remote.run(async move {
            let e = |e: ZkError| Self::error(&url, None, e);
            let acls = connect.acls();
            let persistent = CreateMode::Persistent.with_acls(Acls::new(&acls));
            let reserved_dir = keys.reservations();
            match client.mkdir(&reserved_dir, &persistent).await {
                Ok(()) => {}
                Err(ZkError::NoNode) => return Err(missing_chroot(&url)),
                Err(err) => return Err(e(err)),
            }
            let parents = [
                connect.root.as_str(),
                ns_path.as_str(),
                reserved_dir.as_str(),
                reserved_path.as_str(),
            ];
            connect.guard_all(&client, &parents, &url, &notices).await?;
            for _ in 0..READ_BACK_TRIES {
                if client.check_stat(&node_path).await.map_err(e)?.is_some() {
                    return Err(held);
                }
                let (previous, version) = match client.get_data(&reserved_path).await {
                    Ok((data, stat)) => (
                        parse_reserved(&data, &reserved_path)
                            .ok()
                            .map(|(r, _, _)| r),
                        Some(stat.version),
                    ),
                    Err(ZkError::NoNode) => (None, None),
                    Err(err) => return Err(e(err)),
                };
                let value = previous.unwrap_or(0).max(reserved);
                let text = format!("{value} released repaired");
                let written = match version {
                    Some(v) => client
                        .set_data(&reserved_path, text.as_bytes(), Some(v))
                        .await
                        .map(drop),
                    None => client
                        .create(&reserved_path, text.as_bytes(), &persistent)
                        .await
                        .map(drop),
                };
                match written {
                    // No claim came between the read and the write: it would have moved
                    // the version (or made the znode), and this write would have failed.
                    Ok(()) => {
                        return Ok(Repaired {
                            previous_unix_ns: previous,
                            reserved_until_unix_ns: value,
                        });
                    }
                    Err(ZkError::BadVersion | ZkError::NodeExists | ZkError::NoNode) => continue,
                    Err(err) => return Err(e(err)),
                }
            }
            Err(unreachable(
                &url,
                format!("{reserved_path} kept moving under {READ_BACK_TRIES} repairs"),
            ))
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
