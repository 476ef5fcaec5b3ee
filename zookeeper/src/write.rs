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
            let (record, _) = client.get_data(&node_path).await.map_err(e)?;
            let (holder, found) = parse_claim_record(&record);
            if found != Some(c.token) {
                // A later claim (this holder's, or another's) holds the id now.
                return Err(e(ZkError::NoNode));
            }
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
                            // Released, or found lost, by an overlapping write meanwhile.
                            None => {}
                        }
                        return Ok(());
                    }
                    // `reserved/N` removed (by hand) under a live claim: if this session still
                    // owns `nodes/N`, nobody else can have claimed the id, so the reservation
                    // is made again, at version 0.
                    Err((Some(1), ZkError::NoNode)) => {
                        if owns(&client, &node_path, c.token).await.map_err(e)? == Some(true) {
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
                                    if let Some(entry) = claims
                                        .lock()
                                        .unwrap_or_else(|p| p.into_inner())
                                        .get_mut(&c.token)
                                    {
                                        *entry = held;
                                    }
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
                    match read_back(&client, &node_path, &reserved_path, c.token).await {
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

/// After a renewal whose outcome is unknown: if `nodes/N` is still this claim's (this
/// session's, with its token), the version and reservation stored at `reserved/N`
/// (written by this claim: no other can while it holds `nodes/N`); `None` if the claim is
/// gone, to anyone, this holder's own later claims included.
pub(super) async fn read_back(
    client: &Client,
    node_path: &str,
    reserved_path: &str,
    token: u64,
) -> Result<Option<(i32, u64)>, ZkError> {
    if owns(client, node_path, token).await? != Some(true) {
        return Ok(None);
    }
    let (data, stat) = client.get_data(reserved_path).await?;
    match parse_reserved(&data, reserved_path) {
        Ok((stored, _, _)) => Ok(Some((stat.version, stored))),
        _ => Ok(None),
    }
}

/// Whether `nodes/N` is the claim with `token` made in this session: `None` if it does
/// not exist, `Some(false)` if it is another claim (another session's, or this one's
/// with another token).
pub(super) async fn owns(
    client: &Client,
    node_path: &str,
    token: u64,
) -> Result<Option<bool>, ZkError> {
    match client.get_data(node_path).await {
        Ok((data, stat)) => Ok(Some(
            stat.ephemeral_owner == client.session_id().0
                && parse_claim_record(&data).1 == Some(token),
        )),
        Err(ZkError::NoNode) => Ok(None),
        Err(err) => Err(err),
    }
}
