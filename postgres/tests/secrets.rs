//! The role's password reaches no one who should not have it: a URL with a password and
//! no TLS is refused unless it says the network is trusted (`sslmode=disable`); even then
//! a server that asks for the password in clear text or by MD5 gets nothing (a fake
//! server of the test's own records what it receives), unless the URL lists the method
//! (`require_auth=`); a real PostgreSQL that asks so is refused the same way, and
//! accepted once the URL allows it.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use flakeid::claim::store::{FromUrl, StoreUrl};
use flakeid::claim::{ClaimError, ClaimErrorKind, OpenOptions};
use flakeid_fleet::postgres::Postgres;
use flakeid_fleet::scenarios as fleet;
use flakeid_postgres::PostgresStore;

fn open(url: &str) -> Result<PostgresStore, ClaimError> {
    let options = OpenOptions::default().timeout(Duration::from_secs(2));
    PostgresStore::from_url(&StoreUrl::parse(url)?, &options)
}

/// A server that answers every startup with one authentication request (`3` clear text,
/// `5` MD5) and records what each client sends after it, until the client closes.
struct Fake {
    port: u16,
    connections: Arc<AtomicUsize>,
    received: Arc<Mutex<Vec<u8>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Fake {
    fn start(request: u32) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let (connections, received, stop) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(Mutex::new(Vec::new())),
            Arc::new(AtomicBool::new(false)),
        );
        let (c, r, s) = (
            Arc::clone(&connections),
            Arc::clone(&received),
            Arc::clone(&stop),
        );
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let Ok((mut conn, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                c.fetch_add(1, Ordering::Relaxed);
                conn.set_nonblocking(false).unwrap();
                conn.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
                let mut len = [0u8; 4];
                if conn.read_exact(&mut len).is_err() {
                    continue;
                }
                let mut startup = vec![0u8; u32::from_be_bytes(len) as usize - 4];
                if conn.read_exact(&mut startup).is_err() {
                    continue;
                }
                let mut answer = vec![b'R'];
                let salt: &[u8] = if request == 5 { b"salt" } else { b"" };
                answer.extend_from_slice(&(8 + salt.len() as u32).to_be_bytes());
                answer.extend_from_slice(&request.to_be_bytes());
                answer.extend_from_slice(salt);
                let _ = conn.write_all(&answer);
                let mut after = Vec::new();
                let _ = conn.read_to_end(&mut after);
                r.lock().unwrap().extend(after);
            }
        });
        Fake {
            port,
            connections,
            received,
            stop,
            thread: Some(thread),
        }
    }

    fn received(&self) -> Vec<u8> {
        self.received.lock().unwrap().clone()
    }
}

impl Fake {
    /// Stops the server (once its clients closed) and returns all they sent.
    fn finish(mut self) -> Vec<u8> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.received()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The password file of these tests.
fn password_file(secret: &str) -> std::path::PathBuf {
    let path =
        std::env::temp_dir().join(format!("flakeid-pg-secret-{}-{secret}", std::process::id()));
    flakeid_fleet::write_secret(&path, secret);
    path
}

/// Without TLS and without `sslmode=disable`, nothing is sent anywhere; with it, a server
/// that asks for the password in clear text or by MD5 receives no answer, and the error
/// says what to change; listed in `require_auth=`, the same server receives the password
/// (so the fake would have seen it, had it been sent).
#[test]
fn a_server_that_asks_for_the_password_in_clear_gets_nothing() {
    let secret = "pw-7719-secret";
    let pw = password_file(secret);
    let url = |port: u16, query: &str| {
        format!(
            "postgres://ids@127.0.0.1:{port}/db?password-file={}{query}",
            pw.display()
        )
    };
    let fake = Fake::start(3);
    let err = open(&url(fake.port, "")).unwrap_err();
    assert_eq!(err.kind(), ClaimErrorKind::Settings, "{err}");
    assert!(err.to_string().contains("sslmode=verify-full"), "{err}");
    assert_eq!(fake.connections.load(Ordering::Relaxed), 0, "it connected");
    drop(fake.finish());
    for (request, says) in [(3, "clear text"), (5, "MD5")] {
        let fake = Fake::start(request);
        let err = open(&url(fake.port, "&sslmode=disable")).unwrap_err();
        let text = err.to_string();
        assert_eq!(err.kind(), ClaimErrorKind::Access, "{text}");
        assert!(
            text.contains(says) && text.contains("require_auth="),
            "{text}"
        );
        assert!(
            fake.connections.load(Ordering::Relaxed) > 0,
            "no connection"
        );
        let received = fake.finish();
        assert!(
            !received.contains(&b'p'),
            "the client answered the request: {received:?}"
        );
    }
    let fake = Fake::start(3);
    let _ = open(&url(
        fake.port,
        "&sslmode=disable&require_auth=scram-sha-256,password",
    ));
    let received = fake.finish();
    assert!(
        contains(&received, secret.as_bytes()),
        "the fake never saw the password it was allowed: {received:?}"
    );
    let _ = std::fs::remove_file(pw);
}

/// A real PostgreSQL whose pg_hba.conf asks for the password in clear text, or by MD5 for
/// a role whose password is stored as MD5, is refused (nothing sent); with the method in
/// `require_auth=`, the store connects. SCRAM needs no word.
#[test]
fn a_real_server_asking_for_clear_text_or_md5_is_refused_unless_allowed() {
    let _one = fleet::one_at_a_time();
    let Some(server) = Postgres::start("secrets") else {
        return;
    };
    server.sql(
        "postgres",
        "SET password_encryption = 'md5'; CREATE ROLE md5role LOGIN SUPERUSER PASSWORD 'md5pw'",
    );
    let md5_pw = password_file("md5pw");
    let base = |role: &str, file: &std::path::Path, query: &str| {
        format!(
            "postgres://{role}@127.0.0.1:{}/postgres?sslmode=disable&password-file={}{query}",
            server.port,
            file.display()
        )
    };
    let superuser = server.password_file.clone();
    drop(open(&base("flakeid", &superuser, "")).unwrap());
    server.set_hba("host all all 127.0.0.1/32 password");
    let err = open(&base("flakeid", &superuser, "")).unwrap_err();
    assert_eq!(err.kind(), ClaimErrorKind::Access, "{err}");
    assert!(err.to_string().contains("clear text"), "{err}");
    drop(
        open(&base(
            "flakeid",
            &superuser,
            "&require_auth=scram-sha-256,password",
        ))
        .unwrap(),
    );
    server.set_hba("host all all 127.0.0.1/32 md5");
    // A SCRAM password under `md5` is asked for by SCRAM.
    drop(open(&base("flakeid", &superuser, "")).unwrap());
    let err = open(&base("md5role", &md5_pw, "")).unwrap_err();
    assert_eq!(err.kind(), ClaimErrorKind::Access, "{err}");
    assert!(err.to_string().contains("MD5"), "{err}");
    drop(
        open(&base(
            "md5role",
            &md5_pw,
            "&require_auth=scram-sha-256,md5&owner=flakeid",
        ))
        .unwrap(),
    );
    let _ = std::fs::remove_file(md5_pw);
}

/// A URL without a password for a role the server asks one of says so at once, as a
/// setting to fix (with where to give it), not as a server that cannot be reached after
/// every retry.
#[test]
fn a_url_without_the_password_the_server_asks_for_says_so() {
    let _one = fleet::one_at_a_time();
    let Some(server) = Postgres::start("no-password") else {
        return;
    };
    let url = format!(
        "postgres://flakeid@127.0.0.1:{}/postgres?sslmode=disable",
        server.port
    );
    let err = open(&url).unwrap_err();
    assert!(matches!(err, ClaimError::NoPassword { .. }), "{err:?}");
    assert_eq!(err.kind(), ClaimErrorKind::Settings, "{err}");
    assert!(err.to_string().contains("give password-file=FILE"), "{err}");
}
