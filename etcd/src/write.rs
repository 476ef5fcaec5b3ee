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
        let url = self.remote.url.clone();
        let token = claimed.token;
        let node_key = self.key(&claimed.namespace, "nodes", claimed.node);
        let reserved_key = self.key(&claimed.namespace, "reserved", claimed.node);
        let not_owner = Self::not_owner(claimed);
        let attached = Arc::clone(&self.attached);
        let ttl = self.ttl.as_secs() as i64;
        // A renewal that has not landed within the lease cannot keep it: its bound follows
        // from the TTL, so the next renewal starts in time.
        let result = self.run_within(self.ttl, move |mut client| {
            let url = url.clone();
            let node_key = node_key.clone();
            let reserved_key = reserved_key.clone();
            let not_owner = not_owner.clone();
            let attached = Arc::clone(&attached);
            async move {
                let e = |e: etcd_client::Error| etcd_error(&url, e);
                // An earlier attempt may have attached the claim to a new lease.
                let known = attached
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(&token)
                    .cloned();
                let lease = known.as_ref().map_or(token as i64, |a| a.lease);
                // The revision of `reserved/N` this holder wrote or read last (the newest:
                // overlapping renewals may finish out of order).
                let remember = |revision: i64| {
                    if let Some(a) = attached
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get_mut(&token)
                    {
                        a.revision = a.revision.max(revision);
                    }
                };
                // Keep the lease alive; a lease that expired answers with a TTL of 0 (or an
                // error): then the compare below fails too, and says so.
                let alive = if release {
                    Ok(Some(1))
                } else {
                    keep_alive(&mut client, lease).await
                };
                let state = if release { "released" } else { "held" };
                let mut written = false;
                for _ in 0..CAS_TRIES {
                    let read = Txn::new().and_then([
                        TxnOp::get(node_key.as_str(), None),
                        TxnOp::get(reserved_key.as_str(), None),
                    ]);
                    let found = match gets(&client.txn(read).await.map_err(e)?).as_slice() {
                        [n, r] => Found {
                            node: n.clone(),
                            reserved: r.clone(),
                        },
                        _ => return Err(e(etcd_client::Error::InvalidArgs("two gets".into()))),
                    };
                    let Some(node_kv) = found.node.as_ref().filter(|kv| kv.lease() == lease)
                    else {
                        if release && found.reserved.is_none() {
                            // Lost, and its reservation gone too: leave the final one.
                            let leave = Txn::new()
                                .when([Compare::create_revision(
                                    reserved_key.as_str(),
                                    CompareOp::Equal,
                                    0,
                                )])
                                .and_then([TxnOp::put(
                                    reserved_key.as_str(),
                                    format!("{reserved} released -"),
                                    None,
                                )]);
                            client.txn(leave).await.map_err(e)?;
                        }
                        let revision = found.reserved.as_ref().map_or(0, KeyValue::mod_revision);
                        let untouched = known.as_ref().filter(|a| {
                            !release && found.node.is_none() && a.revision == revision
                        });
                        let Some(known) = untouched else {
                            return Err(not_owner);
                        };
                        let (stored, _) = found.reservation(&reserved_key)?;
                        // Revoked, and nobody took the id or wrote its reservation since:
                        // attach it to a new lease, checking both in the same step.
                        let fresh = client.lease_grant(ttl, None).await.map_err(e)?.id();
                        let value = reserved.max(stored);
                        let txn = Txn::new()
                            .when([
                                Compare::create_revision(node_key.as_str(), CompareOp::Equal, 0),
                                Compare::mod_revision(
                                    reserved_key.as_str(),
                                    CompareOp::Equal,
                                    revision,
                                ),
                            ])
                            .and_then([
                                TxnOp::put(
                                    node_key.as_str(),
                                    known.holder.as_str(),
                                    Some(PutOptions::new().with_lease(fresh)),
                                ),
                                TxnOp::put(
                                    reserved_key.as_str(),
                                    format!("{value} held {}", known.holder),
                                    None,
                                ),
                            ]);
                        let resp = client.txn(txn).await.map_err(e)?;
                        if !resp.succeeded() {
                            let _ = client.lease_revoke(fresh).await;
                            return Err(not_owner);
                        }
                        if let Some(a) = attached
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .get_mut(&token)
                        {
                            a.lease = fresh;
                            a.revision = resp.header().map_or(0, |h| h.revision());
                        }
                        return Ok(());
                    };
                    let holder = String::from_utf8_lossy(node_kv.value()).into_owned();
                    let (stored, revision) = found.reservation(&reserved_key)?;
                    if !release && stored >= reserved {
                        // Already stored (by an overlapping renewal): nothing to raise.
                        remember(revision);
                        written = true;
                        break;
                    }
                    let value = if release {
                        reserved
                    } else {
                        reserved.max(stored)
                    };
                    let mut ops = vec![TxnOp::put(
                        reserved_key.as_str(),
                        format!("{value} {state} {holder}"),
                        None,
                    )];
                    if release {
                        ops.push(TxnOp::delete(node_key.as_str(), None));
                    }
                    let txn = Txn::new()
                        .when([
                            Compare::lease(node_key.as_str(), CompareOp::Equal, lease),
                            Compare::mod_revision(
                                reserved_key.as_str(),
                                CompareOp::Equal,
                                revision,
                            ),
                        ])
                        .and_then(ops);
                    let resp = client.txn(txn).await.map_err(e)?;
                    if resp.succeeded() {
                        remember(resp.header().map_or(0, |h| h.revision()));
                        written = true;
                        break;
                    }
                    // The node key moved (the next read says so) or the reservation did: again.
                }
                if release {
                    let _ = client.lease_revoke(lease).await;
                }
                match (written, alive) {
                    (true, Ok(Some(ttl))) if ttl > 0 => Ok(()),
                    // Bound to the lease after the keep-alive was answered, so the lease
                    // lived: the member that answered did not know it. Another one will.
                    (true, Ok(answer)) => Err(unreachable(
                        &url,
                        format!(
                            "a keep-alive of lease {lease:x} got {} from a member that does not know the lease, which still holds {node_key} (a leader just elected, or one resumed from a pause): trying another member",
                            match answer {
                                Some(_) => "a TTL of 0",
                                None => "no answer",
                            }
                        ),
                    )),
                    (true, Err(err)) => Err(e(err)),
                    (false, _) => Err(unreachable(
                        &url,
                        format!("the reservation kept moving under {CAS_TRIES} compare-and-sets"),
                    )),
                }
            }
        });
        if release || matches!(result, Err(ClaimError::NotOwner { .. })) {
            self.attached
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&token);
        }
        result
    }
}
