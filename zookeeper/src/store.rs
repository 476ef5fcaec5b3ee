//! The store as a [`ClaimStore`]: claims, renewals and releases (written in `claim.rs`
//! and `write.rs`), the line of waiters, a namespace's layout znode, the list of
//! namespaces and the repair of a reservation.

use super::*;
use crate::records::missing_chroot;

impl ClaimStore for ZooKeeperStore {
    /// An ephemeral sequential znode per waiter under `NS/line`: waiters are served in
    /// ZooKeeper's sequence order; a dead waiter's znode goes with its session (the TTL).
    ///
    /// An ephemeral sequential znode of this session, holding
    /// the instance name; a lost reply is found again by the token in its name.
    fn join_line(&self, namespace: &str, instance: &str) -> Result<Option<Ticket>, ClaimError> {
        let url = self.remote.url.clone();
        let client = self.session()?;
        let dir = self.line_dir(namespace);
        let parents = [
            self.connect.root.clone(),
            self.keys(namespace).namespace().to_owned(),
            dir.clone(),
        ];
        let acls = self.connect.acls();
        let (connect, notices) = (self.connect.clone(), Arc::clone(&self.notices));
        let token = claim_token();
        let prefix = waiter_prefix(token);
        let instance = String::from(instance);
        let namespace = String::from(namespace);
        self.remote
            .run(async move {
                let e = |e: ZkError| Self::error(&url, None, e);
                let persistent = CreateMode::Persistent.with_acls(Acls::new(&acls));
                let sequential = CreateMode::EphemeralSequential.with_acls(Acls::new(&acls));
                match client.mkdir(&dir, &persistent).await {
                    Ok(()) => {}
                    Err(ZkError::NoNode) => return Err(records::missing_chroot(&url)),
                    Err(err) => return Err(e(err)),
                }
                let parents: Vec<&str> = parents.iter().map(String::as_str).collect();
                connect.guard_all(&client, &parents, &url, &notices).await?;
                let path = format!("{dir}/{prefix}");
                for _ in 0..READ_BACK_TRIES {
                    match client.create(&path, instance.as_bytes(), &sequential).await {
                        Ok((_, seq)) => {
                            return Ok(Ticket {
                                namespace: namespace.clone(),
                                key: format!("{prefix}{seq}"),
                            });
                        }
                        // The reply was lost: whether the znode was made is read back.
                        Err(ZkError::ConnectionLoss) => {
                            if let Ok(children) = client.list_children(&dir).await
                                && let Some(name) =
                                    children.into_iter().find(|c| c.starts_with(&prefix))
                            {
                                return Ok(Ticket {
                                    namespace: namespace.clone(),
                                    key: name,
                                });
                            }
                        }
                        Err(err) => return Err(e(err)),
                    }
                }
                Err(e(ZkError::ConnectionLoss))
            })
            .map(Some)
    }

    /// The live waiters' znodes (ephemeral, of a session that has
    /// not ended), in sequence order. A persistent znode there, which no claimant makes,
    /// is no waiter: nobody can block the line with one.
    fn line(&self, namespace: &str) -> Result<Vec<Waiter>, ClaimError> {
        let url = self.remote.url.clone();
        let client = self.session()?;
        let dir = self.line_dir(namespace);
        self.remote.run(async move {
            let e = |e: ZkError| Self::error(&url, None, e);
            let children = match client.list_children(&dir).await {
                Ok(children) => children,
                Err(ZkError::NoNode) => return Ok(Vec::new()),
                Err(err) => return Err(e(err)),
            };
            let mut line: Vec<(i64, Waiter)> = Vec::new();
            for name in children {
                let Some(seq) = sequence(&name) else { continue };
                match client.get_data(&format!("{dir}/{name}")).await {
                    Ok((data, stat)) if stat.ephemeral_owner != 0 => line.push((
                        seq,
                        Waiter {
                            key: name,
                            instance: String::from_utf8_lossy(&data).into_owned(),
                        },
                    )),
                    Ok(_) | Err(ZkError::NoNode) => {}
                    Err(err) => return Err(e(err)),
                }
            }
            line.sort_by_key(|(seq, _)| *seq);
            Ok(line.into_iter().map(|(_, w)| w).collect())
        })
    }

    /// The waiter's znode is still there (its session
    /// lives); [`ClaimError::NotOwner`] once it is gone.
    fn stay_in_line(&self, ticket: &Ticket) -> Result<(), ClaimError> {
        let url = self.remote.url.clone();
        let client = self.session()?;
        let path = format!("{}/{}", self.line_dir(&ticket.namespace), ticket.key);
        let namespace = ticket.namespace.clone();
        self.remote.run(async move {
            match client.check_stat(&path).await {
                Ok(Some(_)) => Ok(()),
                Ok(None) => Err(ClaimError::NotOwner { namespace, node: 0 }),
                Err(err) => Err(Self::error(&url, None, err)),
            }
        })
    }

    /// Deletes the waiter's znode (if that fails, it goes
    /// with the session).
    fn leave_line(&self, ticket: &Ticket) {
        let Ok(client) = self.session() else { return };
        let path = format!("{}/{}", self.line_dir(&ticket.namespace), ticket.key);
        let _ = self.remote.run(async move {
            let _ = client.delete(&path, None).await;
            Ok::<(), ClaimError>(())
        });
    }

    /// On an ensemble (more than one host), the longer of two ways to lose the member in
    /// use: it stops answering, which the client notices and leaves within its connection
    /// timeout (two fifths of the TTL at most), or it dies as the leader, and the client
    /// waits out an election ([`LEADER_LOSS`]). One server has no member to move to: `None`.
    fn failover_bound(&self, ttl: Duration) -> Option<Duration> {
        let hosts = self.connect.hosts.split('/').next().unwrap_or_default();
        (hosts.split(',').count() > 1).then(|| LEADER_LOSS.max(self.connect.leave_after(ttl)))
    }

    fn lease_ttl(&self) -> Option<Duration> {
        // What the server granted, which may differ from what was asked.
        self.client
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|c| c.session_timeout())
    }

    fn url(&self) -> String {
        self.remote.url.clone()
    }

    fn warnings(&self) -> Vec<String> {
        let mut warnings = match self.connect.auth {
            Some(_) => Vec::new(),
            None => vec![format!(
                "{} is used without a user: its znodes are open to every client of the ensemble (ACL world:anyone), which could rewrite a reservation; give ?user=NAME&password-file=FILE for digest auth and creator-only znodes",
                self.remote.url
            )],
        };
        warnings.extend(
            self.notices
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .cloned(),
        );
        warnings
    }

    fn claim(&self, request: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        self.claim(request)
    }

    fn renew(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError> {
        let result = self.write(claimed, reserved_until_unix_ns, false);
        if matches!(result, Err(ClaimError::NotOwner { .. })) {
            // Lost for good: nothing done with it later may reach a later claim.
            self.claims
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&claimed.token);
        }
        result
    }

    fn release(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError> {
        let result = self.write(claimed, reserved_until_unix_ns, true);
        self.claims
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&claimed.token);
        if matches!(result, Err(ClaimError::NotOwner { .. })) {
            self.leave_reservation(claimed, reserved_until_unix_ns);
        }
        result
    }

    /// `/ROOT/NS/layout`, created with the first claim's
    /// layout; its ACL and its parents' checked as a claim's are.
    fn bind_layout(&self, namespace: &str, layout: &str) -> Result<(), ClaimError> {
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

    /// The children of the root, with their layout znodes.
    fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
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

    /// While `nodes/N` does not exist, `reserved/N` set (at the
    /// version read, so that a claim between the read and the write makes one of the two
    /// fail and read again) or created.
    fn repair(&self, namespace: &str, node: u64, reserved: u64) -> Result<Repaired, ClaimError> {
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

    fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        self.list(namespace)
    }
}

/// A waiter's znode name: its token (so that a lost reply finds it), then the sequence
/// number ZooKeeper appends.
fn waiter_prefix(token: u64) -> String {
    format!("{token:016x}-")
}

/// The sequence number at the end of a waiter's znode name.
fn sequence(name: &str) -> Option<i64> {
    name.rsplit_once('-')?.1.parse().ok()
}

impl ZooKeeperStore {
    /// Where the waiters' znodes of `namespace` are.
    fn line_dir(&self, namespace: &str) -> String {
        self.keys(namespace).line()
    }
}
