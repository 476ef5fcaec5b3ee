//! The tool's composition root for claims: a `--claim` URL, read once, mapped to its store
//! (`etcd://` and `etcds://` to flakeid-etcd, `zookeeper://` to flakeid-zookeeper, the rest
//! to the library's own stores).

use std::sync::Arc;

#[cfg(any(feature = "etcd", feature = "zookeeper"))]
use flakeid::claim::store::FromUrl;
use flakeid::claim::store::StoreUrl;
use flakeid::claim::{self, ClaimError, ClaimStore, OpenOptions};

use crate::{CliError, CliResult};

/// The store `url` names, or the error the tool prints for `--claim`.
pub(crate) fn open(url: &str, options: &OpenOptions) -> CliResult<Arc<dyn ClaimStore>> {
    built_in(url)?;
    let url = StoreUrl::parse(url).map_err(claim_err)?;
    let store: Result<Arc<dyn ClaimStore>, ClaimError> = match url.scheme() {
        #[cfg(feature = "etcd")]
        "etcd" | "etcds" => {
            flakeid_etcd::EtcdStore::from_url(&url, options).map(|s| Arc::new(s) as _)
        }
        #[cfg(feature = "zookeeper")]
        "zookeeper" => {
            flakeid_zookeeper::ZooKeeperStore::from_url(&url, options).map(|s| Arc::new(s) as _)
        }
        _ => claim::open_url(&url, options),
    };
    store.map_err(claim_err)
}

/// Refuses a coordinator URL this build of the tool has no client for, before anything else
/// is read for the claim.
pub(crate) fn built_in(url: &str) -> CliResult {
    let scheme = url.split_once(':').map_or(url, |(s, _)| s);
    let lacking = ((scheme == "etcd" || scheme == "etcds") && !cfg!(feature = "etcd"))
        || (scheme == "zookeeper" && !cfg!(feature = "zookeeper"));
    if lacking {
        return Err(not_built_in(scheme));
    }
    Ok(())
}

fn claim_err(e: ClaimError) -> CliError {
    CliError::new(Some("--claim"), e)
}

/// A coordinator URL this build of the tool has no client for, and how to build one.
fn not_built_in(scheme: &str) -> CliError {
    let feature = if scheme == "zookeeper" {
        "zookeeper"
    } else {
        "etcd"
    };
    CliError::new(
        Some("--claim"),
        format!(
            "this flakeid was built without the {scheme} client (its default features were turned off): install it with `cargo install --locked flakeid-cli` (or `--features {feature}` next to --no-default-features)"
        ),
    )
}
