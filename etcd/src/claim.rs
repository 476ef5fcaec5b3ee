//! [`ClaimStore::claim`](flakeid::claim::ClaimStore::claim) on etcd, in named steps: take
//! one lease for the whole claim, read which ids are held, try the free ids lowest first
//! (a transaction binds an id to the lease if nobody holds it), give back an id whose
//! reservation cannot be read, and remember the claim for renewals and re-attaching.

use core::time::Duration;
use std::collections::HashMap;
use std::string::String;
use std::sync::{Arc, Mutex};
use std::vec::Vec;

use etcd_client::{Client, Compare, CompareOp, GetOptions, KeyValue, PutOptions, Txn, TxnOp};
use flakeid::claim::ClaimError;
use flakeid::claim::store::{ClaimRequest, Claimed, parse_reserved};

use crate::retry::{etcd_error, gets, lease_once};
use crate::{Attached, EtcdStore};

/// One claim's inputs, owned, so that every attempt of the store's retry loop starts from
/// them; the lease granted by an earlier attempt is kept across attempts.
#[derive(Clone)]
struct Attempt {
    url: String,
    ttl: i64,
    namespace: String,
    instance: String,
    pool: core::ops::Range<u64>,
    /// `ROOT/NS/nodes/`: the prefix of every claim key of the namespace.
    nodes_prefix: String,
    /// Each id of the pool with its claim key and its reservation key.
    keys: Vec<(u64, String, String)>,
    /// One lease for the whole claim, also across attempts: an attempt whose reply was lost
    /// may have bound an id to it, which the next attempt then finds as its own instead of
    /// leaving it to a lease nobody renews.
    granted: Arc<Mutex<Option<i64>>>,
    attached: Arc<Mutex<HashMap<u64, Attached>>>,
}

/// What trying one id found.
enum Tried {
    /// The id is bound to this claim's lease; its stored reservation, if any.
    Ours(Option<KeyValue>),
    /// Another lease holds it.
    Taken,
}

impl EtcdStore {
    /// The lowest free id of the pool, bound to a new lease.
    pub(crate) fn claim(&self, request: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        let keys = self.keys(request.namespace);
        let attempt = Attempt {
            url: self.remote.url.clone(),
            ttl: self.ttl.as_secs() as i64,
            namespace: request.namespace.into(),
            instance: request.instance.into(),
            pool: request.pool.clone(),
            nodes_prefix: format!("{}/", keys.nodes()),
            keys: request
                .pool
                .clone()
                .map(|n| (n, keys.node(n), keys.reserved(n)))
                .collect(),
            granted: Arc::default(),
            attached: Arc::clone(&self.attached),
        };
        self.run(move |client| attempt.clone().once(client))?
    }
}

impl Attempt {
    /// One attempt: `Err` to try again (etcd did not answer), `Ok(Err)` for a final answer
    /// (the pool is full).
    async fn once(self, mut client: Client) -> Result<Result<Claimed, ClaimError>, ClaimError> {
        let e = |e: etcd_client::Error| etcd_error(&self.url, e);
        let lease = lease_once(&mut client, &self.granted, self.ttl)
            .await
            .map_err(e)?;
        let held = held(&mut client, &self.nodes_prefix).await.map_err(e)?;
        let (mut taken, mut corrupt) = (0, Vec::new());
        for (node, node_key, reserved_key) in &self.keys {
            let bound = held.get(node_key.as_bytes()).copied();
            let tried = try_node(
                &mut client,
                lease,
                bound,
                node_key,
                reserved_key,
                &self.instance,
            );
            let Tried::Ours(stored) = tried.await.map_err(e)? else {
                taken += 1;
                continue;
            };
            let revision = stored.as_ref().map_or(0, KeyValue::mod_revision);
            let not_before = match stored.map(|kv| parse_reserved(kv.value(), reserved_key)) {
                None => 0,
                Some(Ok((reserved, _, _))) => reserved,
                // Fail closed: give the id back untouched and take the next.
                Some(Err(_)) => {
                    give_back(&mut client, lease, node_key).await.map_err(e)?;
                    corrupt.push(*node);
                    continue;
                }
            };
            self.attach(lease, revision);
            return Ok(Ok(Claimed {
                namespace: self.namespace,
                node: *node,
                not_before_unix_ns: not_before,
                fenced: true,
                token: lease as u64,
            }));
        }
        Ok(Err(self
            .pool_full(&mut client, lease, taken, corrupt)
            .await))
    }

    /// Remembers the claim's lease, the revision of its reservation and its holder, which
    /// renewals check and re-attaching restores.
    fn attach(&self, lease: i64, revision: i64) {
        let attached = Attached {
            lease,
            revision,
            holder: self.instance.clone(),
        };
        self.attached
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(lease as u64, attached);
    }

    /// No id was free: the lease goes (nothing is bound to it), and the next attempt or
    /// claim takes a new one.
    async fn pool_full(
        self,
        client: &mut Client,
        lease: i64,
        held: u64,
        corrupt: Vec<u64>,
    ) -> ClaimError {
        let _ = client.lease_revoke(lease).await;
        *self.granted.lock().unwrap_or_else(|p| p.into_inner()) = None;
        ClaimError::PoolFull {
            namespace: self.namespace,
            pool: self.pool,
            held,
            waited: Duration::ZERO,
            corrupt,
            wanted: 1,
        }
    }
}

/// The claim keys held now, with the lease each is bound to (one read).
async fn held(
    client: &mut Client,
    nodes_prefix: &str,
) -> Result<HashMap<Vec<u8>, i64>, etcd_client::Error> {
    let found = client
        .get(nodes_prefix, Some(GetOptions::new().with_prefix()))
        .await?;
    Ok(found
        .kvs()
        .iter()
        .map(|kv| (kv.key().to_vec(), kv.lease()))
        .collect())
}

/// Tries one id: ours if an earlier attempt bound it to `lease`, taken if another lease
/// holds it, else bound to `lease` by a transaction that creates its claim key only if it
/// does not exist and reads its reservation in the same step.
async fn try_node(
    client: &mut Client,
    lease: i64,
    bound: Option<i64>,
    node_key: &str,
    reserved_key: &str,
    instance: &str,
) -> Result<Tried, etcd_client::Error> {
    match bound {
        Some(bound) if bound == lease => {
            let found = client.get(reserved_key, None).await?;
            Ok(Tried::Ours(found.kvs().first().cloned()))
        }
        Some(_) => Ok(Tried::Taken),
        None => {
            let txn = Txn::new()
                .when([Compare::create_revision(node_key, CompareOp::Equal, 0)])
                .and_then([
                    TxnOp::put(
                        node_key,
                        instance,
                        Some(PutOptions::new().with_lease(lease)),
                    ),
                    TxnOp::get(reserved_key, None),
                ]);
            let resp = client.txn(txn).await?;
            if !resp.succeeded() {
                return Ok(Tried::Taken);
            }
            Ok(Tried::Ours(gets(&resp).into_iter().flatten().next()))
        }
    }
}

/// Deletes the claim key of an id bound to `lease`, if it still is.
async fn give_back(
    client: &mut Client,
    lease: i64,
    node_key: &str,
) -> Result<(), etcd_client::Error> {
    let undo = Txn::new()
        .when([Compare::lease(node_key, CompareOp::Equal, lease)])
        .and_then([TxnOp::delete(node_key, None)]);
    client.txn(undo).await.map(drop)
}
