//! Taking a node id on ZooKeeper: the ephemeral `nodes/N` and the reservation, in one multi.

use super::*;

impl ZooKeeperStore {
    /// [`ClaimStore::claim`]: the parents made and their ACLs checked, then for the lowest
    /// id whose `nodes/N` does not exist, one multi that creates it and sets `reserved/N` at
    /// the version read.
    pub(super) fn claim(&self, request: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        let token = claim_token();
        let take = Take {
            url: self.remote.url.clone(),
            client: self.session()?,
            namespace: request.namespace.into(),
            record: claim_record(request.instance, token),
            instance: request.instance.into(),
            token,
            keys: self.keys(request.namespace),
            acls: self.connect.acls(),
            connect: self.connect.clone(),
            notices: Arc::clone(&self.notices),
            claims: Arc::clone(&self.claims),
            orphans: Arc::clone(&self.orphans),
        };
        let pool = request.pool.clone();
        self.remote.run(take.run(pool))
    }
}

/// One claim: what it needs on the store's runtime, owned.
struct Take {
    url: String,
    client: Arc<Client>,
    namespace: String,
    instance: String,
    /// The claim's own token, and the data of its `nodes/N` (the holder and the token).
    token: u64,
    record: String,
    keys: Keys,
    acls: Vec<Acl>,
    connect: Connect,
    notices: Arc<Mutex<Vec<String>>>,
    claims: Arc<Mutex<HashMap<u64, Held>>>,
    orphans: Arc<Mutex<Vec<(String, u64)>>>,
}

/// What trying one id found.
enum Tried {
    /// Taken: the version of `reserved/N` the multi set, and the reservation read.
    Ours { version: i32, not_before: u64 },
    /// Another claim holds it.
    Held,
    /// Its reservation cannot be read: skipped, never overwritten.
    Corrupt,
}

impl Take {
    fn e(&self) -> impl Fn(ZkError) -> ClaimError + '_ {
        |e| ZooKeeperStore::error(&self.url, None, e)
    }

    /// The parents made and guarded, earlier claims' orphans freed, then the ids of `pool`
    /// tried lowest first.
    async fn run(self, pool: core::ops::Range<u64>) -> Result<Claimed, ClaimError> {
        self.prepare().await?;
        let (mut held, mut corrupt) = (0, Vec::new());
        for node in pool.clone() {
            match self.try_node(node).await? {
                Tried::Ours {
                    version,
                    not_before,
                } => return Ok(self.hold(node, version, not_before)),
                Tried::Held => held += 1,
                Tried::Corrupt => corrupt.push(node),
            }
        }
        Err(ClaimError::PoolFull {
            namespace: self.namespace,
            pool,
            held,
            waited: Duration::ZERO,
            corrupt,
            wanted: 1,
        })
    }

    /// Makes `nodes` and `reserved` (a missing chroot is an error of its own), checks the
    /// ACLs of every parent, and frees the claims of earlier lost replies.
    async fn prepare(&self) -> Result<(), ClaimError> {
        let persistent = CreateMode::Persistent.with_acls(Acls::new(&self.acls));
        let dirs = [self.keys.nodes(), self.keys.reservations()];
        for dir in &dirs {
            match self.client.mkdir(dir, &persistent).await {
                Ok(()) => {}
                Err(ZkError::NoNode) => return Err(records::missing_chroot(&self.url)),
                Err(err) => return Err(self.e()(err)),
            }
        }
        let layout = self.keys.layout();
        let parents = [
            self.connect.root.as_str(),
            self.keys.namespace(),
            &dirs[0],
            &dirs[1],
            &layout,
        ];
        self.connect
            .guard_all(&self.client, &parents, &self.url, &self.notices)
            .await?;
        free_orphans(&self.client, &self.orphans).await;
        Ok(())
    }

    /// Tries one id: held if its `nodes/N` exists; else its reservation read (created
    /// empty the first time) and one multi that creates `nodes/N` and sets `reserved/N` at
    /// the version read, again while the reservation moves under it.
    async fn try_node(&self, node: u64) -> Result<Tried, ClaimError> {
        let (node_path, reserved_path) = (self.keys.node(node), self.keys.reserved(node));
        if self
            .client
            .check_stat(&node_path)
            .await
            .map_err(self.e())?
            .is_some()
        {
            return Ok(Tried::Held);
        }
        self.connect
            .guard_all(
                &self.client,
                &[reserved_path.as_str()],
                &self.url,
                &self.notices,
            )
            .await?;
        loop {
            let Some((data, stat)) = self.reservation(&reserved_path).await? else {
                continue;
            };
            // Fail closed: an unreadable reservation is skipped, not overwritten.
            let Ok((not_before, _, _)) = parse_reserved(&data, &reserved_path) else {
                return Ok(Tried::Corrupt);
            };
            let value = format!("{not_before} held {}", self.instance);
            match self
                .commit(&node_path, &reserved_path, &value, stat.version)
                .await
            {
                Ok(Some(version)) => {
                    return Ok(Tried::Ours {
                        version,
                        not_before,
                    });
                }
                // A lost reply, and nothing of it landed: again.
                Ok(None) => continue,
                // Someone else holds it now.
                Err((Some(0), ZkError::NodeExists)) => return Ok(Tried::Held),
                // The reservation moved between the read and the multi: read again.
                Err((Some(1), ZkError::BadVersion)) => continue,
                Err((_, err)) => return Err(self.e()(err)),
            }
        }
    }

    /// `reserved/N`'s data and stat; `None` when it did not exist and was created empty
    /// just now (by this claim or another), to be read again.
    async fn reservation(
        &self,
        reserved_path: &str,
    ) -> Result<Option<(Vec<u8>, zookeeper_client::Stat)>, ClaimError> {
        match self.client.get_data(reserved_path).await {
            Ok(found) => Ok(Some(found)),
            Err(ZkError::NoNode) => {
                let persistent = CreateMode::Persistent.with_acls(Acls::new(&self.acls));
                match self
                    .client
                    .create(reserved_path, b"0 released -", &persistent)
                    .await
                {
                    Ok(_) | Err(ZkError::NodeExists) => Ok(None),
                    Err(err) => Err(self.e()(err)),
                }
            }
            Err(err) => Err(self.e()(err)),
        }
    }

    /// One multi: create the ephemeral `nodes/N` and set `reserved/N` at `version`. A
    /// lost reply is read back by the claim's token: the version set if it landed, `None`
    /// if nothing did; an id whose read-back finds nothing in time is left to
    /// [`free_orphans`].
    async fn commit(
        &self,
        node_path: &str,
        reserved_path: &str,
        value: &str,
        version: i32,
    ) -> Result<Option<i32>, (Option<usize>, ZkError)> {
        let ephemeral = CreateMode::Ephemeral.with_acls(Acls::new(&self.acls));
        let mut multi = self.client.new_multi_writer();
        multi
            .add_create(node_path, self.record.as_bytes(), &ephemeral)
            .map_err(|e| (None, e))?;
        multi
            .add_set_data(reserved_path, value.as_bytes(), Some(version))
            .map_err(|e| (None, e))?;
        match multi.commit().await.map_err(op_error) {
            Ok(results) => Ok(Some(set_version(&results).unwrap_or(version + 1))),
            Err((None, ZkError::ConnectionLoss)) => {
                match find_claim(&self.client, node_path, reserved_path, self.token).await {
                    Found::Mine(version) => Ok(Some(version)),
                    Found::Absent => Ok(None),
                    Found::Other => Err((Some(0), ZkError::NodeExists)),
                    Found::Unknown => {
                        self.orphans
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push((node_path.into(), self.token));
                        Err((None, ZkError::ConnectionLoss))
                    }
                }
            }
            Err(err) => Err(err),
        }
    }

    /// Remembers the claim (its session, the version of `reserved/N` it set, the
    /// reservation it read) for renewals, and answers it.
    fn hold(self, node: u64, version: i32, not_before: u64) -> Claimed {
        self.claims
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                self.token,
                Held {
                    client: Arc::clone(&self.client),
                    version,
                    stored: not_before,
                },
            );
        Claimed {
            namespace: self.namespace,
            node,
            not_before_unix_ns: not_before,
            fenced: true,
            token: self.token,
        }
    }
}

/// What a read-back of a claim whose reply was lost found.
enum Found {
    /// The claim landed: `nodes/N` is this session's with this claim's token; the version
    /// of `reserved/N` it set.
    Mine(i32),
    /// Nothing landed: `nodes/N` does not exist.
    Absent,
    /// Another claim holds the id.
    Other,
    /// The ensemble did not answer in time.
    Unknown,
}

/// After a claim whose reply was lost: whether `nodes/N` is this claim's (this session's,
/// with its token), read until the session answers or the tries run out.
async fn find_claim(client: &Client, node_path: &str, reserved_path: &str, token: u64) -> Found {
    for attempt in 0..READ_BACK_TRIES {
        if attempt > 0 {
            // The client reconnects on its own: give it a moment between reads.
            tokio::time::sleep(Duration::from_millis(50 << attempt.min(4))).await;
        }
        let owned = match owns(client, node_path, token).await {
            Ok(owned) => owned,
            Err(ZkError::ConnectionLoss) => continue,
            Err(_) => return Found::Unknown,
        };
        match owned {
            Some(false) => return Found::Other,
            None => return Found::Absent,
            Some(true) => {}
        }
        match client.get_data(reserved_path).await {
            Ok((_, stat)) => return Found::Mine(stat.version),
            Err(ZkError::ConnectionLoss) => continue,
            Err(_) => return Found::Unknown,
        }
    }
    Found::Unknown
}

/// Claims whose reply was lost and whose read-back found nothing in time: each `nodes/N`
/// deleted if it is still this session's with that token (nobody else can take the id
/// meanwhile, and this process serves on another), kept for the next claim if the
/// ensemble does not answer.
async fn free_orphans(client: &Client, orphans: &Mutex<Vec<(String, u64)>>) {
    let pending = core::mem::take(&mut *orphans.lock().unwrap_or_else(|p| p.into_inner()));
    let mut kept = Vec::new();
    for (node_path, token) in pending {
        let freed = match owns(client, &node_path, token).await {
            Ok(Some(true)) => match client.delete(&node_path, None).await {
                Ok(()) | Err(ZkError::NoNode) => true,
                Err(_) => false,
            },
            Ok(_) => true,
            Err(_) => false,
        };
        if !freed {
            kept.push((node_path, token));
        }
    }
    orphans
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .extend(kept);
}
