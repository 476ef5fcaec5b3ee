//! Claims of [flakeid](https://docs.rs/flakeid) node ids on ZooKeeper: [`ZooKeeperStore`],
//! an ephemeral znode per claim, the reservation in a persistent znode whose version fences
//! stale holders.
//!
//! ```no_run
//! use flakeid::claim::{Claims, OpenOptions};
//! use flakeid::claim::store::{FromUrl, StoreUrl};
//! use flakeid::{Generator, Layout};
//! use flakeid_zookeeper::ZooKeeperStore;
//!
//! let url = StoreUrl::parse("zookeeper://10.0.0.7:2181?user=flakeid&password-file=/run/secrets/zk")?;
//! let store = ZooKeeperStore::from_url(&url, &OpenOptions::default())?;
//! let generator = Generator::builder(Layout::snowflake())
//!     .build_claimed(Claims::new(store).namespace("orders"))?;
//! println!("{}", generator.next_id()?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The store keeps the contract of [`ClaimStore`] (the `flakeid-testkit` conformance suite
//! runs against a real ZooKeeper in this crate's tests).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use core::time::Duration;
use std::collections::{BTreeMap, HashMap};
use std::string::String;
use std::sync::{Arc, Mutex};
use std::vec::Vec;

use zookeeper_client::{
    Acl, Acls, AuthId, Client, CreateMode, Error as ZkError, MultiWriteError, MultiWriteResult,
    Permission, SessionState, StateWatcher,
};

use flakeid::claim::store::{
    ClaimRequest, Claimed, FromUrl, Keys, Listing, Record, Repaired, Runtime as Remote, StoreUrl,
    Ticket, Waiter, claim_record, claim_token, parse_claim_record, parse_reserved, unreachable,
};
use flakeid::claim::{
    ClaimError, ClaimInfo, ClaimStore, NamespaceInfo, OpenOptions, ReadAccess, Reason, Secret,
    check_namespace,
};
mod acl;
mod claim;
mod records;
mod store;
mod write;
use write::{READ_BACK_TRIES, op_error, owns, set_version};

/// Claims on a ZooKeeper ensemble one session at a time per store.
///
/// Znodes, under `/flakeid`:
///
/// | znode | kind | data |
/// |---|---|---|
/// | `/flakeid/NS/nodes/N` | ephemeral (the session's): the claim itself | `HOLDER\nclaim TOKEN`: the holder's instance name and the claim's own token |
/// | `/flakeid/NS/reserved/N` | persistent | `RESERVED_UNIX_NS held\|released HOLDER` |
/// | `/flakeid/NS/layout` | persistent | the layout of the namespace's IDs |
/// | `/flakeid/NS/line/TOKEN-SEQ` | ephemeral sequential: a claimant waiting for a free id ([`ClaimStore::join_line`]), served in `SEQ` order | the waiter's instance name |
///
/// A claim is one multi: create the ephemeral `nodes/N` and set `reserved/N` at the version
/// read just before (so the reservation read is the last one written). Each renewal is a
/// multi: check that `nodes/N` exists and set `reserved/N`, to the larger of what this
/// holder stored and the new reservation, at the version this holder wrote last. A newer
/// holder's claim moves that version, so a stale holder's renewal fails with
/// [`ClaimError::NotOwner`], as it does once its session expired (the session is the
/// lease: its timeout is the TTL). Release sets the final reservation and deletes
/// `nodes/N`.
///
/// - Each claim has its own token ([`claim_token`]), written into `nodes/N` and checked
///   by every renewal, release and read-back: a claim that was lost stays lost even when
///   the same session and instance name claimed the id again, and nothing done with it
///   (a late renewal or release) touches the later claim.
/// - A renewal whose outcome is unknown (its reply was lost with the connection) or that
///   meets a moved version reads back: while `nodes/N` is still this claim's (this
///   session's, with its token), no other holder can have written `reserved/N`, so it
///   adopts the stored version and writes again.
/// - A claim whose reply was lost reads back `nodes/N` by its token: taken if it landed,
///   tried again if it did not; if the ensemble does not answer, the next claim deletes
///   it (if still this session's), so a lost reply never leaves an id held by nobody.
/// - After its session expired, the store opens a new one for the next claim (the claims
///   of the old one are lost, as they must be).
/// - A reservation that cannot be read is [`ClaimError::Corrupt`]: the claim skips that id
///   and nothing overwrites it.
/// - Dropping the store closes its session, so its ephemeral znodes go at once rather than
///   a session timeout later.
///
/// Access: with a user (`zookeeper://HOST:PORT?user=NAME&password-file=FILE`, digest
/// auth) every znode is created with an ACL that lets only that identity create, write
/// and delete it (ZooKeeper's `auth` scheme, "creator only"), and lets anyone read it
/// (`read=open`, the default, so `flakeid claims` needs no password) or only that
/// identity (`read=creator`). Another identity, or an unauthenticated client, then gets
/// NoAuth on any write, which is [`ClaimError::Refused`]: it can neither take an id nor
/// move a reservation. Every claim first checks the ACL of each znode it relies on (the
/// root, the namespace, `nodes`, `reserved`, the layout and each reservation it reuses:
/// ZooKeeper checks a delete against the parent's ACL, so an open `nodes` lets anyone
/// delete a live claim). One that lets another identity change it (made before the user
/// was given, or by a squatter) is repaired where this identity may change its ACL (and
/// [`ClaimStore::warnings`] names it), else the claim is refused with the znode, its ACL
/// and the `setAcl` that fixes it. Without a user the znodes are open to every client of
/// the ensemble (the ACL `world:anyone`), and [`ClaimStore::warnings`] says so.
///
/// One identity per root: `/flakeid` belongs to whoever created it first. Give each
/// identity its own root with a chroot (`zookeeper://HOST:PORT/CHROOT`, which must exist).
pub struct ZooKeeperStore {
    /// The session new claims are made in (`None` only in the drop, which closes it).
    client: Mutex<Option<Arc<Client>>>,
    /// Each claim (by token): the session it was made in, the version of `reserved/N` it
    /// wrote last and the reservation it stored.
    claims: Arc<Mutex<HashMap<u64, Held>>>,
    /// Claims whose reply was lost and whose read-back did not answer: `nodes/N` and the
    /// token, freed by the next claim if still this session's.
    orphans: Arc<Mutex<Vec<(String, u64)>>>,
    connect: Connect,
    remote: Remote,
    /// What the ACL checks repaired, for [`ClaimStore::warnings`].
    notices: Arc<Mutex<Vec<String>>>,
}

#[derive(Clone)]
struct Held {
    client: Arc<Client>,
    version: i32,
    stored: u64,
}

/// How long the client can be without a server when the ensemble's leader dies: the
/// ensemble elects another (0.4-1.3 s measured on three servers on loopback, ticks of 1 and
/// 2 s) while the client, refused by every member, backs off between rounds (0.3 s, then
/// 0.6 s). With renewals every third of the TTL, the smallest TTL this leaves is 4 s.
pub const LEADER_LOSS: Duration = Duration::from_secs(2);

/// What opening a session takes.
#[derive(Clone)]
struct Connect {
    hosts: String,
    ttl: Duration,
    timeout: Duration,
    root: String,
    /// Digest auth: `user` and its password.
    auth: Option<(String, Secret)>,
    /// The digest identity of `auth` (`USER:HASH`), as ACLs name it.
    me: Option<String>,
    read: ReadAccess,
}

impl core::fmt::Debug for ZooKeeperStore {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ZooKeeperStore")
            .field("url", &self.remote.url)
            .field("root", &self.connect.root)
            .finish_non_exhaustive()
    }
}

/// A write the znode's ACL does not grant this client.
fn no_auth(url: &str) -> ClaimError {
    ClaimError::Refused {
        store: url.into(),
        reason: "the znodes' ACL does not let this identity write them (NoAuth): they belong to the identity that created them; connect with its user= and password-file=, or give this identity its own root (a chroot: zookeeper://HOST:PORT/CHROOT)".into(),
    }
}

/// Whether a session can no longer be used.
fn ended(client: &Client) -> bool {
    matches!(
        client.state(),
        SessionState::Expired | SessionState::Closed | SessionState::AuthFailed
    )
}

impl Connect {
    /// How long the client waits on a server that stopped answering before it moves to
    /// the next, with sessions of `ttl`: two fifths of it, or the request timeout if
    /// shorter, so the session lives on through the move.
    fn leave_after(&self, ttl: Duration) -> Duration {
        self.timeout.min(ttl * 2 / 5)
    }

    async fn open(&self, url: &str) -> Result<Client, ClaimError> {
        let connector = Client::connector()
            .with_session_timeout(self.ttl)
            .with_connection_timeout(self.leave_after(self.ttl))
            .with_fail_eagerly();
        let connector = match &self.auth {
            Some((user, password)) => {
                let digest = format!("{user}:{}", password.expose());
                connector.with_auth("digest", digest.as_bytes())
            }
            None => connector,
        };
        connector.connect(&self.hosts).await.map_err(|e| match e {
            ZkError::AuthFailed => ClaimError::Refused {
                store: url.into(),
                reason: "the server refused the digest credentials (AuthFailed): check user= and the password file".into(),
            },
            e => unreachable(url, Reason::from_error(e)),
        })
    }

    /// The ACL of every znode the store creates: all to this identity (`auth`), and read
    /// to anyone unless `read=creator`; open to all without a user.
    fn acls(&self) -> Vec<Acl> {
        match (&self.auth, self.read) {
            (None, _) => Acls::anyone_all().to_vec(),
            (Some(_), ReadAccess::Creator) => Acls::creator_all().to_vec(),
            (Some(_), _) => vec![
                Acl::new(Permission::ALL, AuthId::authed()),
                Acl::new(Permission::READ, AuthId::anyone()),
            ],
        }
    }
}

impl ZooKeeperStore {
    /// Connects to `hosts` (`host:port,host:port`), bounded by `timeout`, which also
    /// bounds every request later, with a session of `ttl` (the server may round it into
    /// its own bounds: 2 to 20 ticks). Fails with [`ClaimError::Unreachable`] naming the
    /// hosts if no server answers in time.
    pub fn connect(
        hosts: &str,
        ttl: Duration,
        timeout: Duration,
    ) -> Result<ZooKeeperStore, ClaimError> {
        ZooKeeperStore::connect_with(hosts, &OpenOptions::default().ttl(ttl).timeout(timeout))
    }

    /// [`connect`](ZooKeeperStore::connect) with the TTL, the timeout and the digest
    /// authentication and read ACL of `options` ([`Access`](flakeid::claim::Access): `user`,
    /// `password`, `read`).
    pub fn connect_with(hosts: &str, options: &OpenOptions) -> Result<ZooKeeperStore, ClaimError> {
        let url = format!("zookeeper://{hosts}");
        let remote = Remote::new(url.clone(), options.timeout, "flakeid-zookeeper")?;
        let access = &options.access;
        let auth = access.user.clone().zip(access.password.clone());
        let connect = Connect {
            hosts: hosts.into(),
            ttl: options.ttl,
            timeout: options.timeout,
            root: "/flakeid".into(),
            me: auth
                .as_ref()
                .map(|(user, password)| acl::digest_id(user, password.expose())),
            auth,
            read: access.read,
        };
        let c = connect.clone();
        let client = remote.run(async move { c.open(&url).await })?;
        Ok(ZooKeeperStore {
            client: Mutex::new(Some(Arc::new(client))),
            claims: Arc::default(),
            orphans: Arc::default(),
            connect,
            remote,
            notices: Arc::default(),
        })
    }

    /// Where `namespace`'s znodes are, under the root.
    fn keys(&self, namespace: &str) -> Keys {
        Keys::new(&self.connect.root, namespace)
    }

    /// The session for new claims: the current one, or a new one if it ended.
    fn session(&self) -> Result<Arc<Client>, ClaimError> {
        let current = self
            .client
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(current) = current.filter(|c| !ended(c)) {
            return Ok(current);
        }
        let (c, url) = (self.connect.clone(), self.remote.url.clone());
        let fresh = Arc::new(self.remote.run(async move { c.open(&url).await })?);
        *self.client.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::clone(&fresh));
        Ok(fresh)
    }

    /// A ZooKeeper error as a claim error: NoAuth a refusal; of a claim's writes
    /// (`claimed`), an expired session, a vanished `nodes/N` or a moved version a lost
    /// claim; the rest unreachable.
    fn error(url: &str, claimed: Option<&Claimed>, e: ZkError) -> ClaimError {
        match (e, claimed) {
            (ZkError::NoAuth, _) => no_auth(url),
            (ZkError::SessionExpired | ZkError::NoNode | ZkError::BadVersion, Some(c)) => {
                ClaimError::NotOwner {
                    namespace: c.namespace.clone(),
                    node: c.node,
                }
            }
            (e, _) => unreachable(url, Reason::from_error(e)),
        }
    }
}

impl FromUrl for ZooKeeperStore {
    /// `zookeeper://HOST:PORT[,HOST:PORT...][/CHROOT][?QUERY]`: every znode under the chroot
    /// (which must exist) if given; the query's access (`user`, `password-file`, `read`)
    /// over `options`'.
    fn from_url(url: &StoreUrl, options: &OpenOptions) -> Result<ZooKeeperStore, ClaimError> {
        let access = url.access(options.access.clone())?;
        if access.tls {
            return Err(url.bad(
                "ca=, cert= and key= are etcd's: this version reaches ZooKeeper without TLS (authenticate with user= and password-file=, and reach the ensemble over a private network)",
            ));
        }
        // A lone `/` after the hosts is no chroot.
        let chroot = if url.path() == "/" { "" } else { url.path() };
        if chroot.ends_with('/') || chroot.contains("//") {
            return Err(url.bad(
                "a chroot is /PATH after the hosts, as zookeeper://10.0.0.7:2181/apps/ids, without a trailing or double slash",
            ));
        }
        let hosts = url.hosts("zookeeper://127.0.0.1:2181")?.join(",") + chroot;
        let mut options = options.clone();
        options.access = access;
        ZooKeeperStore::connect_with(&hosts, &options)
    }
}

impl Drop for ZooKeeperStore {
    /// Closes the store's sessions: every handle on them goes, then the drop waits
    /// (briefly) until each session says it closed, so its ephemeral nodes are gone
    /// before the process goes on (or exits).
    fn drop(&mut self) {
        let mut sessions: Vec<StateWatcher> = Vec::new();
        if let Some(client) = self
            .client
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            sessions.push(client.state_watcher());
        }
        for (_, held) in self
            .claims
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
        {
            sessions.push(held.client.state_watcher());
        }
        let _ = self.remote.run(async move {
            for mut session in sessions {
                let closed = async {
                    while !matches!(
                        session.peek_state(),
                        SessionState::Closed | SessionState::Expired | SessionState::AuthFailed
                    ) {
                        session.changed().await;
                    }
                };
                let _ = tokio::time::timeout(Duration::from_secs(1), closed).await;
            }
            Ok(())
        });
    }
}
