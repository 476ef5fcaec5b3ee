//! Taking a node id on ZooKeeper: the ephemeral `nodes/N` and the reservation, in one multi.

use super::*;

impl ZooKeeperStore {
    /// [`ClaimStore::claim`]: the parents made and their ACLs checked, then for the lowest
    /// id whose `nodes/N` does not exist, one multi that creates it and sets `reserved/N` at
    /// the version read.
    pub(super) fn take(&self, request: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        let url = self.remote.url.clone();
        let client = self.session()?;
        let namespace = String::from(request.namespace);
        let instance = String::from(request.instance);
        let pool = request.pool.clone();
        let dirs = [
            format!("{}/{namespace}/nodes", self.connect.root),
            format!("{}/{namespace}/reserved", self.connect.root),
        ];
        let paths: Vec<(u64, String, String)> = pool
            .clone()
            .map(|n| {
                (
                    n,
                    self.path(&namespace, "nodes", n),
                    self.path(&namespace, "reserved", n),
                )
            })
            .collect();
        let token = claim_token();
        let record = claim_record(&instance, token);
        let claims = Arc::clone(&self.claims);
        let orphans = Arc::clone(&self.orphans);
        let acls = self.connect.acls();
        let (connect, notices) = (self.connect.clone(), Arc::clone(&self.notices));
        let (root, ns_path) = (
            self.connect.root.clone(),
            format!("{}/{namespace}", self.connect.root),
        );
        self.remote.run(async move {
            let e = |e: ZkError| Self::error(&url, None, e);
            let persistent = CreateMode::Persistent.with_acls(Acls::new(&acls));
            let ephemeral = CreateMode::Ephemeral.with_acls(Acls::new(&acls));
            for dir in &dirs {
                match client.mkdir(dir, &persistent).await {
                    Ok(()) => {}
                    Err(ZkError::NoNode) => return Err(records::missing_chroot(&url)),
                    Err(err) => return Err(e(err)),
                }
            }
            let layout_path = format!("{ns_path}/layout");
            let parents = [
                root.as_str(),
                ns_path.as_str(),
                &dirs[0],
                &dirs[1],
                &layout_path,
            ];
            connect.guard_all(&client, &parents, &url, &notices).await?;
            free_orphans(&client, &orphans).await;
            let (mut held, mut corrupt) = (0, Vec::new());
            'ids: for (node, node_path, reserved_path) in paths {
                if client.check_stat(&node_path).await.map_err(e)?.is_some() {
                    held += 1;
                    continue;
                }
                connect
                    .guard_all(&client, &[reserved_path.as_str()], &url, &notices)
                    .await?;
                loop {
                    // The reservation, created empty the first time.
                    let (data, stat) = match client.get_data(&reserved_path).await {
                        Ok(found) => found,
                        Err(ZkError::NoNode) => {
                            match client
                                .create(&reserved_path, b"0 released -", &persistent)
                                .await
                            {
                                Ok(_) | Err(ZkError::NodeExists) => continue,
                                Err(err) => return Err(e(err)),
                            }
                        }
                        Err(err) => return Err(e(err)),
                    };
                    // Fail closed: an unreadable reservation is skipped, not overwritten.
                    let Ok((not_before, _, _)) = parse_reserved(&data, &reserved_path) else {
                        corrupt.push(node);
                        continue 'ids;
                    };
                    let value = format!("{not_before} held {instance}");
                    let mut multi = client.new_multi_writer();
                    multi
                        .add_create(&node_path, record.as_bytes(), &ephemeral)
                        .map_err(e)?;
                    multi
                        .add_set_data(&reserved_path, value.as_bytes(), Some(stat.version))
                        .map_err(e)?;
                    let committed = match multi.commit().await.map_err(op_error) {
                        Ok(results) => Ok(set_version(&results).unwrap_or(stat.version + 1)),
                        // The reply was lost: whether the claim landed is read back, by
                        // its token.
                        Err((None, ZkError::ConnectionLoss)) => {
                            match find_claim(&client, &node_path, &reserved_path, token).await {
                                Found::Mine(version) => Ok(version),
                                Found::Absent => continue,
                                Found::Other => Err((Some(0), ZkError::NodeExists)),
                                Found::Unknown => {
                                    orphans
                                        .lock()
                                        .unwrap_or_else(|p| p.into_inner())
                                        .push((node_path.clone(), token));
                                    Err((None, ZkError::ConnectionLoss))
                                }
                            }
                        }
                        Err(err) => Err(err),
                    };
                    match committed {
                        Ok(version) => {
                            claims.lock().unwrap_or_else(|p| p.into_inner()).insert(
                                token,
                                Held {
                                    client: Arc::clone(&client),
                                    version,
                                    stored: not_before,
                                },
                            );
                            return Ok(Claimed {
                                namespace,
                                node,
                                not_before_unix_ns: not_before,
                                fenced: true,
                                token,
                            });
                        }
                        // Someone else holds it now.
                        Err((Some(0), ZkError::NodeExists)) => {
                            held += 1;
                            continue 'ids;
                        }
                        // The reservation moved between the read and the multi: read again.
                        Err((Some(1), ZkError::BadVersion)) => continue,
                        Err((_, err)) => return Err(e(err)),
                    }
                }
            }
            Err(ClaimError::PoolFull {
                namespace,
                pool,
                held,
                waited: Duration::ZERO,
                corrupt,
                wanted: 1,
            })
        })
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
