//! The cases any store on a shared database must pass (a SQL store beside other teams'
//! roles): a schema that another role made, may write to, or that rewrites the store's
//! writes, or whose tables lack what the store's statements rely on, is refused when the
//! store opens, and a write that was rewritten after it opened is never taken as done.
//! Each of these let two holders mint the same IDs on PostgreSQL before it was refused.
//!
//! The kit names the wrong states ([`Tampering`]); the backend makes each in its own
//! dialect ([`SharedDatabase::tamper`]), or says it has no such thing.

use std::sync::Arc;

use flakeid::claim::{ClaimError, ClaimErrorKind, ClaimStore};

use crate::{SECOND, T, request};

/// A wrong state of the store's schema, as another team's role or a hand-made table
/// leaves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Tampering {
    /// Another role made the schema and the store's tables first (with the store's own
    /// statements), and let the store's role use them.
    SquattedSchema,
    /// Another role may update the store's table of claims.
    WriteGrant,
    /// Another role may update the column of reservations (a column grant only).
    ColumnGrant,
    /// A trigger on the table of claims keeps each row's reservation as it was: the
    /// store's write of a new one is silently not stored.
    Trigger,
    /// A rule on the table of claims turns the store's updates into nothing.
    Rule,
    /// Row-level security on the table of claims.
    RowSecurity,
    /// The table of claims has lost its primary key (a claim's "insert if absent" then
    /// inserts twice).
    NoPrimaryKey,
    /// The table of claims is unlogged: a crash empties it, and no standby has it.
    Unlogged,
}

impl Tampering {
    /// Every tampering, with the kind of error the store must refuse it by: access
    /// (whom the schema trusts) or corrupt (what the statements rely on).
    pub const ALL: [(Tampering, ClaimErrorKind); 8] = [
        (Tampering::SquattedSchema, ClaimErrorKind::Access),
        (Tampering::WriteGrant, ClaimErrorKind::Access),
        (Tampering::ColumnGrant, ClaimErrorKind::Access),
        (Tampering::Trigger, ClaimErrorKind::Access),
        (Tampering::Rule, ClaimErrorKind::Access),
        (Tampering::RowSecurity, ClaimErrorKind::Access),
        (Tampering::NoPrimaryKey, ClaimErrorKind::Corrupt),
        (Tampering::Unlogged, ClaimErrorKind::Corrupt),
    ];
}

/// A store on a database other roles share, and the wrong states only its test can make.
pub trait SharedDatabase {
    /// The store on schema `schema` (a lower-case identifier), opened as the store's
    /// role; the first open of a schema that does not exist makes it.
    fn open(&self, schema: &str) -> Result<Arc<dyn ClaimStore>, ClaimError>;
    /// Makes `tampering` on schema `schema`: an existing one (opened before), except for
    /// [`Tampering::SquattedSchema`], which makes it. `false` where the database has no
    /// such thing (the case is skipped, saying so).
    fn tamper(&self, schema: &str, tampering: Tampering) -> bool;
}

/// Every tampering on a schema of its own (`{tag}_0`, `{tag}_1`, ...) is refused at open,
/// by the kind [`Tampering::ALL`] gives; a clean schema opens and claims; and a renewal
/// whose write a trigger added later kept from being stored fails instead of succeeding.
pub fn run_shared(db: &dyn SharedDatabase, tag: &str) {
    for (i, (tampering, kind)) in Tampering::ALL.into_iter().enumerate() {
        let schema = format!("{tag}_{i}");
        if tampering != Tampering::SquattedSchema {
            drop(
                db.open(&schema)
                    .unwrap_or_else(|e| panic!("{schema}: a clean schema did not open: {e}")),
            );
        }
        if !db.tamper(&schema, tampering) {
            eprintln!("{tag}: {tampering:?} skipped: the database has no such thing");
            continue;
        }
        match db.open(&schema) {
            Ok(_) => panic!("{schema}: {tampering:?} was accepted"),
            Err(e) => assert_eq!(e.kind(), kind, "{schema}: {tampering:?}: {e}"),
        }
    }
    a_rewritten_renewal_fails(db, &format!("{tag}_live"));
}

/// A store opened on a clean schema claims and renews; once a trigger keeps the stored
/// reservation as it was, the next renewal fails: the holder never mints past a
/// reservation that was not stored.
pub fn a_rewritten_renewal_fails(db: &dyn SharedDatabase, schema: &str) {
    let store = db
        .open(schema)
        .unwrap_or_else(|e| panic!("{schema}: a clean schema did not open: {e}"));
    let claimed = store.claim(&request(schema, 0..1)).unwrap();
    store.renew(&claimed, T).unwrap();
    if !db.tamper(schema, Tampering::Trigger) {
        eprintln!("{schema}: a trigger skipped: the database has no such thing");
        return;
    }
    let renewed = store.renew(&claimed, T + SECOND);
    assert!(
        renewed.is_err(),
        "{schema}: a renewal a trigger kept from being stored succeeded"
    );
}
