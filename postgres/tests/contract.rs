//! The store contract on a real PostgreSQL 15 (started by the test on 127.0.0.1, as a user
//! of its own), its faults made with `psql`; and what the store refuses at connect: a
//! role without its grants, tables of another version or altered by hand, a standby, a
//! primary with an asynchronous standby; and a least-privilege role that claims.

use std::sync::Arc;

use flakeid::claim::store::{ClaimRequest, Claimed, FromUrl, StoreUrl};
use flakeid::claim::{ClaimError, ClaimErrorKind, ClaimStore, OpenOptions};
use flakeid_fleet::postgres::Postgres;
use flakeid_fleet::scenarios::{self as fleet, Server};
use flakeid_postgres::PostgresStore;
use flakeid_testkit as conformance;

fn open(url: &str) -> Result<PostgresStore, ClaimError> {
    PostgresStore::from_url(&StoreUrl::parse(url)?, &OpenOptions::default())
}

/// The contract's faults, made by the superuser's `psql`.
struct PgBackend<'a> {
    server: &'a Postgres,
}

impl PgBackend<'_> {
    fn update(&self, namespace: &str, node: u64, set: &str) -> String {
        self.server.sql(
            "postgres",
            &format!(
                "UPDATE flakeid.nodes SET {set} WHERE namespace = '{namespace}' AND node = {node} RETURNING node"
            ),
        )
    }
}

impl conformance::Backend for PgBackend<'_> {
    fn handle(&self) -> Arc<dyn ClaimStore> {
        Arc::new(open(&self.server.url()).unwrap())
    }
    /// The row given to nobody, as an operator's `UPDATE` would: the claim's token is
    /// gone, so nothing the old holder sends matches it again.
    fn lose(&self, _: &Arc<dyn ClaimStore>, claimed: &Claimed) {
        let done = self.update(
            &claimed.namespace,
            claimed.node,
            "token = 0, expires = NULL",
        );
        assert_eq!(done, claimed.node.to_string());
    }
    fn corrupt(&self, namespace: &str, node: u64) {
        self.update(namespace, node, "reserved = -42");
    }
    fn raw(&self, namespace: &str, node: u64) -> Option<Vec<u8>> {
        let out = self.server.sql(
            "postgres",
            &format!(
                "SELECT coalesce(reserved::text, 'NULL') FROM flakeid.nodes WHERE namespace = '{namespace}' AND node = {node}"
            ),
        );
        (!out.is_empty()).then(|| out.into_bytes())
    }
    fn remove_reservation(&self, namespace: &str, node: u64) -> bool {
        !self.update(namespace, node, "reserved = NULL").is_empty()
    }
}

#[test]
fn the_postgres_store_keeps_the_contract() {
    let _one = fleet::one_at_a_time();
    let Some(server) = Postgres::start("contract") else {
        return;
    };
    conformance::run_all(&PgBackend { server: &server }, "pg");
}

/// A lease ends by the server's clock: a claim not renewed within its TTL is free to
/// another holder, whose token then keeps the first one's renewal and release out.
#[test]
fn a_lease_ends_on_the_servers_clock_and_the_next_holder_starts_after() {
    let _one = fleet::one_at_a_time();
    let Some(server) = Postgres::start("lease") else {
        return;
    };
    let options = OpenOptions::default().ttl(std::time::Duration::from_secs(1));
    let url = StoreUrl::parse(&server.url()).unwrap();
    let (a, b) = (
        PostgresStore::from_url(&url, &options).unwrap(),
        PostgresStore::from_url(&url, &options).unwrap(),
    );
    let request = ClaimRequest {
        namespace: "lease",
        pool: 0..1,
        instance: "a",
    };
    let first = a.claim(&request).unwrap();
    a.renew(&first, 5_000).unwrap();
    assert!(matches!(
        b.claim(&request),
        Err(ClaimError::PoolFull { .. })
    ));
    // Wait for the server's own clock to pass the lease's end.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while server.sql(
        "postgres",
        "SELECT expires <= clock_timestamp() FROM flakeid.nodes WHERE namespace = 'lease'",
    ) != "t"
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the lease never ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let second = b.claim(&request).unwrap();
    assert_eq!((second.node, second.not_before_unix_ns), (0, 5_000));
    assert!(matches!(
        a.renew(&first, 9_000),
        Err(ClaimError::NotOwner { .. })
    ));
    assert!(matches!(
        a.release(&first, 1),
        Err(ClaimError::NotOwner { .. })
    ));
    let listed = b.list("lease").unwrap();
    assert_eq!(listed[0].reserved_until_unix_ns, 5_000);
    b.release(&second, 6_000).unwrap();
}

/// A role that may only use the tables an owner made (the README's grants) claims;
/// without a grant it is refused at connect, naming the privilege and the GRANT; a role
/// that may not make the tables is told what an owner must run; a wrong password is a
/// refusal, and no password reaches a message.
#[test]
fn a_least_privilege_role_claims_and_a_missing_grant_is_named() {
    let _one = fleet::one_at_a_time();
    let Some(server) = Postgres::start("grants") else {
        return;
    };
    let secret = "role-secret-7731";
    server.sql(
        "postgres",
        &format!("CREATE ROLE ids LOGIN PASSWORD '{secret}'"),
    );
    let pw = server.process.dir.join("ids.password");
    flakeid_fleet::write_secret(&pw, secret);
    let url = format!(
        "postgres://ids@127.0.0.1:{}/postgres?schema=claims&owner=claims_owner&password-file={}&sslmode=disable",
        server.port,
        pw.display()
    );
    // No tables yet, and no right to make them.
    let err = open(&url).unwrap_err();
    let text = err.to_string();
    assert_eq!(err.kind(), ClaimErrorKind::Access, "{text}");
    assert!(text.contains("owner run"), "{text}");
    server.sql("postgres", "CREATE ROLE claims_owner NOLOGIN");
    server.sql(
        "postgres",
        &flakeid_postgres::create_statements("claims", "claims_owner"),
    );
    server.sql(
        "postgres",
        &flakeid_postgres::grant_statements("claims", "ids"),
    );
    let store = open(&url).unwrap();
    let request = ClaimRequest {
        namespace: "least",
        pool: 0..2,
        instance: "ids",
    };
    let c = store.claim(&request).unwrap();
    store.renew(&c, 10).unwrap();
    store.bind_layout("least", "snowflake").unwrap();
    let ticket = ClaimStore::join_line(&store, "least", "w")
        .unwrap()
        .unwrap();
    ClaimStore::leave_line(&store, &ticket);
    store.release(&c, 10).unwrap();
    // One grant fewer: named, with the statement that gives it.
    server.sql("postgres", "REVOKE UPDATE ON claims.nodes FROM ids");
    let err = open(&url).unwrap_err();
    let text = format!("{err} {err:?}");
    assert_eq!(err.kind(), ClaimErrorKind::Access, "{text}");
    assert!(text.contains("UPDATE on claims.nodes"), "{text}");
    assert!(
        text.contains("GRANT SELECT, INSERT, UPDATE ON claims.nodes TO ids"),
        "{text}"
    );
    // A wrong password.
    flakeid_fleet::write_secret(&pw, "not-it");
    let err = open(&url).unwrap_err();
    let text = format!("{err} {err:?}");
    assert_eq!(err.kind(), ClaimErrorKind::Access, "{text}");
    assert!(text.contains("password"), "{text}");
    assert!(!text.contains(secret) && !text.contains("not-it"), "{text}");
}

/// Tables of another version, a column altered by hand, or garbage in a row: each a
/// clear error at connect or for that row, never a claim that reads it as 0.
#[test]
fn tables_of_another_version_or_altered_by_hand_are_refused() {
    let _one = fleet::one_at_a_time();
    let Some(server) = Postgres::start("schema") else {
        return;
    };
    let url = server.url();
    drop(open(&url).unwrap());
    server.sql("postgres", "UPDATE flakeid.flakeid_schema SET version = 2");
    let text = open(&url).unwrap_err().to_string();
    assert!(
        text.contains("version 2, newer") && text.contains("upgrade"),
        "{text}"
    );
    server.sql("postgres", "UPDATE flakeid.flakeid_schema SET version = 1");
    server.sql(
        "postgres",
        "ALTER TABLE flakeid.nodes ALTER COLUMN reserved TYPE text",
    );
    let err = open(&url).unwrap_err();
    let text = err.to_string();
    assert_eq!(err.kind(), ClaimErrorKind::Corrupt, "{text}");
    assert!(
        text.contains("nodes.reserved is text, not bigint"),
        "{text}"
    );
    server.sql(
        "postgres",
        "ALTER TABLE flakeid.nodes ALTER COLUMN reserved TYPE bigint USING reserved::bigint",
    );
    server.sql("postgres", "ALTER TABLE flakeid.line DROP COLUMN instance");
    let text = open(&url).unwrap_err().to_string();
    assert!(text.contains("line.instance is missing"), "{text}");
}

/// A standby is never claimed on; a primary that streams to an asynchronous standby is
/// refused, saying what a failover can cost, unless the URL accepts it
/// (`replication=async`), and then every claim carries the warning; once the standby is
/// named synchronous, the store connects without one.
#[test]
fn replication_that_can_lose_a_reservation_is_refused_or_warned() {
    let _one = fleet::one_at_a_time();
    let Some(primary) = Postgres::start("replication") else {
        return;
    };
    let standby = primary.standby("replication");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while primary.sql("postgres", "SELECT count(*) FROM pg_stat_replication") != "1" {
        assert!(
            std::time::Instant::now() < deadline,
            "the standby never streamed"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let err = open(&primary.url()).unwrap_err();
    let text = err.to_string();
    assert_eq!(err.kind(), ClaimErrorKind::Access, "{text}");
    assert!(
        text.contains("asynchronously") && text.contains("replication=async"),
        "{text}"
    );
    let accepted = open(&format!("{}&replication=async", primary.url())).unwrap();
    let warnings = ClaimStore::warnings(&accepted);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("can lose the last renewals")),
        "{warnings:?}"
    );
    let on_standby = open(&standby.url()).unwrap_err();
    assert_eq!(
        on_standby.kind(),
        ClaimErrorKind::Unavailable,
        "{on_standby}"
    );
    assert!(
        on_standby.to_string().contains("takes writes"),
        "{on_standby}"
    );
    primary.sql(
        "postgres",
        "ALTER SYSTEM SET synchronous_standby_names = 'standby'",
    );
    primary.sql("postgres", "SELECT pg_reload_conf()");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while primary.sql("postgres", "SELECT sync_state FROM pg_stat_replication") != "sync" {
        assert!(
            std::time::Instant::now() < deadline,
            "the standby never became synchronous"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let store = open(&primary.url()).unwrap();
    assert!(ClaimStore::warnings(&store).is_empty());
}

/// TLS with `sslmode=verify-full`, the tests' CA and a client certificate claims; each
/// wrong credential is its own refusal saying what to give (a CA that did not sign the
/// server, no client certificate, one of another CA, plain text, a wrong password), and
/// no password reaches a message.
#[test]
fn tls_takes_the_right_credentials_and_refuses_each_wrong_one() {
    let _one = fleet::one_at_a_time();
    let dir = std::env::temp_dir().join(format!("flakeid-pg-certs-{}", std::process::id()));
    // The client certificate's name is the role's (clientcert=verify-full).
    let certs = flakeid_fleet::certs::make(&dir, "pg", "flakeid");
    let other = flakeid_fleet::certs::make(&dir.join("other"), "other", "flakeid");
    let Some(server) = Postgres::start_tls("tls", &certs) else {
        return;
    };
    let base = format!(
        "postgres://flakeid@127.0.0.1:{}/postgres?password-file={}",
        server.port,
        server.password_file.display()
    );
    let tls = |ca: &std::path::Path, cert: &std::path::Path, key: &std::path::Path| {
        format!(
            "{base}&sslmode=verify-full&sslrootcert={}&sslcert={}&sslkey={}",
            ca.display(),
            cert.display(),
            key.display()
        )
    };
    let good = tls(&certs.ca, &certs.client_cert, &certs.client_key);
    let store = open(&good).unwrap();
    let request = ClaimRequest {
        namespace: "tls",
        pool: 0..1,
        instance: "tls",
    };
    let c = store.claim(&request).unwrap();
    store.release(&c, 1).unwrap();
    let wrong_pw = dir.join("wrong-password");
    flakeid_fleet::write_secret(&wrong_pw, "not-the-password");
    let password = std::fs::read_to_string(&server.password_file).unwrap();
    for (what, url, says) in [
        (
            "a CA that did not sign the server",
            tls(&other.ca, &certs.client_cert, &certs.client_key),
            "sslrootcert=",
        ),
        (
            "no client certificate",
            format!(
                "{base}&sslmode=verify-full&sslrootcert={}",
                certs.ca.display()
            ),
            "certificate",
        ),
        (
            "a client certificate of another CA",
            tls(&certs.ca, &other.client_cert, &other.client_key),
            "certificate",
        ),
        (
            "plain text",
            format!("{base}&sslmode=disable"),
            "pg_hba.conf",
        ),
        (
            "a wrong password",
            good.replace(
                &server.password_file.display().to_string(),
                &wrong_pw.display().to_string(),
            ),
            "password",
        ),
    ] {
        let err = open(&url).unwrap_err();
        let text = format!("{err} / {err:?}");
        assert_eq!(err.kind(), ClaimErrorKind::Access, "{what}: {text}");
        assert!(text.contains(says), "{what}: {text}");
        assert!(
            !text.contains(&password) && !text.contains("not-the-password"),
            "{what}: {text}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A server that takes no writes is never claimed on, and says so; a statement held up
/// past its bound (a row locked by a stalled session) is cancelled by the server and the
/// renewal fails within its bound, then lands once the lock goes.
#[test]
fn a_read_only_server_and_a_stalled_statement_are_clear_errors() {
    let _one = fleet::one_at_a_time();
    let Some(server) = Postgres::start("read-only") else {
        return;
    };
    let options = OpenOptions::default().timeout(std::time::Duration::from_secs(2));
    let url = StoreUrl::parse(&server.url()).unwrap();
    let store = PostgresStore::from_url(&url, &options).unwrap();
    let request = ClaimRequest {
        namespace: "stall",
        pool: 0..1,
        instance: "a",
    };
    let c = store.claim(&request).unwrap();
    // A session that holds the row's lock for 4 s, once it holds it.
    std::thread::scope(|scope| {
        let locker = scope.spawn(|| {
            server.sql(
                "postgres",
                "BEGIN; SELECT 1 FROM flakeid.nodes WHERE namespace = 'stall' FOR UPDATE; \
                 SELECT pg_sleep(4); COMMIT;",
            )
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while server.sql(
            "postgres",
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(4)%' \
             AND state = 'active' AND pid <> pg_backend_pid()",
        ) != "1"
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the lock was never taken"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let started = std::time::Instant::now();
        let err = store.renew(&c, 5).unwrap_err();
        let text = err.to_string();
        assert_eq!(err.kind(), ClaimErrorKind::Unavailable, "{text}");
        assert!(
            text.contains("cancelled") || text.contains("no answer within"),
            "{text}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(4),
            "{:?}",
            started.elapsed()
        );
        locker.join().unwrap();
    });
    store.renew(&c, 6).unwrap();
    store.release(&c, 6).unwrap();
    server.sql(
        "postgres",
        "ALTER SYSTEM SET default_transaction_read_only = on",
    );
    server.sql("postgres", "SELECT pg_reload_conf()");
    let err = PostgresStore::from_url(&url, &options).unwrap_err();
    assert_eq!(err.kind(), ClaimErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains("takes writes"), "{err}");
}

/// A primary whose synchronous standby is named but not connected makes each commit wait
/// for it: a write then fails closed, its message naming the setting. A commit whose wait
/// is cancelled (`pg_cancel_backend`, as an administrator might) is on the primary only,
/// and PostgreSQL answers it as done, with a warning: the store takes that answer as no
/// claim, no renewal and no release. Once the standby is no longer named, the store goes
/// on from what the primary holds.
#[test]
fn a_commit_the_synchronous_standby_may_lack_is_never_trusted() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::{Duration, Instant};
    let _one = fleet::one_at_a_time();
    let Some(server) = Postgres::start("unreplicated") else {
        return;
    };
    let options = OpenOptions::default().timeout(Duration::from_secs(3));
    let url = StoreUrl::parse(&server.url()).unwrap();
    let request = |instance| ClaimRequest {
        namespace: "sync",
        pool: 0..2,
        instance,
    };
    // The tables made and an id held before the standby is named.
    let store = PostgresStore::from_url(&url, &options).unwrap();
    let held = store.claim(&request("a")).unwrap();
    let name_standby = |names: &str| {
        server.sql(
            "postgres",
            &format!("ALTER SYSTEM SET synchronous_standby_names = '{names}'"),
        );
        server.sql("postgres", "SELECT pg_reload_conf()");
        let deadline = Instant::now() + Duration::from_secs(10);
        while server.sql("postgres", "SHOW synchronous_standby_names") != names {
            assert!(Instant::now() < deadline, "the setting was never read");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    name_standby("absent");
    let store = PostgresStore::from_url(&url, &options).unwrap();
    let err = store.renew(&held, 7).unwrap_err();
    assert_eq!(err.kind(), ClaimErrorKind::Unavailable, "{err}");
    assert!(
        err.to_string()
            .contains("synchronous_standby_names = 'absent'"),
        "{err}"
    );
    // Each wait cancelled as soon as it starts.
    let (stop, cancelled) = (AtomicBool::new(false), AtomicU64::new(0));
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let n = server.sql(
                    "postgres",
                    "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity \
                     WHERE wait_event = 'SyncRep'",
                );
                cancelled.fetch_add(n.parse().unwrap(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let answers = [
            store.claim(&request("b")).map(|_| ()),
            store.renew(&held, 8),
            store.release(&held, 8),
        ];
        stop.store(true, Ordering::Relaxed);
        for answer in answers {
            let err = answer.unwrap_err();
            assert_eq!(err.kind(), ClaimErrorKind::Unavailable, "{err}");
            assert!(err.to_string().contains("not trusted"), "{err}");
        }
    });
    assert!(
        cancelled.load(Ordering::Relaxed) > 0,
        "no wait was cancelled"
    );
    name_standby("");
    store.release(&held, 9).unwrap();
    let next = store.claim(&request("c")).unwrap();
    assert_eq!((next.node, next.not_before_unix_ns), (0, 9));
}
