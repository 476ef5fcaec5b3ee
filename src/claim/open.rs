//! Stores by URL ([`open`], [`open_with`], [`OpenOptions`]), and the checks of the names a
//! claim is made under (namespace, instance).

use core::time::Duration;
use std::string::String;
use std::sync::Arc;
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
use std::vec::Vec;

#[cfg(feature = "etcd")]
use super::EtcdStore;
#[cfg(unix)]
use super::FileStore;
#[cfg(feature = "zookeeper")]
use super::ZooKeeperStore;
use super::access::redact;
use super::{Access, ClaimError, ClaimStore, MemoryStore, Secret, StaticNode, static_node};

/// The store a URL names:
///
/// | URL | store |
/// |---|---|
/// | `file:DIR` (or `file://DIR`) | [`FileStore`] in `DIR`: one host, OS locks, fsynced reservations; owner-only files |
/// | `file:DIR?share=group` | the same, shared with the owner's group ([`FileStore::shared_with_group`]) |
/// | `memory:` | a new [`MemoryStore`]: this process only, leases of [`OpenOptions::ttl`] |
/// | `static:N` | [`StaticNode`]: node id N, no fence |
/// | `static:pod` or `static:pod+K` | [`StaticNode::from_pod_name`]: the ordinal of a StatefulSet pod (`$POD_NAME`, else `$HOSTNAME`, else the host name), plus K |
///
/// | `etcd://HOST:PORT[,HOST:PORT...][?QUERY]` | [`EtcdStore`] (feature `etcd`): leases of [`OpenOptions::ttl`] |
/// | `etcds://HOST:PORT[,HOST:PORT...][?QUERY]` | the same over TLS |
/// | `zookeeper://HOST:PORT[,HOST:PORT...][/CHROOT][?QUERY]` | [`ZooKeeperStore`] (feature `zookeeper`): sessions of [`OpenOptions::ttl`], under the chroot if given |
///
/// The query says how the store authenticates ([`Access`]): for example
/// `etcds://10.0.0.5:2379?ca=/etc/flakeid/ca.pem&cert=/etc/flakeid/client.pem&key=/etc/flakeid/client-key.pem&user=flakeid&password-file=/run/secrets/etcd`
/// or `zookeeper://10.0.0.7:2181?user=flakeid&password-file=/run/secrets/zk`.
///
/// In a build without the `etcd` or `zookeeper` feature, its URL is refused with a message
/// that says which feature to build with.
pub fn open(url: &str) -> Result<Arc<dyn ClaimStore>, ClaimError> {
    open_with(url, &OpenOptions::default())
}

/// How [`open_with`] opens a network store.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenOptions {
    /// A claim's lease TTL on a coordinator (default 10 s): a holder that stops renewing
    /// loses its id this long after its last renewal.
    pub ttl: Duration,
    /// The bound on connecting and on each request (default 5 s).
    pub timeout: Duration,
    /// TLS and authentication; the URL's query adds to it.
    pub access: Access,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            ttl: Duration::from_secs(10),
            timeout: Duration::from_secs(5),
            access: Access::default(),
        }
    }
}

impl OpenOptions {
    /// The lease TTL.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The bound on connecting and on each request.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The password of the URL's `user=` (instead of its `password-file=`).
    pub fn password(mut self, password: Secret) -> Self {
        self.access.password = Some(password);
        self
    }
}

/// [`open`] with the TTL and timeout of a network store.
pub fn open_with(url: &str, options: &OpenOptions) -> Result<Arc<dyn ClaimStore>, ClaimError> {
    let bad = |reason: &str| ClaimError::BadUrl {
        url: redact(url),
        reason: reason.into(),
    };
    let (scheme, rest) = url
        .split_once(':')
        .ok_or_else(|| bad("no scheme: give file:DIR, memory:, static:N or static:pod"))?;
    match scheme {
        #[cfg(not(unix))]
        "file" => Err(bad(
            "the file store is built for Unix (openat, flock, owner checks): on this system use a coordinator, memory: or static:",
        )),
        #[cfg(unix)]
        "file" => {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            let (path, share) = match path.rsplit_once("?share=") {
                Some((path, share)) => (path, Some(share)),
                None => (path, None),
            };
            if path.is_empty() {
                return Err(bad("file: needs a directory, as in file:/var/lib/flakeid"));
            }
            let store = FileStore::open(path)?;
            match share {
                None | Some("owner") => Ok(Arc::new(store)),
                Some("group") => Ok(Arc::new(store.shared_with_group())),
                Some(_) => Err(bad(
                    "share= takes owner (the default: 0600 files, 0700 directories) or group (0660, 0770)",
                )),
            }
        }
        "memory" if rest.is_empty() || rest == "//" => Ok(Arc::new(MemoryStore::with_clock(
            options.ttl,
            crate::clock::SystemClock,
        ))),
        "memory" => Err(bad("memory: takes nothing after the colon")),
        "static" => Ok(Arc::new(StaticNode::from_url_rest(rest).map_err(
            |e| match e {
                ClaimError::BadUrl { reason, .. } => bad(&reason),
                e => e,
            },
        )?)),
        #[cfg(feature = "etcd")]
        "etcd" | "etcds" => {
            let (rest, mut options) = query(url, rest, options)?;
            options.access.tls |= scheme == "etcds";
            let endpoints = host_ports(rest, "etcd://127.0.0.1:2379").map_err(|r| bad(&r))?;
            if options.ttl < Duration::from_secs(1) {
                return Err(bad("the lease TTL is at least 1s"));
            }
            Ok(Arc::new(EtcdStore::connect_with(&endpoints, &options)?))
        }
        #[cfg(not(feature = "etcd"))]
        "etcd" | "etcds" => Err(bad(
            "this build has no etcd store: build flakeid with --features etcd",
        )),
        #[cfg(feature = "zookeeper")]
        "zookeeper" => {
            let (rest, options) = query(url, rest, options)?;
            if options.access.tls {
                return Err(bad(
                    "ca=, cert= and key= are etcd's: this version reaches ZooKeeper without TLS (authenticate with user= and password-file=, and reach the ensemble over a private network)",
                ));
            }
            // A chroot after the hosts (`zookeeper://a:2181,b:2181/apps/ids`): every znode
            // lives under it, which must exist.
            let (rest, chroot) = match rest
                .strip_prefix("//")
                .and_then(|l| l.find('/').map(|i| i + 2))
            {
                Some(i) if i + 1 < rest.len() => rest.split_at(i),
                _ => (rest, ""),
            };
            if chroot.ends_with('/') || chroot.contains("//") {
                return Err(bad(
                    "a chroot is /PATH after the hosts, as zookeeper://10.0.0.7:2181/apps/ids, without a trailing or double slash",
                ));
            }
            let hosts = host_ports(rest, "zookeeper://127.0.0.1:2181")
                .map_err(|r| bad(&r))?
                .join(",")
                + chroot;
            Ok(Arc::new(ZooKeeperStore::connect_with(&hosts, &options)?))
        }
        #[cfg(not(feature = "zookeeper"))]
        "zookeeper" => Err(bad(
            "this build has no ZooKeeper store: build flakeid with --features zookeeper",
        )),
        _ => Err(bad(
            "unknown scheme: give file:DIR, memory:, static:N or static:pod",
        )),
    }
}

/// A network store's URL rest split at its query: the hosts part, and `options` with the
/// query's access read over theirs.
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
fn query<'a>(
    url: &str,
    rest: &'a str,
    options: &OpenOptions,
) -> Result<(&'a str, OpenOptions), ClaimError> {
    let (hosts, query) = rest.split_once('?').unwrap_or((rest, ""));
    let access = options.access.clone().with_query(url, query)?;
    Ok((
        hosts,
        OpenOptions {
            access,
            ..options.clone()
        },
    ))
}

/// What follows `etcd:` or `zookeeper:`: `//HOST:PORT[,HOST:PORT...]`, as a list; or why
/// not, with `example`.
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
fn host_ports(rest: &str, example: &str) -> Result<Vec<String>, String> {
    let bad = || format!("give //HOST:PORT[,HOST:PORT...], each endpoint HOST:PORT, as {example}");
    let list = rest
        .strip_prefix("//")
        .ok_or_else(bad)?
        .trim_end_matches('/');
    let endpoints: Vec<String> = list.split(',').map(str::to_string).collect();
    let valid = |e: &String| {
        e.rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
    };
    if list.is_empty() || !endpoints.iter().all(valid) {
        return Err(bad());
    }
    Ok(endpoints)
}

/// Checks a namespace: 1 to 128 of `A-Z a-z 0-9 . _ -`, not `.` or `..` (it names a
/// directory or a key prefix in every store).
pub fn check_namespace(namespace: &str) -> Result<(), ClaimError> {
    let bad = |reason: &'static str| ClaimError::BadNamespace {
        namespace: namespace.into(),
        reason,
    };
    if namespace.is_empty() {
        return Err(bad("it is empty"));
    }
    if namespace.len() > 128 {
        return Err(bad("it is longer than 128 bytes"));
    }
    if namespace == "." || namespace == ".." {
        return Err(bad("it is a path component (. or ..)"));
    }
    if namespace.contains('/') {
        return Err(bad("it contains '/'"));
    }
    if namespace.contains('\0') {
        return Err(bad("it contains a NUL byte"));
    }
    if !namespace
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err(bad(
            "it has a character other than letters, digits, '.', '_' and '-'",
        ));
    }
    Ok(())
}

/// The default instance name: `host:pid`.
pub fn default_instance() -> String {
    format!("{}:{}", static_node::host_name(), std::process::id())
}
