//! The tool's side of claims, below `gen`, `serve` and `claims`: a `--claim` URL opened
//! through `flakeid-stores` (the one composition of every store), the claim flags made
//! into the library's settings, and its errors said with the tool's flags.

use std::sync::Arc;

use flakeid::claim::{ClaimError, ClaimStore, Claims, OpenOptions};

use crate::args::{ClaimArgs, ClaimStoreArgs};
use crate::out::{CliError, CliResult, warn};

/// The store `url` names, or the error the tool prints for `--claim`.
pub(crate) fn open(url: &str, options: &OpenOptions) -> CliResult<Arc<dyn ClaimStore>> {
    built_in(url)?;
    flakeid_stores::open(url, options).map_err(claim_err)
}

/// Refuses a coordinator URL this build of the tool has no client for, before anything else
/// is read for the claim.
pub(crate) fn built_in(url: &str) -> CliResult {
    let scheme = url.split_once(':').map_or(url, |(s, _)| s);
    match flakeid_stores::lacking_feature(scheme) {
        None => Ok(()),
        Some(feature) => Err(CliError::new(
            Some("--claim"),
            format!(
                "this flakeid was built without the {scheme} client (its default features were turned off): install it with `cargo install --locked flakeid-cli` (or `--features {feature}` next to --no-default-features)"
            ),
        )),
    }
}

fn claim_err(e: ClaimError) -> CliError {
    CliError::new(Some("--claim"), in_the_tools_words(&e))
}

/// `--ttl` is the lease of a coordinator; a file or static claim has none, and a silently
/// ignored flag would mislead.
fn refuse_ttl_without_lease(url: &str, a: &ClaimArgs) -> CliResult {
    let scheme = url.split_once(':').map_or(url, |(s, _)| s);
    if a.ttl.is_some() && matches!(scheme, "file" | "static") {
        return Err(CliError::new(
            Some("--ttl"),
            format!(
                "{scheme}: claims have no lease to time out ({}): leave --ttl out, or claim on etcd://, zookeeper:// or memory:",
                if scheme == "file" {
                    "the OS drops a file claim's lock when its process dies"
                } else {
                    "a static node id is never taken back"
                }
            ),
        ));
    }
    Ok(())
}

/// How the store is opened: the password of the URL's `user=`, from
/// `--claim-password-file` or `FLAKEID_CLAIM_PASSWORD` (never a flag's value).
pub(crate) fn open_options(a: &ClaimStoreArgs) -> CliResult<flakeid::claim::OpenOptions> {
    use flakeid::claim::{OpenOptions, Secret};
    let options = OpenOptions::default();
    if let Some(path) = &a.claim_password_file {
        let secret =
            Secret::from_file(path).map_err(|e| CliError::new(Some("--claim-password-file"), e))?;
        return Ok(options.password(secret));
    }
    match std::env::var("FLAKEID_CLAIM_PASSWORD") {
        Ok(p) if !p.is_empty() => Ok(options.password(Secret::new(p))),
        _ => Ok(options),
    }
}

/// The claim settings the flags name.
/// Refuses first what needs no store: `--ttl` without a lease, a store this build lacks.
pub(crate) fn claims_of(url: &str, a: &ClaimArgs) -> CliResult<Claims> {
    refuse_ttl_without_lease(url, a)?;
    built_in(url)?;
    let mut options = open_options(&a.store)?;
    if let Some(ttl) = a.ttl {
        options = options.ttl(ttl);
    }
    let mut claims = Claims::new(open(url, &options)?).namespace(a.store.namespace());
    if let Some(pool) = &a.nodes {
        claims = claims.nodes(pool.clone());
    }
    if let Some(window) = a.window {
        claims = claims.window(window);
    }
    if let Some(instance) = &a.instance {
        claims = claims.instance(instance.clone());
    }
    if let Some(wait) = a.pool_wait {
        claims = claims.pool_wait(wait);
    }
    warn_since(&**claims.store(), 0);
    Ok(claims)
}

/// Prints the store's warnings after the first `shown` (those printed already): what it
/// found unsafe at open, and what its claim repaired.
pub(crate) fn warn_since(store: &dyn flakeid::claim::ClaimStore, shown: usize) {
    for w in store.warnings().iter().skip(shown) {
        warn(format_args!("flakeid: warning: {w}"));
    }
}

/// A claim's build error, with the flag it is about.
pub(crate) fn claim_error(e: ClaimError) -> CliError {
    let flag = match &e {
        ClaimError::BadPool { .. } | ClaimError::NodeOutsidePool { .. } => Some("--nodes"),
        ClaimError::WindowTooShort { .. }
        | ClaimError::WindowTooLong { .. }
        | ClaimError::RenewalSlowerThanWindow { .. }
        | ClaimError::RenewalTooOften { .. } => Some("--window"),
        ClaimError::RenewalTooRare { .. } | ClaimError::TtlTooShort { .. } => Some("--ttl"),
        ClaimError::LayoutMismatch { .. } => Some("--layout"),
        ClaimError::PoolFull { .. } => Some("--pool-wait"),
        ClaimError::BadNamespace { .. } => Some("--namespace"),
        ClaimError::ClockBehind { .. } => Some("--max-wait"),
        ClaimError::BadUrl { .. }
        | ClaimError::Io { .. }
        | ClaimError::PasswordInUrl { .. }
        | ClaimError::NoPassword { .. } => Some("--claim"),
        ClaimError::Refused { store, .. } if store.starts_with("file:") => Some("--claim"),
        _ => None,
    };
    CliError::new(flag, in_the_tools_words(&e))
}

/// The library's message, and where the library names its own API, the tool's flags
/// that do the same.
fn in_the_tools_words(e: &ClaimError) -> String {
    match remedy(e) {
        Some(remedy) => format!("{e} ({remedy})"),
        None => e.to_string(),
    }
}

/// The tool's flags for the fix the library names by its API, where there are some (also
/// the service's, `flakeid_serve::Config::claim_remedy`).
pub(crate) fn remedy(e: &ClaimError) -> Option<String> {
    Some(match e {
        ClaimError::PasswordInUrl { .. } | ClaimError::NoPassword { .. } => {
            "here: --claim-password-file FILE or FLAKEID_CLAIM_PASSWORD".into()
        }
        ClaimError::PoolFull { corrupt, .. } if !corrupt.is_empty() => {
            "`flakeid claims` lists the unreadable ones, `--repair NODE` repairs one".into()
        }
        ClaimError::Corrupt { .. } => "repair it with `flakeid claims --repair NODE`".into(),
        ClaimError::StoreForgot {
            store, namespace, ..
        } => format!(
            "repair with `flakeid claims --claim {store} --namespace {namespace} --repair NODE --window DURATION`"
        ),
        _ => return None,
    })
}
