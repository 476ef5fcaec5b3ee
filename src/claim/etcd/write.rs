//! A renewal's and a release's write to etcd: a keep-alive, then the larger reservation by a
//! transaction that checks the lease and the revision read.

use super::*;

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
    pub(super) fn write(
        &self,
        claimed: &Claimed,
        reserved: u64,
        release: bool,
    ) -> Result<(), ClaimError> {
        let url = self.remote.url.clone();
        let lease = claimed.token as i64;
        let node_key = self.key(&claimed.namespace, "nodes", claimed.node);
        let reserved_key = self.key(&claimed.namespace, "reserved", claimed.node);
        let not_owner = Self::not_owner(claimed);
        // A renewal that has not landed within the lease cannot keep it: its bound follows
        // from the TTL, so the next renewal starts in time.
        self.run_within(self.ttl, move |mut client| {
            let url = url.clone();
            let node_key = node_key.clone();
            let reserved_key = reserved_key.clone();
            let not_owner = not_owner.clone();
            async move {
                let e = |e: etcd_client::Error| etcd_error(&url, e);
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
                    let read = gets(&client.txn(read).await.map_err(e)?);
                    let (node_kv, reserved_kv) = match read.as_slice() {
                        [n, r] => (n.clone(), r.clone()),
                        _ => return Err(e(etcd_client::Error::InvalidArgs("two gets".into()))),
                    };
                    let Some(node_kv) = node_kv.filter(|kv| kv.lease() == lease) else {
                        if release && reserved_kv.is_none() {
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
                        return Err(not_owner);
                    };
                    let holder = String::from_utf8_lossy(node_kv.value()).into_owned();
                    let (stored, revision) = match &reserved_kv {
                        Some(kv) => (
                            parse_reserved(kv.value(), &reserved_key)?.0,
                            kv.mod_revision(),
                        ),
                        None => (0, 0),
                    };
                    if !release && stored >= reserved {
                        // Already stored (by an overlapping renewal): nothing to raise.
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
                    if client.txn(txn).await.map_err(e)?.succeeded() {
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
        })
    }
}
