//! Every flakeid claim store by its URL, composed in one place: the library's own stores
//! (`file:`, `memory:`, `static:`), etcd (`etcd://`, `etcds://`, feature `etcd`),
//! ZooKeeper (`zookeeper://`, feature `zookeeper`), PostgreSQL (`postgres://`,
//! `postgresql://`, feature `postgres`), and the stores a program registers by
//! scheme ([`register`]). The `flakeid` tool, its service, the Python package and the
//! fleet tests open stores through [`open`] and nothing else.
//!
//! ```no_run
//! use flakeid::claim::{Claims, OpenOptions};
//! use flakeid::{Generator, Layout};
//!
//! let store = flakeid_stores::open("etcd://10.0.0.5:2379", &OpenOptions::default())?;
//! let generator = Generator::builder(Layout::snowflake())
//!     .build_claimed(Claims::new(store).namespace("orders"))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A store written outside this workspace (any [`ClaimStore`] that opens from a
//! [`StoreUrl`] by [`FromUrl`]) is registered once, at the start of `main`; from then on
//! [`open`] reaches it, and so does a tool built on `flakeid_cli::main` (`--claim` and
//! `serve`):
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use flakeid::claim::{ClaimError, MemoryStore, OpenOptions};
//! # use flakeid::claim::store::{FromUrl, StoreUrl};
//! # struct DirStore(MemoryStore);
//! # impl FromUrl for DirStore {
//! #     fn from_url(_: &StoreUrl, _: &OpenOptions) -> Result<Self, ClaimError> { unimplemented!() }
//! # }
//! # impl std::ops::Deref for DirStore { type Target = MemoryStore; fn deref(&self) -> &MemoryStore { &self.0 } }
//! # fn as_store(s: DirStore) -> Arc<dyn flakeid::claim::ClaimStore> { Arc::new(s.0) }
//! flakeid_stores::register_with("dir", |url, options| {
//!     DirStore::from_url(url, options).map(as_store)
//! })?;
//! let store = flakeid_stores::open("dir:/var/lib/ids", &OpenOptions::default())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

use flakeid::claim::store::{FromUrl, StoreUrl};
use flakeid::claim::{ClaimError, ClaimStore, OpenOptions};

/// How a registered scheme's store is opened from its URL.
pub type Opener =
    dyn Fn(&StoreUrl, &OpenOptions) -> Result<Arc<dyn ClaimStore>, ClaimError> + Send + Sync;

/// The schemes of the stores this package composes, with the feature each needs.
const BUILT_IN: &[(&str, Option<&str>)] = &[
    ("file", None),
    ("memory", None),
    ("static", None),
    ("etcd", Some("etcd")),
    ("etcds", Some("etcd")),
    ("zookeeper", Some("zookeeper")),
    ("postgres", Some("postgres")),
    ("postgresql", Some("postgres")),
];

/// The stores registered by scheme, in the order they came.
static REGISTERED: RwLock<Vec<(String, Arc<Opener>)>> = RwLock::new(Vec::new());

/// The store `url` names, opened with the TTL, timeout and access of `options`:
/// [`ClaimError::BadUrl`] for a URL that cannot be read, a scheme nobody registered, or a
/// coordinator this build has no client for ([`lacking_feature`] says which).
pub fn open(url: &str, options: &OpenOptions) -> Result<Arc<dyn ClaimStore>, ClaimError> {
    open_url(&StoreUrl::parse(url)?, options)
}

/// [`open`] of a URL already read.
pub fn open_url(url: &StoreUrl, options: &OpenOptions) -> Result<Arc<dyn ClaimStore>, ClaimError> {
    let scheme = url.scheme();
    if let Some(feature) = lacking_feature(scheme) {
        return Err(url.bad(format!(
            "this build has no {scheme} client: flakeid-stores was built without its `{feature}` feature (turn it on: flakeid-stores = {{ version = \"0.1\", features = [\"{feature}\"] }}{})",
            if feature == "etcd" { "; its build needs protoc, see flakeid-etcd's README" } else { "" }
        )));
    }
    match scheme {
        #[cfg(feature = "etcd")]
        "etcd" | "etcds" => flakeid_etcd::EtcdStore::from_url(url, options).map(shared),
        #[cfg(feature = "zookeeper")]
        "zookeeper" => flakeid_zookeeper::ZooKeeperStore::from_url(url, options).map(shared),
        #[cfg(feature = "postgres")]
        "postgres" | "postgresql" => {
            flakeid_postgres::PostgresStore::from_url(url, options).map(shared)
        }
        "file" | "memory" | "static" => flakeid::claim::open_url(url, options),
        other => match registered(other) {
            Some(opener) => opener(url, options),
            None => Err(url.bad(format!(
                "unknown scheme {other:?}: the stores are {}",
                Schemes
            ))),
        },
    }
}

fn shared<S: ClaimStore + 'static>(store: S) -> Arc<dyn ClaimStore> {
    Arc::new(store)
}

/// The feature of this package a built-in `scheme` needs when this build lacks it
/// (`etcd` for `etcds`); `None` for a scheme it has, or does not know.
pub fn lacking_feature(scheme: &str) -> Option<&'static str> {
    let (_, feature) = BUILT_IN.iter().find(|(s, _)| *s == scheme)?;
    let feature = (*feature)?;
    let built = (feature == "etcd" && cfg!(feature = "etcd"))
        || (feature == "zookeeper" && cfg!(feature = "zookeeper"))
        || (feature == "postgres" && cfg!(feature = "postgres"));
    (!built).then_some(feature)
}

/// Registers the store that opens from `scheme:` URLs by `opener`, for every later
/// [`open`] in this process. Refused ([`RegisterError`]) for a scheme that is not one by
/// RFC 3986 (a letter, then letters, digits, `+`, `-`, `.`), one of the built-in stores'
/// (even where this build lacks its feature), or one registered before.
pub fn register_with(
    scheme: &str,
    opener: impl Fn(&StoreUrl, &OpenOptions) -> Result<Arc<dyn ClaimStore>, ClaimError>
    + Send
    + Sync
    + 'static,
) -> Result<(), RegisterError> {
    let valid = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !valid {
        return Err(RegisterError::BadScheme(scheme.into()));
    }
    if BUILT_IN.iter().any(|(s, _)| s.eq_ignore_ascii_case(scheme)) {
        return Err(RegisterError::BuiltIn(scheme.into()));
    }
    let mut registered = REGISTERED.write().unwrap_or_else(PoisonError::into_inner);
    if registered
        .iter()
        .any(|(s, _)| s.eq_ignore_ascii_case(scheme))
    {
        return Err(RegisterError::Taken(scheme.into()));
    }
    registered.push((scheme.to_ascii_lowercase(), Arc::new(opener)));
    Ok(())
}

/// [`register_with`] for a store that opens by [`FromUrl`].
pub fn register<S: FromUrl + ClaimStore + 'static>(scheme: &str) -> Result<(), RegisterError> {
    register_with(scheme, |url, options| S::from_url(url, options).map(shared))
}

fn registered(scheme: &str) -> Option<Arc<Opener>> {
    let registered = REGISTERED.read().unwrap_or_else(PoisonError::into_inner);
    registered
        .iter()
        .find(|(s, _)| s.eq_ignore_ascii_case(scheme))
        .map(|(_, opener)| opener.clone())
}

/// The schemes [`open`] takes in this process, built-in (those this build has) and
/// registered; its `Display` lists them as the unknown-scheme message does.
#[derive(Debug, Clone, Copy, Default)]
pub struct Schemes;

impl Schemes {
    /// The schemes, built-in first.
    pub fn all(self) -> Vec<String> {
        let mut all: Vec<String> = BUILT_IN
            .iter()
            .filter(|(s, _)| lacking_feature(s).is_none())
            .map(|(s, _)| (*s).to_owned())
            .collect();
        let registered = REGISTERED.read().unwrap_or_else(PoisonError::into_inner);
        all.extend(registered.iter().map(|(s, _)| s.clone()));
        all
    }
}

impl fmt::Display for Schemes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let all = self.all();
        for (i, s) in all.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            match s.as_str() {
                "file" => write!(f, "{sep}file:DIR")?,
                "static" => write!(f, "{sep}static:N")?,
                "etcd" | "etcds" | "zookeeper" => write!(f, "{sep}{s}://HOST:PORT")?,
                "postgres" | "postgresql" => write!(f, "{sep}{s}://HOST/DB")?,
                _ => write!(f, "{sep}{s}:")?,
            }
        }
        Ok(())
    }
}

/// Why [`register_with`] refused a scheme.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegisterError {
    /// Not a URL scheme: it must start with a letter and hold only letters, digits, `+`,
    /// `-` and `.`.
    BadScheme(String),
    /// One of the stores this package composes has it.
    BuiltIn(String),
    /// Another store was registered under it first.
    Taken(String),
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterError::BadScheme(s) => write!(
                f,
                "{s:?} is not a URL scheme: start with a letter, then letters, digits, '+', '-' or '.'"
            ),
            RegisterError::BuiltIn(s) => write!(
                f,
                "{s:?} is a built-in store's scheme: register yours under another name"
            ),
            RegisterError::Taken(s) => write!(
                f,
                "a store is registered as {s:?} already: register each scheme once, at the start of main"
            ),
        }
    }
}

impl std::error::Error for RegisterError {}

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_scheme_reaches_its_own_store() {
        let options = OpenOptions::default();
        assert_eq!(open("memory:", &options).unwrap().url(), "memory:");
        assert_eq!(open("static:7", &options).unwrap().url(), "static:7");
        let dir = std::env::temp_dir().join(format!("flakeid-stores-{}", std::process::id()));
        let file = format!("file:{}", dir.display());
        assert_eq!(open(&file, &options).unwrap().url(), file);
        let _ = std::fs::remove_dir_all(dir);
        // A coordinator URL reaches its client (which finds nobody there), not a refusal
        // of the URL.
        let fast = OpenOptions::default().timeout(core::time::Duration::from_millis(200));
        for url in [
            "etcd://127.0.0.1:9",
            "zookeeper://127.0.0.1:9",
            "postgres://u@127.0.0.1:9/db",
        ] {
            let e = open(url, &fast).unwrap_err();
            let built = lacking_feature(url.split(':').next().unwrap()).is_none();
            assert_eq!(matches!(e, ClaimError::BadUrl { .. }), !built, "{url}: {e}");
            // The client's error stays reachable (each store's own tests downcast it).
            assert_eq!(std::error::Error::source(&e).is_some(), built, "{url}: {e}");
        }
    }

    #[test]
    fn an_unknown_scheme_is_refused_with_the_known_ones() {
        let e = open("nope:x", &OpenOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown scheme \"nope\"")
                && e.contains("file:DIR")
                && e.contains("memory:"),
            "{e}"
        );
        assert_eq!(lacking_feature("nope"), None);
        assert_eq!(lacking_feature("file"), None);
        assert_eq!(
            lacking_feature("etcds"),
            (!cfg!(feature = "etcd")).then_some("etcd")
        );
        // A build without etcd says how to turn it on, and what that build needs.
        if !cfg!(feature = "etcd") {
            let e = open("etcd://127.0.0.1:9", &OpenOptions::default())
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(r#"features = ["etcd"]"#) && e.contains("protoc"),
                "{e}"
            );
        }
    }

    #[test]
    fn registration_takes_a_free_valid_scheme_once() {
        let memory = |url: &StoreUrl, options: &OpenOptions| {
            flakeid::claim::open_url(&StoreUrl::parse("memory:")?, options)
                .map_err(|_| url.bad("unreachable"))
        };
        assert_eq!(
            register_with("Unit-Test+1.x", memory),
            Ok(()),
            "a valid scheme"
        );
        assert_eq!(
            register_with("unit-test+1.X", memory),
            Err(RegisterError::Taken("unit-test+1.X".into()))
        );
        assert_eq!(
            register_with("etcd", memory),
            Err(RegisterError::BuiltIn("etcd".into()))
        );
        for bad in ["", "1a", "a b", "a:b", "ü"] {
            assert_eq!(
                register_with(bad, memory),
                Err(RegisterError::BadScheme(bad.into())),
                "{bad:?}"
            );
        }
        let store = open("UNIT-TEST+1.X:anything", &OpenOptions::default()).unwrap();
        assert_eq!(store.url(), "memory:");
        assert!(Schemes.all().contains(&"unit-test+1.x".to_owned()));
    }
}
