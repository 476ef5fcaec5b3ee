//! A renewal's and a release's write to etcd: a keep-alive, then the larger reservation by a
//! transaction that checks the lease and the revision read; and attaching a claim again to
//! a new lease when the cluster revoked its lease while nobody else took the id.

use super::*;

/// What a read of a claim's two keys found.
struct Found {
    node: Option<KeyValue>,
    reserved: Option<KeyValue>,
}

impl Found {
    /// The stored reservation and its revision (0 for none).
    fn reservation(&self, key: &str) -> Result<(u64, i64), ClaimError> {
        match &self.reserved {
            Some(kv) => Ok((parse_reserved(kv.value(), key)?.0, kv.mod_revision())),
            None => Ok((0, 0)),
        }
    }
}

impl EtcdStore {
    /// Renewal (`release` false): a keep-alive, then read `nodes/N` and `reserved/N`, and
    /// "if `nodes/N` is bound to my lease and `reserved/N` is at the revision read, put the
    /// larger reservation". Release: the same with the final value (which may be lower:
    /// nothing was minted at or past it) and `nodes/N` deleted, then the lease revoked; a
    /// release of a claim that is no longer this holder's leaves its final reservation
    /// where none is stored.
    ///
    /// Only the transaction, a linearizable read and write, decides that the claim is
    /// lost. A keep-alive answers from the member it reached: one whose lessor does not
    /// know the lease yet (a leader elected a moment ago, still applying its log; a stale
    /// leader that resumed from a pause) answers a TTL of 0 for a lease that lives. When
    /// the transaction then finds `nodes/N` still bound to the lease, that answer was not
    /// the cluster's: the attempt fails as unreachable, and the next one keeps the lease
    /// alive through another member.
    ///
    /// A lease the cluster revoked although it was kept alive (etcd 3.4 before the fix of
    /// its issue 12528: a leader that resumes after a pause longer than the TTL revokes
    /// every lease it thinks expired, and the revocation is applied after it stepped down)
    /// takes `nodes/N` with it. If nobody took the id since (`nodes/N` absent) and nobody
    /// wrote its reservation since this holder did (`reserved/N` at the revision it wrote
    /// or read last, so no other holder can have minted on it), the renewal attaches the
    /// claim to a new lease in one transaction that checks both, and goes on.
    pub(super) fn write(
        &self,
        claimed: &Claimed,
        reserved: u64,
        release: bool,
    ) -> Result<(), ClaimError> {
        let keys = self.keys(&claimed.namespace);
        let write = Write {
            url: self.remote.url.clone(),
            token: claimed.token,
            node_key: keys.node(claimed.node),
            reserved_key: keys.reserved(claimed.node),
            not_owner: Self::not_owner(claimed),
            attached: Arc::clone(&self.attached),
            ttl: self.ttl.as_secs() as i64,
            reserved,
            release,
        };
        // A renewal that has not landed within the lease cannot keep it: its bound follows
        // from the TTL, so the next renewal starts in time.
        let result = self.run_within(self.ttl, move |client| write.clone().once(client));
        if release || matches!(result, Err(ClaimError::NotOwner { .. })) {
            self.attached
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&claimed.token);
        }
        result
    }
}

/// One renewal's or release's write, owned, so that every attempt of the store's retry
/// loop starts from it.
#[derive(Clone)]
struct Write {
    url: String,
    /// The claim's token: the lease it was taken with, the key of what the store
    /// remembers of it.
    token: u64,
    node_key: String,
    reserved_key: String,
    not_owner: ClaimError,
    attached: Arc<std::sync::Mutex<HashMap<u64, Attached>>>,
    ttl: i64,
    /// The reservation to store.
    reserved: u64,
    release: bool,
}

impl Write {
    fn e(&self) -> impl Fn(etcd_client::Error) -> ClaimError + '_ {
        |e| etcd_error(&self.url, e)
    }

    /// One attempt: keep the lease alive (a renewal), then compare-and-set the
    /// reservation until it lands, or find the claim lost (and attach it again where
    /// nobody touched the id).
    async fn once(self, mut client: Client) -> Result<(), ClaimError> {
        // An earlier attempt may have attached the claim to a new lease.
        let known = self.known();
        let lease = known.as_ref().map_or(self.token as i64, |a| a.lease);
        // Keep the lease alive; a lease that expired answers with a TTL of 0 (or an
        // error): then the compare below fails too, and says so.
        let alive = if self.release {
            Ok(Some(1))
        } else {
            keep_alive(&mut client, lease).await
        };
        let mut written = false;
        for _ in 0..CAS_TRIES {
            let found = self.read(&mut client).await?;
            let Some(node_kv) = found.node.as_ref().filter(|kv| kv.lease() == lease) else {
                return self.lost(&mut client, &found, known.as_ref()).await;
            };
            if self.store(&mut client, lease, node_kv, &found).await? {
                written = true;
                break;
            }
            // The node key moved (the next read says so) or the reservation did: again.
        }
        if self.release {
            let _ = client.lease_revoke(lease).await;
        }
        self.verdict(written, alive, lease)
    }

    /// What the store remembers of the claim.
    fn known(&self) -> Option<Attached> {
        self.attached
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&self.token)
            .cloned()
    }

    /// Remembers `revision` as the newest of `reserved/N` this holder wrote or read
    /// (overlapping renewals may finish out of order).
    fn remember(&self, revision: i64) {
        if let Some(a) = self
            .attached
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(&self.token)
        {
            a.revision = a.revision.max(revision);
        }
    }

    /// Reads `nodes/N` and `reserved/N` in one step.
    async fn read(&self, client: &mut Client) -> Result<Found, ClaimError> {
        let read = Txn::new().and_then([
            TxnOp::get(self.node_key.as_str(), None),
            TxnOp::get(self.reserved_key.as_str(), None),
        ]);
        match gets(&client.txn(read).await.map_err(self.e())?).as_slice() {
            [n, r] => Ok(Found {
                node: n.clone(),
                reserved: r.clone(),
            }),
            _ => Err(self.e()(etcd_client::Error::InvalidArgs("two gets".into()))),
        }
    }

    /// Stores the reservation if `nodes/N` is still bound to `lease` and `reserved/N` is
    /// at the revision read: the larger one on a renewal, the final one (with `nodes/N`
    /// deleted) on a release. `false` if either moved.
    async fn store(
        &self,
        client: &mut Client,
        lease: i64,
        node_kv: &KeyValue,
        found: &Found,
    ) -> Result<bool, ClaimError> {
        let holder = String::from_utf8_lossy(node_kv.value()).into_owned();
        let (stored, revision) = found.reservation(&self.reserved_key)?;
        if !self.release && stored >= self.reserved {
            // Already stored (by an overlapping renewal): nothing to raise.
            self.remember(revision);
            return Ok(true);
        }
        let (value, state) = if self.release {
            (self.reserved, "released")
        } else {
            (self.reserved.max(stored), "held")
        };
        let mut ops = vec![TxnOp::put(
            self.reserved_key.as_str(),
            format!("{value} {state} {holder}"),
            None,
        )];
        if self.release {
            ops.push(TxnOp::delete(self.node_key.as_str(), None));
        }
        let txn = Txn::new()
            .when([
                Compare::lease(self.node_key.as_str(), CompareOp::Equal, lease),
                Compare::mod_revision(self.reserved_key.as_str(), CompareOp::Equal, revision),
            ])
            .and_then(ops);
        let resp = client.txn(txn).await.map_err(self.e())?;
        if resp.succeeded() {
            self.remember(resp.header().map_or(0, |h| h.revision()));
        }
        Ok(resp.succeeded())
    }

    /// `nodes/N` is not bound to the claim's lease. A release leaves its final reservation
    /// where none is stored; a renewal attaches the claim again where nobody took the id
    /// or wrote its reservation since; anything else is [`ClaimError::NotOwner`].
    async fn lost(
        &self,
        client: &mut Client,
        found: &Found,
        known: Option<&Attached>,
    ) -> Result<(), ClaimError> {
        if self.release && found.reserved.is_none() {
            let leave = Txn::new()
                .when([Compare::create_revision(
                    self.reserved_key.as_str(),
                    CompareOp::Equal,
                    0,
                )])
                .and_then([TxnOp::put(
                    self.reserved_key.as_str(),
                    format!("{} released -", self.reserved),
                    None,
                )]);
            client.txn(leave).await.map_err(self.e())?;
        }
        let revision = found.reserved.as_ref().map_or(0, KeyValue::mod_revision);
        match known {
            Some(known) if !self.release && found.node.is_none() && known.revision == revision => {
                self.attach_again(client, found, known, revision).await
            }
            _ => Err(self.not_owner.clone()),
        }
    }

    /// Revoked, and nobody took the id or wrote its reservation since: attach the claim
    /// to a new lease, checking both in the same step.
    async fn attach_again(
        &self,
        client: &mut Client,
        found: &Found,
        known: &Attached,
        revision: i64,
    ) -> Result<(), ClaimError> {
        let (stored, _) = found.reservation(&self.reserved_key)?;
        let fresh = client
            .lease_grant(self.ttl, None)
            .await
            .map_err(self.e())?
            .id();
        let value = self.reserved.max(stored);
        let txn = Txn::new()
            .when([
                Compare::create_revision(self.node_key.as_str(), CompareOp::Equal, 0),
                Compare::mod_revision(self.reserved_key.as_str(), CompareOp::Equal, revision),
            ])
            .and_then([
                TxnOp::put(
                    self.node_key.as_str(),
                    known.holder.as_str(),
                    Some(PutOptions::new().with_lease(fresh)),
                ),
                TxnOp::put(
                    self.reserved_key.as_str(),
                    format!("{value} held {}", known.holder),
                    None,
                ),
            ]);
        let resp = client.txn(txn).await.map_err(self.e())?;
        if !resp.succeeded() {
            let _ = client.lease_revoke(fresh).await;
            return Err(self.not_owner.clone());
        }
        if let Some(a) = self
            .attached
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(&self.token)
        {
            a.lease = fresh;
            a.revision = resp.header().map_or(0, |h| h.revision());
        }
        Ok(())
    }

    /// The attempt's answer once the reservation was written (or could not be): a lease
    /// the keep-alive said was gone though `nodes/N` was still bound to it means the member
    /// that answered did not know it, and another one will.
    fn verdict(
        &self,
        written: bool,
        alive: Result<Option<i64>, etcd_client::Error>,
        lease: i64,
    ) -> Result<(), ClaimError> {
        match (written, alive) {
            (true, Ok(Some(ttl))) if ttl > 0 => Ok(()),
            (true, Ok(answer)) => Err(unreachable(
                &self.url,
                format!(
                    "a keep-alive of lease {lease:x} got {} from a member that does not know the lease, which still holds {} (a leader just elected, or one resumed from a pause): trying another member",
                    match answer {
                        Some(_) => "a TTL of 0",
                        None => "no answer",
                    },
                    self.node_key
                ),
            )),
            (true, Err(err)) => Err(self.e()(err)),
            (false, _) => Err(unreachable(
                &self.url,
                format!("the reservation kept moving under {CAS_TRIES} compare-and-sets"),
            )),
        }
    }
}
