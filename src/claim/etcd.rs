//! [`EtcdStore`]: claims on etcd (v3 API, feature `etcd`): a lease per claim, the node key
//! bound to it, the reservation written by a transaction that checks the lease.

use core::time::Duration;
use std::collections::{BTreeMap, HashMap};
use std::string::String;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::vec::Vec;

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, GetOptions, KeyValue, PutOptions, Txn, TxnOp,
    TxnOpResponse, TxnResponse,
};

use super::remote::{Listing, Remote, parse_reserved, unreachable};
use super::{
    Access, ClaimError, ClaimInfo, ClaimRequest, ClaimStore, Claimed, NamespaceInfo, OpenOptions,
    Repaired, check_namespace,
};
mod retry;
use retry::*;

/// Claims on an etcd cluster (feature `etcd`).
///
/// Keys, under a prefix (default `flakeid/`):
///
/// | key | value | written |
/// |---|---|---|
/// | `flakeid/NS/nodes/N` | the holder's instance name, bound to the holder's lease | by a transaction "create if it does not exist", lowest free N first |
/// | `flakeid/NS/reserved/N` | `RESERVED_UNIX_NS STATE HOLDER` (`held` or `released`) | read in the claim's transaction; renewed by a transaction "if `nodes/N` is bound to my lease" |
///
/// A claim is a lease of `ttl`: each renewal sends a keep-alive, reads the reservation
/// with its revision, then writes the larger of the stored and the new reservation by a
/// transaction that checks both that `nodes/N` is bound to its lease and that the
/// reservation's revision is still the one read (a compare-and-set: a late or overlapping
/// write never lowers it). A lease that expired (the holder paused past it, or cut off)
/// deletes the node key with it, so the next claim takes the id, reading the reservation
/// in the same transaction; a renewal of the old holder then fails its compare and
/// reports [`ClaimError::NotOwner`]. Release writes the final reservation and revokes the
/// lease. A reservation that cannot be read is [`ClaimError::Corrupt`] naming its key: the
/// claim skips that id and nothing overwrites it.
///
/// Permissions: read and write on the prefix; with etcd's auth, a role limited to
/// `flakeid/` (or `flakeid/NS/`) is enough (leases need no key permission):
///
/// ```text
/// etcdctl role add flakeid
/// etcdctl role grant-permission flakeid readwrite --prefix=true flakeid/
/// etcdctl user add flakeid && etcdctl user grant-role flakeid flakeid
/// ```
///
/// TLS and authentication come from the URL's query or [`OpenOptions::access`]
/// ([`Access`]); a refusal (a certificate not trusted either way, a wrong password, no
/// permission on the prefix) is [`ClaimError::Refused`] saying which.
pub struct EtcdStore {
    /// A client per endpoint (each connects lazily), so that a member that stopped
    /// answering is left for the next one rather than balanced onto again.
    clients: Arc<[Client]>,
    /// The endpoint in use: moved on after a request to it failed or hung.
    current: Arc<AtomicUsize>,
    prefix: String,
    ttl: Duration,
    /// The bound on one attempt of a request.
    attempt: Duration,
    remote: Remote,
}

impl core::fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("EtcdStore")
            .field("url", &self.remote.url)
            .field("prefix", &self.prefix)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl EtcdStore {
    /// Connects to `endpoints` (`host:port`), bounded by `timeout`, which also bounds
    /// every request later; claims are leases of `ttl` (whole seconds, at least 1).
    /// Fails with [`ClaimError::Unreachable`] naming the endpoints if no member answers
    /// in time.
    pub fn connect(
        endpoints: &[String],
        ttl: Duration,
        timeout: Duration,
    ) -> Result<EtcdStore, ClaimError> {
        let options = OpenOptions::default().ttl(ttl).timeout(timeout);
        EtcdStore::connect_with(endpoints, &options)
    }

    /// [`connect`](EtcdStore::connect) with the TTL, the timeout and the TLS and
    /// authentication of `options` ([`Access`]: a CA bundle, a client certificate, a user
    /// whose token is refreshed when etcd expires it). A server that refuses the
    /// credentials is [`ClaimError::Refused`], saying what it refused.
    pub fn connect_with(
        endpoints: &[String],
        options: &OpenOptions,
    ) -> Result<EtcdStore, ClaimError> {
        let (ttl, timeout, access) = (options.ttl, options.timeout, &options.access);
        let scheme = if access.tls { "etcds" } else { "etcd" };
        let url = format!("{scheme}://{}", endpoints.join(","));
        if endpoints.is_empty() {
            return Err(ClaimError::BadUrl {
                url,
                reason: "give at least one host:port".into(),
            });
        }
        let remote = Remote::new(url.clone(), timeout, "flakeid-etcd")?;
        let eps: Vec<String> = endpoints.to_vec();
        let ttl = Duration::from_secs(ttl.as_secs().max(1));
        let attempt = attempt_bound(timeout, ttl);
        // Each request is bounded by `attempt`, which follows from the lease TTL, and the
        // connections are pinged, so a member that stopped answering (paused, cut off)
        // costs one attempt; the next goes to another member, with the lease still alive.
        // A member without a leader (cut off from its peers) refuses at once instead of
        // holding the request until it times out.
        let mut connect = ConnectOptions::new()
            .with_connect_timeout(attempt)
            .with_timeout(attempt)
            .with_keep_alive(Duration::from_secs(1), attempt)
            .with_keep_alive_while_idle(true)
            .with_require_leader(true);
        if access.tls {
            connect = connect.with_tls(tls_options(access)?);
        }
        if let (Some(user), Some(password)) = (&access.user, &access.password) {
            // etcd expires a token (after its --auth-token-ttl idle, or at a restart): the
            // client then authenticates again and repeats the request.
            connect = connect
                .with_user(user.as_str(), password.expose())
                .with_auto_token_refresh(true);
        }
        let current = Arc::new(AtomicUsize::new(0));
        let (c, u) = (Arc::clone(&current), url.clone());
        let access = access.clone();
        let clients: Arc<[Client]> = remote.run(async move {
            let mut clients = Vec::with_capacity(eps.len());
            let mut down = None;
            for endpoint in &eps {
                // Without a user the client connects lazily and this cannot fail; with one
                // it authenticates here, so a member that is down now is left out (and
                // the others serve), while a refusal is an answer: it ends the connect.
                let connecting = Client::connect([endpoint], Some(connect.clone()));
                match tokio::time::timeout(attempt, connecting).await {
                    Ok(Ok(client)) => clients.push(client),
                    Ok(Err(e)) => match etcd_error(&u, e) {
                        e @ ClaimError::Unreachable { .. } => down = Some(e),
                        refused => return Err(refused),
                    },
                    Err(_) => down = Some(unreachable(&u, format!("no answer within {attempt:?}"))),
                }
            }
            if clients.is_empty() {
                let down = down.unwrap_or_else(|| unreachable(&u, "no endpoint"));
                return Err(closed_after_handshake(down, &access));
            }
            let clients: Arc<[Client]> = clients.into();
            // A lazy channel would connect at the first call: make one now, so an
            // unreachable store fails here, within the bound.
            let cs = Arc::clone(&clients);
            retrying(
                &u,
                timeout,
                attempt,
                || {
                    let (mut client, url) = (pick(&cs, &c), u.clone());
                    async move {
                        client.status().await.map_err(|e| etcd_error(&url, e))?;
                        Ok(())
                    }
                },
                || fail_over(&c, cs.len()),
            )
            .await
            .map_err(|e| closed_after_handshake(e, &access))?;
            Ok(clients)
        })?;
        Ok(EtcdStore {
            remote,
            prefix: "flakeid/".into(),
            ttl,
            clients,
            current,
            attempt,
        })
    }

    /// The key prefix (default `flakeid/`); it should end in `/`.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The lease TTL.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    fn key(&self, namespace: &str, kind: &str, node: u64) -> String {
        format!("{}{namespace}/{kind}/{node}", self.prefix)
    }

    /// Runs `f` with a client on the store's runtime: attempts bounded by the attempt
    /// bound, again while the store cannot be reached, all within the request timeout.
    fn run<T, F>(&self, f: impl Fn(Client) -> F + Send + Sync + 'static) -> Result<T, ClaimError>
    where
        T: Send + 'static,
        F: core::future::Future<Output = Result<T, ClaimError>> + Send + 'static,
    {
        self.run_within(self.remote.timeout, f)
    }

    /// [`EtcdStore::run`] within `timeout` (at most the request timeout).
    fn run_within<T, F>(
        &self,
        timeout: Duration,
        f: impl Fn(Client) -> F + Send + Sync + 'static,
    ) -> Result<T, ClaimError>
    where
        T: Send + 'static,
        F: core::future::Future<Output = Result<T, ClaimError>> + Send + 'static,
    {
        let (clients, current) = (Arc::clone(&self.clients), Arc::clone(&self.current));
        let url = self.remote.url.clone();
        let (timeout, attempt) = (timeout.min(self.remote.timeout), self.attempt);
        self.remote.run(async move {
            retrying(
                &url,
                timeout,
                attempt,
                || f(pick(&clients, &current)),
                || fail_over(&current, clients.len()),
            )
            .await
        })
    }

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
    fn write(&self, claimed: &Claimed, reserved: u64, release: bool) -> Result<(), ClaimError> {
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

    fn not_owner(claimed: &Claimed) -> ClaimError {
        ClaimError::NotOwner {
            namespace: claimed.namespace.clone(),
            node: claimed.node,
        }
    }
}

impl ClaimStore for EtcdStore {
    fn lease_ttl(&self) -> Option<Duration> {
        Some(self.ttl)
    }

    /// Two attempts (the first, on the member that stopped answering, timed out) and the
    /// pause between them.
    fn failover_bound(&self, ttl: Duration) -> Option<Duration> {
        Some(2 * attempt_bound(self.remote.timeout, ttl) + RETRY_PAUSE)
    }

    fn url(&self) -> String {
        self.remote.url.clone()
    }

    fn claim(&self, request: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        let url = self.remote.url.clone();
        let ttl = self.ttl.as_secs() as i64;
        let namespace = String::from(request.namespace);
        let instance = String::from(request.instance);
        let pool = request.pool.clone();
        let nodes_prefix = format!("{}{namespace}/nodes/", self.prefix);
        let keys: Vec<(u64, String, String)> = pool
            .clone()
            .map(|n| {
                (
                    n,
                    self.key(&namespace, "nodes", n),
                    self.key(&namespace, "reserved", n),
                )
            })
            .collect();
        // One lease for the whole claim, also across the attempts of `run`: an attempt whose
        // reply was lost may have bound an id to it, which the next attempt then finds as
        // its own instead of leaving it to a lease nobody renews.
        let granted: Arc<std::sync::Mutex<Option<i64>>> = Arc::default();
        self.run(move |mut client| {
            let url = url.clone();
            let namespace = namespace.clone();
            let instance = instance.clone();
            let pool = pool.clone();
            let nodes_prefix = nodes_prefix.clone();
            let keys = keys.clone();
            let granted = Arc::clone(&granted);
            async move {
                let e = |e: etcd_client::Error| etcd_error(&url, e);
                let known = *granted.lock().unwrap_or_else(|p| p.into_inner());
                let lease = match known {
                    Some(lease) => lease,
                    None => {
                        let lease = client.lease_grant(ttl, None).await.map_err(e)?.id();
                        *granted.lock().unwrap_or_else(|p| p.into_inner()) = Some(lease);
                        lease
                    }
                };
                // The ids held now, with their leases (one read); then race for the rest,
                // lowest first.
                let held: HashMap<Vec<u8>, i64> = client
                    .get(nodes_prefix.as_str(), Some(GetOptions::new().with_prefix()))
                    .await
                    .map_err(e)?
                    .kvs()
                    .iter()
                    .map(|kv| (kv.key().to_vec(), kv.lease()))
                    .collect();
                let (mut taken, mut corrupt) = (0, Vec::new());
                for (node, node_key, reserved_key) in keys {
                    let stored = match held.get(node_key.as_bytes()) {
                        // Bound to this claim's lease by an earlier attempt: ours.
                        Some(&bound) if bound == lease => client
                            .get(reserved_key.as_str(), None)
                            .await
                            .map_err(e)?
                            .kvs()
                            .first()
                            .cloned(),
                        Some(_) => {
                            taken += 1;
                            continue;
                        }
                        None => {
                            let txn = Txn::new()
                                .when([Compare::create_revision(
                                    node_key.as_str(),
                                    CompareOp::Equal,
                                    0,
                                )])
                                .and_then([
                                    TxnOp::put(
                                        node_key.as_str(),
                                        instance.as_str(),
                                        Some(PutOptions::new().with_lease(lease)),
                                    ),
                                    TxnOp::get(reserved_key.as_str(), None),
                                ]);
                            let resp = client.txn(txn).await.map_err(e)?;
                            if !resp.succeeded() {
                                taken += 1;
                                continue;
                            }
                            gets(&resp).into_iter().flatten().next()
                        }
                    };
                    let not_before = match stored
                        .map(|kv| parse_reserved(kv.value(), &reserved_key))
                    {
                        None => 0,
                        Some(Ok((reserved, _, _))) => reserved,
                        // Fail closed: give the id back untouched and take the next.
                        Some(Err(_)) => {
                            let undo = Txn::new()
                                .when([Compare::lease(node_key.as_str(), CompareOp::Equal, lease)])
                                .and_then([TxnOp::delete(node_key.as_str(), None)]);
                            client.txn(undo).await.map_err(e)?;
                            corrupt.push(node);
                            continue;
                        }
                    };
                    return Ok(Ok(Claimed {
                        namespace,
                        node,
                        not_before_unix_ns: not_before,
                        fenced: true,
                        token: lease as u64,
                    }));
                }
                let _ = client.lease_revoke(lease).await;
                *granted.lock().unwrap_or_else(|p| p.into_inner()) = None;
                Ok(Err(ClaimError::PoolFull {
                    namespace,
                    pool,
                    held: taken,
                    waited: Duration::ZERO,
                    corrupt,
                    wanted: 1,
                }))
            }
        })?
    }

    fn renew(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError> {
        self.write(claimed, reserved_until_unix_ns, false)
    }

    fn release(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError> {
        self.write(claimed, reserved_until_unix_ns, true)
    }

    fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        let url = self.remote.url.clone();
        let prefix = format!("{}{namespace}/", self.prefix);
        self.run(move |mut client| {
            let url = url.clone();
            let prefix = prefix.clone();
            async move {
                let resp = client
                    .get(prefix.as_str(), Some(GetOptions::new().with_prefix()))
                    .await
                    .map_err(|e| etcd_error(&url, e))?;
                let mut nodes: BTreeMap<u64, Listing> = BTreeMap::new();
                for kv in resp.kvs() {
                    let key = String::from_utf8_lossy(kv.key());
                    let Some(rest) = key.strip_prefix(prefix.as_str()) else {
                        continue;
                    };
                    let Some((kind, node)) = rest.split_once('/') else {
                        continue;
                    };
                    let Ok(node) = node.parse::<u64>() else {
                        continue;
                    };
                    let listing = nodes.entry(node).or_insert_with(|| Listing::new(node));
                    match kind {
                        "nodes" => listing.held_by(kv.value()),
                        "reserved" => listing.reserved(kv.value(), &key),
                        _ => {}
                    }
                }
                Ok(nodes.into_values().map(|l| l.0).collect())
            }
        })
    }

    fn bind_layout(&self, namespace: &str, layout: &str) -> Result<(), ClaimError> {
        let key = format!("{}{namespace}/layout", self.prefix);
        let (url, ns, layout) = (
            self.remote.url.clone(),
            String::from(namespace),
            String::from(layout),
        );
        self.run(move |mut client| {
            let (url, key, ns, layout) = (url.clone(), key.clone(), ns.clone(), layout.clone());
            async move {
                let e = |e: etcd_client::Error| etcd_error(&url, e);
                let txn = Txn::new()
                    .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
                    .and_then([TxnOp::put(key.as_str(), layout.as_str(), None)])
                    .or_else([TxnOp::get(key.as_str(), None)]);
                let resp = client.txn(txn).await.map_err(e)?;
                if resp.succeeded() {
                    return Ok(());
                }
                let recorded = gets(&resp).into_iter().flatten().next();
                let recorded = recorded.map(|kv| kv.value().to_vec()).unwrap_or_default();
                let recorded = String::from_utf8(recorded).map_err(|_| ClaimError::Corrupt {
                    path: key.clone(),
                    reason: "the namespace's layout record is not UTF-8 text".into(),
                })?;
                super::same_layout(&ns, &recorded, &layout)
            }
        })
    }

    fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
        let (url, prefix) = (self.remote.url.clone(), self.prefix.clone());
        self.run(move |mut client| {
            let (url, prefix) = (url.clone(), prefix.clone());
            async move {
                let e = |e: etcd_client::Error| etcd_error(&url, e);
                let keys = client
                    .get(
                        prefix.as_str(),
                        Some(GetOptions::new().with_prefix().with_keys_only()),
                    )
                    .await
                    .map_err(e)?;
                let mut names: Vec<String> = keys
                    .kvs()
                    .iter()
                    .filter_map(|kv| {
                        let key = core::str::from_utf8(kv.key()).ok()?;
                        let (ns, _) = key.strip_prefix(prefix.as_str())?.split_once('/')?;
                        check_namespace(ns).ok().map(|()| String::from(ns))
                    })
                    .collect();
                names.sort_unstable();
                names.dedup();
                let mut infos = Vec::with_capacity(names.len());
                for namespace in names {
                    let key = format!("{prefix}{namespace}/layout");
                    let found = client.get(key.as_str(), None).await.map_err(e)?;
                    let (layout, problem) = match found.kvs().first().map(|kv| kv.value_str()) {
                        None => (None, None),
                        Some(Ok(layout)) => (Some(String::from(layout)), None),
                        Some(Err(_)) => (None, Some(format!("{key} is not UTF-8 text"))),
                    };
                    infos.push(NamespaceInfo {
                        namespace,
                        layout,
                        problem,
                    });
                }
                Ok(infos)
            }
        })
    }

    fn repair(
        &self,
        namespace: &str,
        node: u64,
        reserved_until_unix_ns: u64,
    ) -> Result<Repaired, ClaimError> {
        let url = self.remote.url.clone();
        let node_key = self.key(namespace, "nodes", node);
        let reserved_key = self.key(namespace, "reserved", node);
        let held = ClaimError::NodeHeld {
            namespace: namespace.into(),
            node,
        };
        self.run(move |mut client| {
            let (url, node_key, reserved_key) =
                (url.clone(), node_key.clone(), reserved_key.clone());
            let held = held.clone();
            async move {
                let e = |e: etcd_client::Error| etcd_error(&url, e);
                for _ in 0..CAS_TRIES {
                    let read = Txn::new().and_then([
                        TxnOp::get(node_key.as_str(), None),
                        TxnOp::get(reserved_key.as_str(), None),
                    ]);
                    let read = gets(&client.txn(read).await.map_err(e)?);
                    let [node_kv, reserved_kv] = [
                        read.first().cloned().flatten(),
                        read.get(1).cloned().flatten(),
                    ];
                    if node_kv.is_some() {
                        return Err(held);
                    }
                    let revision = reserved_kv.as_ref().map_or(0, KeyValue::mod_revision);
                    let previous = reserved_kv
                        .and_then(|kv| parse_reserved(kv.value(), &reserved_key).ok())
                        .map(|(stored, _, _)| stored);
                    let value = previous.unwrap_or(0).max(reserved_until_unix_ns);
                    // Nobody claims the id between the read and the write, nor writes the
                    // reservation.
                    let txn = Txn::new()
                        .when([
                            Compare::create_revision(node_key.as_str(), CompareOp::Equal, 0),
                            Compare::mod_revision(
                                reserved_key.as_str(),
                                CompareOp::Equal,
                                revision,
                            ),
                        ])
                        .and_then([TxnOp::put(
                            reserved_key.as_str(),
                            format!("{value} released repaired"),
                            None,
                        )]);
                    if client.txn(txn).await.map_err(e)?.succeeded() {
                        return Ok(Repaired {
                            previous_unix_ns: previous,
                            reserved_until_unix_ns: value,
                        });
                    }
                }
                Err(unreachable(
                    &url,
                    format!("the reservation kept moving under {CAS_TRIES} compare-and-sets"),
                ))
            }
        })
    }
}
