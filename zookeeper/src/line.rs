//! The line of claimants waiting for a free id of a namespace: an ephemeral sequential
//! znode per waiter under `NS/line`, served in the order of ZooKeeper's sequence numbers.

use super::*;

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
    fn line_dir(&self, namespace: &str) -> String {
        self.keys(namespace).line()
    }

    /// [`ClaimStore::join_line`]: an ephemeral sequential znode of this session, holding
    /// the instance name; a lost reply is found again by the token in its name.
    pub(super) fn join_line(&self, namespace: &str, instance: &str) -> Result<Ticket, ClaimError> {
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
        self.remote.run(async move {
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
    }

    /// [`ClaimStore::line`]: the live waiters' znodes (ephemeral, of a session that has
    /// not ended), in sequence order. A persistent znode there, which no claimant makes,
    /// is no waiter: nobody can block the line with one.
    pub(super) fn line(&self, namespace: &str) -> Result<Vec<Waiter>, ClaimError> {
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

    /// [`ClaimStore::stay_in_line`]: the waiter's znode is still there (its session
    /// lives); [`ClaimError::NotOwner`] once it is gone.
    pub(super) fn stay_in_line(&self, ticket: &Ticket) -> Result<(), ClaimError> {
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

    /// [`ClaimStore::leave_line`]: deletes the waiter's znode (if that fails, it goes
    /// with the session).
    pub(super) fn leave_line(&self, ticket: &Ticket) {
        let Ok(client) = self.session() else { return };
        let path = format!("{}/{}", self.line_dir(&ticket.namespace), ticket.key);
        let _ = self.remote.run(async move {
            let _ = client.delete(&path, None).await;
            Ok::<(), ClaimError>(())
        });
    }
}
