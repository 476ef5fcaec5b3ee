//! What the PostgreSQL store's refusal tests share: opening a store by URL, claiming the
//! one id of a pool, and a refusal's kind and words.

use flakeid::claim::store::{ClaimRequest, Claimed, FromUrl, StoreUrl};
use flakeid::claim::{ClaimError, ClaimErrorKind, ClaimStore, OpenOptions};
use flakeid_postgres::PostgresStore;

/// The store `url` names, with the default options.
pub fn open(url: &str) -> Result<PostgresStore, ClaimError> {
    PostgresStore::from_url(&StoreUrl::parse(url)?, &OpenOptions::default())
}

/// The one id of a pool of one in `namespace`, claimed.
pub fn claim_one(store: &PostgresStore, namespace: &str) -> Claimed {
    store
        .claim(&ClaimRequest {
            namespace,
            pool: 0..1,
            instance: "test",
        })
        .unwrap()
}

/// Opening `url` is refused with an error of `kind` whose text holds each of `says`.
pub fn refused(url: &str, kind: ClaimErrorKind, says: &[&str]) {
    let err = open(url).unwrap_err();
    let text = err.to_string();
    assert_eq!(err.kind(), kind, "{text}");
    for s in says {
        assert!(text.contains(s), "{s:?} not in: {text}");
    }
}
