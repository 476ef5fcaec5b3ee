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
        let Some(held) = self
            .claims
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&claimed.token)
            .cloned()
        else {
            return Err(Self::error(&url, Some(claimed), ZkError::NoNode));
        };
        let keys = self.keys(&claimed.namespace);
        let write = Write {
            url,
            node_path: keys.node(claimed.node),
            reserved_path: keys.reserved(claimed.node),
            claims: Arc::clone(&self.claims),
            claimed: claimed.clone(),
            acls: self.connect.acls(),
            reserved,
            release,
        };
        // A write that has not landed within the session cannot keep the claim.
        self.remote.run_within(self.connect.ttl, write.run(held))
    }
}

/// One renewal's or release's write: what it needs on the store's runtime, owned.
struct Write {
    url: String,
    node_path: String,
    reserved_path: String,
    claims: Arc<Mutex<HashMap<u64, Held>>>,
    claimed: Claimed,
    acls: Vec<Acl>,
    /// The reservation to store.
    reserved: u64,
    release: bool,
}

/// What one multi did.
enum Wrote {
    /// It landed: done.
    Done,
    /// `reserved/N` was made again at version 0 under a release, which is tried again.
    Again,
    /// It failed with this error (a moved version or a lost reply may still be mended).
    Failed(ZkError),
}

impl Write {
    fn e(&self) -> impl Fn(ZkError) -> ClaimError + '_ {
        |e| ZooKeeperStore::error(&self.url, Some(&self.claimed), e)
    }

    /// Checks that `nodes/N` is still this claim's, then writes until it lands, reading
    /// back after each outcome it cannot know.
    async fn run(self, mut held: Held) -> Result<(), ClaimError> {
        let client = Arc::clone(&held.client);
        let (record, _) = client.get_data(&self.node_path).await.map_err(self.e())?;
        let (holder, found) = parse_claim_record(&record);
        if found != Some(self.claimed.token) {
            // A later claim (this holder's, or another's) holds the id now.
            return Err(self.e()(ZkError::NoNode));
        }
        let mut tries = 0;
        loop {
            if !self.release && tries > 0 && held.stored >= self.reserved {
                // Read back: an overlapping renewal stored as much already.
                return Ok(());
            }
            let err = match self.once(&client, &mut held, &holder).await? {
                Wrote::Done => return Ok(()),
                Wrote::Again => continue,
                Wrote::Failed(err) => err,
            };
            let ambiguous = matches!(err, ZkError::BadVersion | ZkError::ConnectionLoss);
            tries += 1;
            if !ambiguous || tries > READ_BACK_TRIES {
                return Err(self.e()(err));
            }
            // A release whose reply was lost may have deleted `nodes/N` already.
            let token = self.claimed.token;
            let (version, stored) =
                match read_back(&client, &self.node_path, &self.reserved_path, token).await {
                    Ok(Some(found)) => found,
                    Ok(None) if self.release && err != ZkError::BadVersion => return Ok(()),
                    Ok(None) => return Err(self.e()(ZkError::BadVersion)),
                    Err(ZkError::ConnectionLoss) if tries < READ_BACK_TRIES => continue,
                    Err(other) => return Err(self.e()(other)),
                };
            held.version = version;
            held.stored = held.stored.max(stored);
        }
    }

    /// One multi: `nodes/N` exists, `reserved/N` set at the version this holder wrote
    /// last (and `nodes/N` deleted on a release). A `reserved/N` removed by hand under a
    /// live claim is made again.
    async fn once(
        &self,
        client: &Client,
        held: &mut Held,
        holder: &str,
    ) -> Result<Wrote, ClaimError> {
        let (value, state) = if self.release {
            (self.reserved, "released")
        } else {
            (self.reserved.max(held.stored), "held")
        };
        let text = format!("{value} {state} {holder}");
        let mut multi = client.new_multi_writer();
        multi
            .add_check_version(&self.node_path, -1)
            .map_err(self.e())?;
        multi
            .add_set_data(&self.reserved_path, text.as_bytes(), Some(held.version))
            .map_err(self.e())?;
        if self.release {
            multi.add_delete(&self.node_path, None).map_err(self.e())?;
        }
        match multi.commit().await.map_err(op_error) {
            Ok(results) => {
                held.version = set_version(&results).unwrap_or(held.version + 1);
                held.stored = value;
                self.keep(held, false);
                Ok(Wrote::Done)
            }
            Err((Some(1), ZkError::NoNode)) => self.make_again(client, held, &text, value).await,
            Err((_, err)) => Ok(Wrote::Failed(err)),
        }
    }

    /// `reserved/N` removed (by hand) under a live claim: if this session still owns
    /// `nodes/N`, nobody else can have claimed the id, so the reservation is made again,
    /// at version 0.
    async fn make_again(
        &self,
        client: &Client,
        held: &mut Held,
        text: &str,
        value: u64,
    ) -> Result<Wrote, ClaimError> {
        let owned = owns(client, &self.node_path, self.claimed.token)
            .await
            .map_err(self.e())?;
        if owned != Some(true) {
            return Ok(Wrote::Failed(ZkError::NoNode));
        }
        let persistent = CreateMode::Persistent.with_acls(Acls::new(&self.acls));
        match client
            .create(&self.reserved_path, text.as_bytes(), &persistent)
            .await
        {
            Ok(_) => {
                held.version = 0;
                held.stored = value;
                if self.release {
                    // Again, at version 0, to release.
                    return Ok(Wrote::Again);
                }
                self.keep(held, true);
                Ok(Wrote::Done)
            }
            Err(ZkError::NodeExists) => Ok(Wrote::Failed(ZkError::BadVersion)),
            Err(err) => Err(self.e()(err)),
        }
    }

    /// Stores what the claim holds now for its next write: over an older entry (overlapping
    /// writes of one claim keep the newest version), or whatever is there (`replace`, after
    /// `reserved/N` was made again); nothing if the claim was released or found lost
    /// meanwhile.
    fn keep(&self, held: &Held, replace: bool) {
        let mut claims = self.claims.lock().unwrap_or_else(|p| p.into_inner());
        match claims.get_mut(&self.claimed.token) {
            Some(entry) if !replace && entry.version > held.version => {}
            Some(entry) => *entry = held.clone(),
            None => {}
        }
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

/// The error of one operation of a multi, or of the request.
pub(super) fn op_error(e: MultiWriteError) -> (Option<usize>, ZkError) {
    match e {
        MultiWriteError::OperationFailed { index, source } => (Some(index), source),
        MultiWriteError::RequestFailed { source } => (None, source),
    }
}

/// The version a multi's `set_data` left.
pub(super) fn set_version(results: &[MultiWriteResult]) -> Option<i32> {
    results.iter().find_map(|r| match r {
        MultiWriteResult::SetData { stat } => Some(stat.version),
        _ => None,
    })
}
