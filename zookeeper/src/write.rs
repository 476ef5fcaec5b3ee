//! A renewal's and a release's write to ZooKeeper: the larger reservation at the version this holder wrote last, read back after a lost reply.

use super::*;

/// How many times a renewal reads back and writes again after an outcome it cannot know
/// (a lost reply) or a version that moved under it.
pub(super) const READ_BACK_TRIES: usize = 16;

impl ZooKeeperStore {
    /// Renewal (`release` false) and release: one multi that checks `nodes/N` exists and
    /// sets `reserved/N` at the version this holder wrote last (and, on release, deletes
    /// `nodes/N`). On a moved version or a lost reply, [`read_back`] decides.
    pub(super) fn write(
        &self,
        claimed: &Claimed,
        reserved: u64,
        release: bool,
    ) -> Result<(), ClaimError> {
        let url = self.remote.url.clone();
        let node_path = self.path(&claimed.namespace, "nodes", claimed.node);
        let reserved_path = self.path(&claimed.namespace, "reserved", claimed.node);
        let claims = Arc::clone(&self.claims);
        let c = claimed.clone();
        let Some(mut held) = claims
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&claimed.token)
            .cloned()
        else {
            return Err(Self::error(&url, Some(claimed), ZkError::NoNode));
        };
        let acls = self.connect.acls();
        // A write that has not landed within the session cannot keep the claim.
        self.remote.run_within(self.connect.ttl, async move {
            let client = Arc::clone(&held.client);
            let e = |e: ZkError| Self::error(&url, Some(&c), e);
            let (holder, _) = client.get_data(&node_path).await.map_err(e)?;
            let holder = String::from_utf8_lossy(&holder).into_owned();
            let state = if release { "released" } else { "held" };
            let mut tries = 0;
            loop {
                if !release && tries > 0 && held.stored >= reserved {
                    // Read back: an overlapping renewal stored as much already.
                    return Ok(());
                }
                let value = if release {
                    reserved
                } else {
                    reserved.max(held.stored)
                };
                let text = format!("{value} {state} {holder}");
                let mut multi = client.new_multi_writer();
                multi.add_check_version(&node_path, -1).map_err(e)?;
                multi
                    .add_set_data(&reserved_path, text.as_bytes(), Some(held.version))
                    .map_err(e)?;
                if release {
                    multi.add_delete(&node_path, None).map_err(e)?;
                }
                let err = match multi.commit().await.map_err(op_error) {
                    Ok(results) => {
                        held.version = set_version(&results).unwrap_or(held.version + 1);
                        held.stored = value;
                        let mut claims = claims.lock().unwrap_or_else(|p| p.into_inner());
                        // Overlapping writes of one claim: keep the newest version.
                        match claims.get_mut(&c.token) {
                            Some(entry) if entry.version > held.version => {}
                            Some(entry) => *entry = held,
                            None if release => {}
                            None => {
                                claims.insert(c.token, held);
                            }
                        }
                        return Ok(());
                    }
                    // `reserved/N` removed (by hand) under a live claim: if this session still
                    // owns `nodes/N`, nobody else can have claimed the id, so the reservation
                    // is made again, at version 0.
                    Err((Some(1), ZkError::NoNode)) => {
                        if read_owner(&client, &node_path).await.map_err(e)? {
                            let persistent = CreateMode::Persistent.with_acls(Acls::new(&acls));
                            match client
                                .create(&reserved_path, text.as_bytes(), &persistent)
                                .await
                            {
                                Ok(_) => {
                                    held.version = 0;
                                    held.stored = value;
                                    if release {
                                        // Again, at version 0, to release.
                                        continue;
                                    }
                                    claims
                                        .lock()
                                        .unwrap_or_else(|p| p.into_inner())
                                        .insert(c.token, held);
                                    return Ok(());
                                }
                                Err(ZkError::NodeExists) => ZkError::BadVersion,
                                Err(err) => return Err(e(err)),
                            }
                        } else {
                            ZkError::NoNode
                        }
                    }
                    Err((_, err)) => err,
                };
                let ambiguous = matches!(err, ZkError::BadVersion | ZkError::ConnectionLoss);
                tries += 1;
                if !ambiguous || tries > READ_BACK_TRIES {
                    return Err(e(err));
                }
                // A release whose reply was lost may have deleted `nodes/N` already.
                let (version, stored) =
                    match read_back(&client, &node_path, &reserved_path, &holder).await {
                        Ok(Some(found)) => found,
                        Ok(None) if release && err != ZkError::BadVersion => return Ok(()),
                        Ok(None) => return Err(e(ZkError::BadVersion)),
                        Err(ZkError::ConnectionLoss) if tries < READ_BACK_TRIES => {
                            continue;
                        }
                        Err(other) => return Err(e(other)),
                    };
                held.version = version;
                held.stored = held.stored.max(stored);
            }
        })
    }
}

/// After a renewal whose outcome is unknown: if this session still owns `nodes/N`, the
/// version and reservation stored at `reserved/N` (written by this holder: no other can
/// while the session owns the claim); `None` if it does not own it any more.
pub(super) async fn read_back(
    client: &Client,
    node_path: &str,
    reserved_path: &str,
    holder: &str,
) -> Result<Option<(i32, u64)>, ZkError> {
    if !read_owner(client, node_path).await? {
        return Ok(None);
    }
    let (data, stat) = client.get_data(reserved_path).await?;
    match parse_reserved(&data, reserved_path) {
        Ok((stored, _, Some(h))) if h == holder => Ok(Some((stat.version, stored))),
        _ => Ok(None),
    }
}

/// Whether this session owns `nodes/N` (the ephemeral znode exists and is its own).
async fn read_owner(client: &Client, node_path: &str) -> Result<bool, ZkError> {
    Ok(client
        .check_stat(node_path)
        .await?
        .is_some_and(|stat| stat.ephemeral_owner == client.session_id().0))
}
