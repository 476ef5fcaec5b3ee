//! Claims of [flakeid](https://docs.rs/flakeid) node ids on etcd (v3 API): [`EtcdStore`],
//! a lease per claim, the node key bound to it, the reservation written by a transaction
//! that checks the lease.
//!
//! ```no_run
//! use flakeid::claim::{Claims, OpenOptions};
//! use flakeid::claim::store::{FromUrl, StoreUrl};
//! use flakeid::{Generator, Layout};
//! use flakeid_etcd::EtcdStore;
//!
//! let url = StoreUrl::parse("etcd://10.0.0.5:2379,10.0.0.6:2379")?;
//! let store = EtcdStore::from_url(&url, &OpenOptions::default())?;
//! let generator = Generator::builder(Layout::snowflake())
//!     .build_claimed(Claims::new(store).namespace("orders"))?;
//! println!("{}", generator.next_id()?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The store keeps the contract of [`ClaimStore`] (the `flakeid-testkit` conformance suite
//! runs against a real etcd in this crate's tests).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

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

use flakeid::claim::store::{
    ClaimRequest, Claimed, FromUrl, Keys, Listing, Record, Repaired, Runtime as Remote, StoreUrl,
    Ticket, Waiter, parse_reserved, unreachable,
};
use flakeid::claim::{
    Access, ClaimError, ClaimInfo, ClaimStore, NamespaceInfo, OpenOptions, Reason, check_namespace,
};
mod claim;
mod retry;
mod store;
mod write;
use retry::*;

/// Claims on an etcd cluster.
///
/// Keys, under a prefix (default `flakeid/`):
///
/// | key | value | written |
/// |---|---|---|
/// | `flakeid/NS/nodes/N` | the holder's instance name, bound to the holder's lease | by a transaction "create if it does not exist", lowest free N first |
/// | `flakeid/NS/reserved/N` | `RESERVED_UNIX_NS STATE HOLDER` (`held` or `released`) | read in the claim's transaction; renewed by a transaction "if `nodes/N` is bound to my lease" |
/// | `flakeid/NS/line/TOKEN` | a waiting claimant's instance name, bound to a lease of its own | when a claimant finds the pool full ([`ClaimStore::join_line`]); served in creation order |
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
    /// The claims this store took, by token.
    attached: Arc<std::sync::Mutex<HashMap<u64, Attached>>>,
    /// The leases of this store's places in lines, by their keys' tokens.
    waiting: Arc<std::sync::Mutex<HashMap<String, i64>>>,
    remote: Remote,
}

/// What the store knows of a claim it took: the lease its node key is bound to now (a new
/// one after it attached again), the revision of `reserved/N` it wrote or read last, and
/// the holder's name.
#[derive(Debug, Clone)]
struct Attached {
    lease: i64,
    revision: i64,
    holder: String,
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
        // Each request is bounded by `attempt` (`retrying` cuts it there), which follows
        // from the lease TTL, and the connections are pinged, so a member that stopped
        // answering (paused, cut off) costs one attempt; the next goes to another member,
        // with the lease still alive. A member without a leader (cut off from its peers)
        // refuses at once instead of holding the request until it times out. The channel's
        // own bounds are the request's timeout: on a busy host a connection (TCP, TLS) and
        // the authentication at connect (the member checks the password with bcrypt, slow
        // when it is busy with others) may take longer than one attempt, and cut there
        // each try would begin again from nothing and never end.
        let mut connect = ConnectOptions::new()
            .with_connect_timeout(timeout)
            .with_timeout(timeout)
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
            // A little inside the runtime's own bound, so that this error is the one
            // returned.
            let deadline = tokio::time::Instant::now() + timeout.saturating_sub(RETRY_PAUSE);
            let clients = connect_all(&u, &eps, &connect, deadline, attempt).await?;
            let clients = match clients {
                Ok(clients) => clients,
                Err(down) => return Err(closed_after_handshake(down, &access)),
            };
            let clients: Arc<[Client]> = clients.into();
            // A lazy channel would connect at the first call: make one now, so an
            // unreachable store fails here, within the bound.
            let cs = Arc::clone(&clients);
            retrying(
                &u,
                deadline.saturating_duration_since(tokio::time::Instant::now()),
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
            attached: Arc::default(),
            waiting: Arc::default(),
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

    /// Where `namespace`'s records are, under the prefix.
    fn keys(&self, namespace: &str) -> Keys {
        Keys::new(&self.prefix, namespace)
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
            // A little inside the runtime's own bound (which started first), so that the
            // last attempt's error is the one returned, not the runtime's "no answer".
            retrying(
                &url,
                timeout.saturating_sub(RETRY_PAUSE),
                attempt,
                || f(pick(&clients, &current)),
                || fail_over(&current, clients.len()),
            )
            .await
        })
    }

    fn not_owner(claimed: &Claimed) -> ClaimError {
        ClaimError::NotOwner {
            namespace: claimed.namespace.clone(),
            node: claimed.node,
        }
    }
}

impl FromUrl for EtcdStore {
    /// `etcd://HOST:PORT[,HOST:PORT...][?QUERY]`, or `etcds://` for TLS; the query's access
    /// ([`Access`]: `ca`, `cert`, `key`, `user`, `password-file`) over `options`'.
    fn from_url(url: &StoreUrl, options: &OpenOptions) -> Result<EtcdStore, ClaimError> {
        let mut access = url.access(options.access.clone())?;
        access.tls |= url.scheme() == "etcds";
        if !url.path().is_empty() && url.path() != "/" {
            return Err(url.bad("etcd:// takes no path: give etcd://HOST:PORT[,HOST:PORT...]"));
        }
        let endpoints = url.hosts("etcd://127.0.0.1:2379")?;
        if options.ttl < Duration::from_secs(1) {
            return Err(url.bad("the lease TTL is at least 1s"));
        }
        let mut options = options.clone();
        options.access = access;
        EtcdStore::connect_with(&endpoints, &options)
    }
}

/// A client per endpoint, all connected at once, each within `deadline`. Without a user a
/// client connects lazily and this cannot fail; with one it authenticates here (on a busy
/// host that may take longer than one attempt, so each may take until the deadline, and
/// one that could not reach its member is tried again until then). Once
/// one is in, the others have one attempt more: a member that is down then costs no more
/// than that and is left out (the others serve). A refusal is an answer: it ends the
/// connect (the outer `Err`). `Ok(Err)` when no member answered: the last outage.
async fn connect_all(
    url: &str,
    endpoints: &[String],
    connect: &ConnectOptions,
    deadline: tokio::time::Instant,
    attempt: Duration,
) -> Result<Result<Vec<Client>, ClaimError>, ClaimError> {
    let bound = deadline.saturating_duration_since(tokio::time::Instant::now());
    let mut tries = tokio::task::JoinSet::new();
    for (index, endpoint) in endpoints.iter().enumerate() {
        let (endpoint, connect) = (endpoint.clone(), connect.clone());
        let url = url.to_owned();
        tries.spawn(async move {
            // Again while it cannot be reached (as an authentication that timed out on a
            // member busy with others), until the deadline.
            loop {
                let connecting = Client::connect([endpoint.clone()], Some(connect.clone()));
                let connected = match tokio::time::timeout_at(deadline, connecting).await {
                    Ok(Ok(client)) => Ok(client),
                    Ok(Err(e)) => Err(etcd_error(&url, e)),
                    Err(_) => Err(unreachable(&url, format!("no answer within {bound:?}"))),
                };
                match connected {
                    Err(ClaimError::Unreachable { .. })
                        if tokio::time::Instant::now() + RETRY_PAUSE < deadline =>
                    {
                        tokio::time::sleep(RETRY_PAUSE).await;
                    }
                    done => return (index, done),
                }
            }
        });
    }
    let (mut clients, mut down, mut until) = (Vec::new(), None, None);
    loop {
        let next = match until {
            None => tries.join_next().await,
            Some(until) => match tokio::time::timeout_at(until, tries.join_next()).await {
                Ok(next) => next,
                Err(_) => break,
            },
        };
        let Some(joined) = next else {
            break;
        };
        let Ok((index, connected)) = joined else {
            continue;
        };
        match connected {
            Ok(client) => {
                clients.push((index, client));
                until.get_or_insert_with(|| tokio::time::Instant::now() + attempt);
            }
            Err(e @ ClaimError::Unreachable { .. }) => down = Some(e),
            Err(refused) => return Err(refused),
        }
    }
    if clients.is_empty() {
        return Ok(Err(down.unwrap_or_else(|| unreachable(url, "no endpoint"))));
    }
    // In the URL's order, as the failover goes.
    clients.sort_by_key(|(index, _)| *index);
    Ok(Ok(clients.into_iter().map(|(_, client)| client).collect()))
}
