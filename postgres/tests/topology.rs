//! Which replication topologies the store trusts a commit in (a real PostgreSQL 15
//! primary with two standbys streaming from it, started by the test on 127.0.0.1): only
//! where every standby that could be promoted has each commit before it is acknowledged,
//! at connect and again after every request, so that a standby attached under a running
//! holder stops the trust in its next reservation.

use flakeid::claim::{ClaimErrorKind, ClaimStore};
mod common;

use common::{claim_one, open, refused};
use flakeid_fleet::postgres::Postgres;
use flakeid_fleet::scenarios::{self as fleet, Server};

/// A synchronous standby beside an asynchronous one, a `FIRST 1` list of two and a
/// quorum smaller than its standbys each leave a standby that may lack a commit: refused
/// naming it (or, with `replication=async`, warned). `FIRST 2` and `ANY 2` of two are
/// trusted. A role that cannot see the standbys' states is refused until it may.
#[test]
fn a_commit_is_trusted_only_where_every_standby_has_it() {
    let _one = fleet::one_at_a_time();
    let Some(primary) = Postgres::start("topology") else {
        return;
    };
    // The tables made while the primary streams to none.
    drop(open(&primary.url()).unwrap());
    let _s1 = primary.standby_as("topology", "s1");
    let _s2 = primary.standby_as("topology", "s2");
    primary.name_standbys("s1");
    primary.wait_for_standbys("s1=sync,s2=async");
    let url = primary.url();
    refused(
        &url,
        ClaimErrorKind::Access,
        &["standby s2 at 127.0.0.1 is async", "replication=async"],
    );
    let accepted = open(&format!("{url}&replication=async")).unwrap();
    let warnings = ClaimStore::warnings(&accepted);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("standby s2") && w.contains("replication lag")),
        "{warnings:?}"
    );
    primary.name_standbys("FIRST 1 (s1, s2)");
    primary.wait_for_standbys("s1=sync,s2=potential");
    refused(
        &url,
        ClaimErrorKind::Access,
        &["standby s2 at 127.0.0.1 is potential"],
    );
    primary.name_standbys("ANY 1 (s1, s2)");
    primary.wait_for_standbys("s1=quorum,s2=quorum");
    refused(&url, ClaimErrorKind::Access, &["waits for 1 of the 2"]);
    primary.name_standbys("ANY 2 (s1, s2)");
    primary.wait_for_standbys("s1=quorum,s2=quorum");
    drop(open(&url).unwrap());
    primary.name_standbys("FIRST 2 (s1, s2)");
    primary.wait_for_standbys("s1=sync,s2=sync");
    let store = open(&url).unwrap();
    assert!(ClaimStore::warnings(&store).is_empty());
    let c = claim_one(&store, "topology");
    store.release(&c, 1).unwrap();
    // A role without pg_read_all_stats sees the standbys but not their states.
    primary.sql(
        "postgres",
        "CREATE ROLE ids LOGIN PASSWORD 'ids'; GRANT USAGE ON SCHEMA flakeid TO ids; \
         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA flakeid TO ids",
    );
    let pw = primary.process.dir.join("ids.password");
    flakeid_fleet::write_secret(&pw, "ids");
    let ids = format!(
        "postgres://ids@127.0.0.1:{}/postgres?owner=flakeid&password-file={}&sslmode=disable",
        primary.port,
        pw.display()
    );
    refused(&ids, ClaimErrorKind::Access, &["GRANT pg_read_all_stats"]);
    primary.sql("postgres", "GRANT pg_read_all_stats TO ids");
    drop(open(&ids).unwrap());
}

/// A holder connected to a lone primary renews; an asynchronous standby attached under
/// it makes its next renewal fail (the reservation is not trusted), and naming the
/// standby synchronous makes renewals land again, all on the same store.
#[test]
fn a_standby_attached_under_a_running_holder_stops_its_renewals() {
    let _one = fleet::one_at_a_time();
    let Some(primary) = Postgres::start("attached") else {
        return;
    };
    let store = open(&primary.url()).unwrap();
    let c = claim_one(&store, "attached");
    store.renew(&c, 10).unwrap();
    let _standby = primary.standby_as("attached", "late");
    primary.wait_for_standbys("late=async");
    let err = store.renew(&c, 20).unwrap_err();
    assert_eq!(err.kind(), ClaimErrorKind::Access, "{err}");
    assert!(err.to_string().contains("asynchronously"), "{err}");
    primary.name_standbys("late");
    primary.wait_for_standbys("late=sync");
    store.renew(&c, 30).unwrap();
    store.release(&c, 30).unwrap();
}
