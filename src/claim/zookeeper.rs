//! [`ZooKeeperStore`]: claims on ZooKeeper (feature `zookeeper`): an ephemeral znode per
//! claim, the reservation in a persistent znode whose version fences stale holders.

use core::time::Duration;
use std::collections::{BTreeMap, HashMap};
use std::string::String;
use std::sync::{Arc, Mutex};
use std::vec::Vec;

use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError, MultiWriteError};

use super::remote::{Remote, parse_reserved, unreachable};
use super::{ClaimError, ClaimInfo, ClaimRequest, ClaimStore, Claimed, NodeState};

/// Claims on a ZooKeeper ensemble (feature `zookeeper`), one session per store.
///
/// Znodes, under `/flakeid`:
///
/// | znode | kind | data |
/// |---|---|---|
/// | `/flakeid/NS/nodes/N` | ephemeral (the session's): the claim itself | the holder's instance name |
/// | `/flakeid/NS/reserved/N` | persistent | `RESERVED_UNIX_NS held\|released HOLDER` |
///
/// A claim is one multi: create the ephemeral `nodes/N` and set `reserved/N` at the version
/// read just before (so the reservation read is the last one written). Each renewal is a
/// multi: check that `nodes/N` exists and set `reserved/N` at the version this holder wrote
/// last. A newer holder's claim moves that version, so a stale holder's renewal fails with
/// [`ClaimError::NotOwner`], as it does once its session expired (the session is the lease:
/// its timeout is the TTL). Release sets the final reservation and deletes `nodes/N`.
///
/// Permissions: create, read, write and delete under `/flakeid` (the znodes are created
/// with the open ACL; give the store a chroot'ed connect string to confine it).
pub struct ZooKeeperStore {
    remote: Remote,
    root: String,
    client: Arc<Client>,
    /// The version of `reserved/N` each claim (by token) wrote last.
    versions: Arc<Mutex<HashMap<u64, i32>>>,
    next_token: std::sync::atomic::AtomicU64,
}

impl core::fmt::Debug for ZooKeeperStore {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ZooKeeperStore")
            .field("url", &self.remote.url)
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// The error of one operation of a multi, or of the request.
fn op_error(e: MultiWriteError) -> (Option<usize>, ZkError) {
    match e {
        MultiWriteError::OperationFailed { index, source } => (Some(index), source),
        MultiWriteError::RequestFailed { source } => (None, source),
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
        let url = format!("zookeeper://{hosts}");
        let remote = Remote::new(url.clone(), timeout, "flakeid-zookeeper")?;
        let cluster = String::from(hosts);
        let client = remote.run(async move {
            Client::connector()
                .with_session_timeout(ttl)
                .with_connection_timeout(timeout)
                .with_fail_eagerly()
                .connect(&cluster)
                .await
                .map_err(|e| unreachable(&url, e))
        })?;
        Ok(ZooKeeperStore {
            remote,
            root: "/flakeid".into(),
            client: Arc::new(client),
            versions: Arc::default(),
            next_token: std::sync::atomic::AtomicU64::new(1),
        })
    }

    fn path(&self, namespace: &str, kind: &str, node: u64) -> String {
        format!("{}/{namespace}/{kind}/{node}", self.root)
    }

    /// A ZooKeeper error as a claim error: an expired session is a lost claim.
    fn error(url: &str, claimed: Option<&Claimed>, e: ZkError) -> ClaimError {
        match (e, claimed) {
            (ZkError::SessionExpired | ZkError::NoNode | ZkError::BadVersion, Some(c)) => {
                ClaimError::NotOwner {
                    namespace: c.namespace.clone(),
                    node: c.node,
                }
            }
            (e, _) => unreachable(url, e),
        }
    }
}

impl ClaimStore for ZooKeeperStore {
    fn lease_ttl(&self) -> Option<Duration> {
        // What the server granted, which may differ from what was asked.
        Some(self.client.session_timeout())
    }

    fn url(&self) -> String {
        self.remote.url.clone()
    }

    fn claim(&self, request: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        let url = self.remote.url.clone();
        let client = Arc::clone(&self.client);
        let namespace = String::from(request.namespace);
        let instance = String::from(request.instance);
        let pool = request.pool.clone();
        let dirs = [
            format!("{}/{namespace}/nodes", self.root),
            format!("{}/{namespace}/reserved", self.root),
        ];
        let paths: Vec<(u64, String, String)> = pool
            .clone()
            .map(|n| {
                (
                    n,
                    self.path(&namespace, "nodes", n),
                    self.path(&namespace, "reserved", n),
                )
            })
            .collect();
        let token = self
            .next_token
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let versions = Arc::clone(&self.versions);
        self.remote.run(async move {
            let e = |e: ZkError| unreachable(&url, e);
            let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
            let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
            for dir in &dirs {
                client.mkdir(dir, &persistent).await.map_err(e)?;
            }
            let mut held = 0;
            'ids: for (node, node_path, reserved_path) in paths {
                if client.check_stat(&node_path).await.map_err(e)?.is_some() {
                    held += 1;
                    continue;
                }
                loop {
                    // The reservation, created empty the first time.
                    let (data, stat) = match client.get_data(&reserved_path).await {
                        Ok(found) => found,
                        Err(ZkError::NoNode) => {
                            match client
                                .create(&reserved_path, b"0 released -", &persistent)
                                .await
                            {
                                Ok(_) | Err(ZkError::NodeExists) => continue,
                                Err(err) => return Err(e(err)),
                            }
                        }
                        Err(err) => return Err(e(err)),
                    };
                    let (not_before, _, _) = parse_reserved(&data);
                    let value = format!("{not_before} held {instance}");
                    let mut multi = client.new_multi_writer();
                    multi
                        .add_create(&node_path, instance.as_bytes(), &ephemeral)
                        .map_err(e)?;
                    multi
                        .add_set_data(&reserved_path, value.as_bytes(), Some(stat.version))
                        .map_err(e)?;
                    match multi.commit().await.map_err(op_error) {
                        Ok(results) => {
                            let version = results
                                .iter()
                                .find_map(|r| match r {
                                    zookeeper_client::MultiWriteResult::SetData { stat } => {
                                        Some(stat.version)
                                    }
                                    _ => None,
                                })
                                .unwrap_or(stat.version + 1);
                            versions
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .insert(token, version);
                            return Ok(Claimed {
                                namespace,
                                node,
                                not_before_unix_ns: not_before,
                                fenced: true,
                                token,
                            });
                        }
                        // Someone else holds it now.
                        Err((Some(0), ZkError::NodeExists)) => {
                            held += 1;
                            continue 'ids;
                        }
                        // The reservation moved between the read and the multi: read again.
                        Err((Some(1), ZkError::BadVersion)) => continue,
                        Err((_, err)) => return Err(e(err)),
                    }
                }
            }
            Err(ClaimError::PoolFull {
                namespace,
                pool,
                held,
                waited: Duration::ZERO,
            })
        })
    }

    fn renew(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError> {
        self.write(claimed, reserved_until_unix_ns, false)
    }

    fn release(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError> {
        let result = self.write(claimed, reserved_until_unix_ns, true);
        self.versions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&claimed.token);
        result
    }

    fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        let url = self.remote.url.clone();
        let client = Arc::clone(&self.client);
        let base = format!("{}/{namespace}", self.root);
        self.remote.run(async move {
            let e = |e: ZkError| unreachable(&url, e);
            let mut nodes: BTreeMap<u64, ClaimInfo> = BTreeMap::new();
            for kind in ["reserved", "nodes"] {
                let dir = format!("{base}/{kind}");
                let children = match client.list_children(&dir).await {
                    Ok(children) => children,
                    Err(ZkError::NoNode) => continue,
                    Err(err) => return Err(e(err)),
                };
                for child in children {
                    let Ok(node) = child.parse::<u64>() else {
                        continue;
                    };
                    let data = match client.get_data(&format!("{dir}/{child}")).await {
                        Ok((data, _)) => data,
                        Err(ZkError::NoNode) => continue,
                        Err(err) => return Err(e(err)),
                    };
                    let info = nodes.entry(node).or_insert(ClaimInfo {
                        node,
                        state: NodeState::Expired,
                        holder: None,
                        reserved_until_unix_ns: 0,
                    });
                    if kind == "nodes" {
                        info.state = NodeState::Held;
                        info.holder = Some(String::from_utf8_lossy(&data).into_owned());
                    } else {
                        let (reserved, released, holder) = parse_reserved(&data);
                        info.reserved_until_unix_ns = reserved;
                        info.holder = holder;
                        if released {
                            info.state = NodeState::Released;
                        }
                    }
                }
            }
            Ok(nodes.into_values().collect())
        })
    }
}

impl ZooKeeperStore {
    /// Renewal (`release` false) and release: one multi that checks `nodes/N` exists and
    /// sets `reserved/N` at the version this holder wrote last (and, on release, deletes
    /// `nodes/N`).
    fn write(&self, claimed: &Claimed, reserved: u64, release: bool) -> Result<(), ClaimError> {
        let url = self.remote.url.clone();
        let client = Arc::clone(&self.client);
        let node_path = self.path(&claimed.namespace, "nodes", claimed.node);
        let reserved_path = self.path(&claimed.namespace, "reserved", claimed.node);
        let versions = Arc::clone(&self.versions);
        let c = claimed.clone();
        let Some(version) = versions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&claimed.token)
            .copied()
        else {
            return Err(Self::error(&url, Some(claimed), ZkError::NoNode));
        };
        self.remote.run(async move {
            let e = |e: ZkError| Self::error(&url, Some(&c), e);
            let (holder, _) = client.get_data(&node_path).await.map_err(e)?;
            let holder = String::from_utf8_lossy(&holder).into_owned();
            let state = if release { "released" } else { "held" };
            let value = format!("{reserved} {state} {holder}");
            let mut multi = client.new_multi_writer();
            multi.add_check_version(&node_path, -1).map_err(e)?;
            multi
                .add_set_data(&reserved_path, value.as_bytes(), Some(version))
                .map_err(e)?;
            if release {
                multi.add_delete(&node_path, None).map_err(e)?;
            }
            let results = multi.commit().await.map_err(|m| e(op_error(m).1))?;
            if let Some(stat) = results.iter().find_map(|r| match r {
                zookeeper_client::MultiWriteResult::SetData { stat } => Some(stat.version),
                _ => None,
            }) {
                versions
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(c.token, stat);
            }
            Ok(())
        })
    }
}
