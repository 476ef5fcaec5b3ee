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
        let token = self
            .next_token
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let claims = Arc::clone(&self.claims);
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
                        .add_create(&node_path, instance.as_bytes(), &ephemeral)
                        .map_err(e)?;
                    multi
                        .add_set_data(&reserved_path, value.as_bytes(), Some(stat.version))
                        .map_err(e)?;
                    match multi.commit().await.map_err(op_error) {
                        Ok(results) => {
                            let version = set_version(&results).unwrap_or(stat.version + 1);
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
