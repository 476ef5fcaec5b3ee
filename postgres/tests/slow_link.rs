//! A store whose every answer comes late (a real PostgreSQL 15 behind the tests' proxy,
//! each reply held a while): a connect of many round trips takes longer than one
//! attempt's bound, each round trip well within it. The store connects, claims and
//! renews, rather than starting the connect again from nothing on every attempt.

use std::time::{Duration, Instant};

use flakeid::claim::OpenOptions;
use flakeid::claim::store::{FromUrl, StoreUrl};
use flakeid_fleet::postgres::Postgres;
use flakeid_fleet::proxy::Proxy;
use flakeid_fleet::scenarios::{self as fleet, Server};
use flakeid_postgres::PostgresStore;

/// With a lease of 3 s an attempt is bounded at 600 ms; each reply held 60 ms makes the
/// connect (startup, authentication, the session's settings, the topology and the
/// tables' checks) take over a second. The store opens within its 5 s timeout, claims
/// and renews on that session.
#[test]
fn a_connect_longer_than_one_attempt_still_ends() {
    let _one = fleet::one_at_a_time();
    let Some(pg) = Postgres::start("slow-link") else {
        return;
    };
    let direct = pg.url();
    // The tables made at full speed, so that the slow connect is the usual one.
    drop(
        PostgresStore::from_url(&StoreUrl::parse(&direct).unwrap(), &OpenOptions::default())
            .unwrap(),
    );
    let proxy = Proxy::start(pg.port);
    proxy.set_reply_delay(Duration::from_millis(60));
    let slow = direct.replacen(&format!(":{}", pg.port), &format!(":{}", proxy.port), 1);
    let options = OpenOptions::default().ttl(Duration::from_secs(3));
    let started = Instant::now();
    let store = PostgresStore::from_url(&StoreUrl::parse(&slow).unwrap(), &options)
        .unwrap_or_else(|e| panic!("a slow link refused after {:?}: {e}", started.elapsed()));
    let took = started.elapsed();
    assert!(
        took > Duration::from_millis(600),
        "the connect took {took:?}, within one attempt: the link was not slow enough to test this"
    );
    fleet::claims_and_renews(&store, "test");
}
