//! A PostgreSQL server on loopback for the tests ([`Postgres`]): Debian's PostgreSQL 15,
//! a fresh cluster (`initdb`) in a temporary directory, run as an unprivileged user of the
//! tests' own when the tests run as root (the server refuses root), a superuser `flakeid`
//! with a password, and `psql` for the harness's own statements. A standby of it
//! ([`Postgres::standby`]) streams from it by `pg_basebackup`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::scenarios::{Process, Server, available, free_port};

/// The superuser of the tests' clusters, and its password.
pub const SUPERUSER: &str = "flakeid";
pub const PASSWORD: &str = "flakeid-test-superuser";

/// A PostgreSQL server on loopback; stopped (and its data removed) on drop.
pub struct Postgres {
    /// The server process and its directory (`data/`, `server.log`, the password file).
    pub process: Process,
    /// The port on 127.0.0.1.
    pub port: u16,
    /// The superuser's password file.
    pub password_file: PathBuf,
    bin: PathBuf,
    owner: Option<(u32, u32)>,
}

/// The directory of PostgreSQL's programs: the newest of `/usr/lib/postgresql/*/bin`.
fn bin_dir() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| Some(e.ok()?.path().join("bin")))
        .filter(|p| p.join("postgres").exists())
        .collect();
    found.sort();
    found.pop()
}

/// The user the server runs as when the tests run as root: `flakeid-postgres`, made if
/// missing; `None` when the tests are not root (the server runs as they do).
fn server_user() -> Option<(u32, u32)> {
    static USER: std::sync::OnceLock<Option<(u32, u32)>> = std::sync::OnceLock::new();
    *USER.get_or_init(|| {
        let id = |flag: &str, user: Option<&str>| -> Option<u32> {
            let out = Command::new("id").arg(flag).args(user).output().ok()?;
            String::from_utf8(out.stdout).ok()?.trim().parse().ok()
        };
        if id("-u", None) != Some(0) {
            return None;
        }
        const USER: &str = "flakeid-postgres";
        if id("-u", Some(USER)).is_none() {
            // Another test binary may make it at the same moment: look again after.
            let _ = Command::new("useradd")
                .args(["--system", "--no-create-home", "--user-group"])
                .args(["--shell", "/usr/sbin/nologin", USER])
                .status();
        }
        let user = id("-u", Some(USER)).zip(id("-g", Some(USER)));
        assert!(user.is_some(), "useradd could not make the user {USER}");
        user
    })
}

/// Whether PostgreSQL is installed; if not, the test skips with a printed reason, or
/// fails when `FLAKEID_REQUIRE_SERVERS` is set.
pub fn postgres_available(test: &str) -> bool {
    let postgres = bin_dir().map_or_else(|| "postgres".into(), |d| d.join("postgres"));
    available(
        test,
        &postgres.display().to_string(),
        &["--version"],
        "apt-get install postgresql",
    )
}

impl Postgres {
    /// Starts a fresh server, or says why not: `None` (the test skips) when PostgreSQL is
    /// not installed, unless `FLAKEID_REQUIRE_SERVERS` is set.
    pub fn start(name: &str) -> Option<Postgres> {
        Postgres::start_with(name, "")
    }

    /// [`Postgres::start`] with `conf` added to `postgresql.conf`.
    pub fn start_with(name: &str, conf: &str) -> Option<Postgres> {
        if !postgres_available(name) {
            return None;
        }
        let mut server = Postgres::init(Process::new("postgres", name), conf);
        server.launch();
        Some(server)
    }

    /// A cluster made by `initdb` in `process`'s directory, not started.
    fn init(process: Process, conf: &str) -> Postgres {
        let bin = bin_dir().expect("PostgreSQL's programs");
        let owner = server_user();
        // The server's user reads this one (initdb runs as it); the clients read
        // `password_file`, which stays the tests' own (the stores refuse a password file
        // another user owns).
        let initdb_password = process.dir.join("initdb.password");
        crate::write_secret(&initdb_password, PASSWORD);
        let password_file = process.dir.join("superuser.password");
        crate::write_secret(&password_file, PASSWORD);
        let server = Postgres {
            port: free_port(),
            password_file,
            bin,
            owner,
            process,
        };
        server.own(&server.process.dir);
        let data = server.data();
        let status = server
            .command("initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", SUPERUSER, "-E", "UTF8", "--no-sync"])
            .args(["--auth-host=scram-sha-256", "--auth-local=trust"])
            .arg(format!("--pwfile={}", initdb_password.display()))
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "initdb failed");
        server.configure(&format!("{conf}\nwal_level = replica\n"));
        server
    }

    /// Appends `conf` and the tests' settings (loopback only, this port, sockets in the
    /// directory, no fsync) to `postgresql.conf`.
    fn configure(&self, conf: &str) {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(self.data().join("postgresql.conf"))
            .unwrap();
        writeln!(
            file,
            "listen_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = '{}'\n\
             fsync = off\nfull_page_writes = off\nshared_buffers = 16MB\nmax_connections = 60\n{conf}",
            self.port,
            self.process.dir.display()
        )
        .unwrap();
    }

    /// The cluster's data directory.
    pub fn data(&self) -> PathBuf {
        self.process.dir.join("data")
    }

    /// `program` of PostgreSQL's, as the server's user.
    fn command(&self, program: &str) -> Command {
        use std::os::unix::process::CommandExt;
        let mut command = Command::new(self.bin.join(program));
        if let Some((uid, gid)) = self.owner {
            command.uid(uid).gid(gid);
        }
        command
    }

    /// Gives `path` (and all below it) to the server's user, but the clients' password
    /// file.
    fn own(&self, path: &Path) {
        if let Some((uid, gid)) = self.owner {
            let status = Command::new("chown")
                .arg("-R")
                .arg(format!("{uid}:{gid}"))
                .arg(path)
                .status()
                .unwrap();
            assert!(status.success());
            if self.password_file.exists() {
                std::os::unix::fs::chown(&self.password_file, Some(0), Some(0)).unwrap();
            }
        }
    }

    /// The superuser's URL of database `db`.
    pub fn url_of(&self, db: &str) -> String {
        format!(
            "postgres://{SUPERUSER}@127.0.0.1:{}/{db}?password-file={}&sslmode=disable",
            self.port,
            self.password_file.display()
        )
    }

    /// Runs `sql` as the superuser on database `db` (`psql`, stopping at the first error):
    /// its rows, one per line, fields split by `|`; `Err` with `psql`'s message.
    pub fn psql(&self, db: &str, sql: &str) -> Result<String, String> {
        // Through the socket in the directory (trusted locally), so that a server which
        // takes only TLS with client certificates on TCP answers the harness too.
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1"])
            .arg("-h")
            .arg(&self.process.dir)
            .args(["-U", SUPERUSER, "-d", db])
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-c")
            .arg(sql)
            .env("PGPASSWORD", PASSWORD)
            .env("PGCONNECT_TIMEOUT", "5")
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
        }
    }

    /// [`Postgres::psql`] that must succeed.
    pub fn sql(&self, db: &str, sql: &str) -> String {
        self.psql(db, sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// Whether the server answers a query.
    pub fn answers(&self) -> bool {
        self.psql("postgres", "SELECT 1").is_ok()
    }

    /// A server that takes TCP connections only over TLS, with a client certificate
    /// signed by `certs`' CA and the role's password (`hostssl ... scram-sha-256
    /// clientcert=verify-full`), its certificate signed by that CA for 127.0.0.1.
    pub fn start_tls(name: &str, certs: &crate::certs::Certs) -> Option<Postgres> {
        Postgres::start_tls_with(name, certs, "")
    }

    /// [`Postgres::start_tls`] with `conf` added to `postgresql.conf`.
    pub fn start_tls_with(name: &str, certs: &crate::certs::Certs, conf: &str) -> Option<Postgres> {
        if !postgres_available(name) {
            return None;
        }
        let process = Process::new("postgres", name);
        let tls = process.dir.join("server-tls");
        std::fs::create_dir_all(&tls).unwrap();
        for (from, to) in [
            (&certs.server_cert, "server.crt"),
            (&certs.server_key, "server.key"),
            (&certs.ca, "ca.crt"),
        ] {
            std::fs::copy(from, tls.join(to)).unwrap();
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            tls.join("server.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        let conf = format!(
            "ssl = on\nssl_cert_file = '{0}/server.crt'\nssl_key_file = '{0}/server.key'\nssl_ca_file = '{0}/ca.crt'\n{conf}",
            tls.display()
        );
        let mut server = Postgres::init(process, &conf);
        std::fs::write(
            server.data().join("pg_hba.conf"),
            "local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256 clientcert=verify-full\n",
        )
        .unwrap();
        server.own(&server.process.dir);
        server.launch();
        Some(server)
    }

    /// A standby of this server on a port of its own, streaming from it
    /// (`pg_basebackup -R`), synchronous if the primary names it (`application_name`
    /// `standby`), started and answering.
    pub fn standby(&self, name: &str) -> Postgres {
        self.standby_as(name, "standby")
    }

    /// [`Postgres::standby`] whose `application_name` (its name in the primary's
    /// `synchronous_standby_names` and `pg_stat_replication`) is `app`.
    pub fn standby_as(&self, name: &str, app: &str) -> Postgres {
        let process = Process::new("postgres", &format!("{name}-{app}"));
        let mut standby = Postgres {
            port: free_port(),
            password_file: process.dir.join("superuser.password"),
            bin: self.bin.clone(),
            owner: self.owner,
            process,
        };
        crate::write_secret(&standby.password_file, PASSWORD);
        standby.own(&standby.process.dir);
        let status = standby
            .command("pg_basebackup")
            .arg("-D")
            .arg(standby.data())
            .args(["-h", "127.0.0.1", "-U", SUPERUSER, "-R", "-X", "stream"])
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-d")
            .arg(format!("application_name={app} password={PASSWORD}"))
            .status()
            .unwrap();
        assert!(status.success(), "pg_basebackup failed");
        // Promoted, it has no standby of its own: its commits wait for none.
        standby.configure("synchronous_standby_names = ''");
        standby.launch();
        standby
    }

    /// Replaces `pg_hba.conf` with a line that trusts the harness's socket and `lines`,
    /// and reloads.
    pub fn set_hba(&self, lines: &str) {
        let file = self.data().join("pg_hba.conf");
        std::fs::write(&file, format!("local all all trust\n{lines}\n")).unwrap();
        self.own(&file);
        self.sql("postgres", "SELECT pg_reload_conf()");
    }

    /// Sets `synchronous_standby_names` to `names` and reloads; returns once the server
    /// reads it (bounded at 10 s).
    pub fn name_standbys(&self, names: &str) {
        let quoted = names.replace('\'', "''");
        self.sql(
            "postgres",
            &format!("ALTER SYSTEM SET synchronous_standby_names = '{quoted}'"),
        );
        self.sql("postgres", "SELECT pg_reload_conf()");
        let read = crate::service::until(Duration::from_secs(10), || {
            self.psql("postgres", "SHOW synchronous_standby_names")
                .is_ok_and(|shown| shown == names)
        });
        assert!(read, "synchronous_standby_names = '{names}' was never read");
    }

    /// Waits (bounded at 30 s) until the standbys streaming from this primary are
    /// `expected`: `APP=SYNC_STATE` pairs in `application_name` order, comma-separated
    /// (`"s1=sync,s2=async"`).
    pub fn wait_for_standbys(&self, expected: &str) {
        let query = "SELECT coalesce(string_agg(application_name || '=' || sync_state, ',' \
                     ORDER BY application_name), '') FROM pg_stat_replication \
                     WHERE state = 'streaming'";
        let mut seen = String::new();
        let reached = crate::service::until(Duration::from_secs(30), || {
            seen = self.psql("postgres", query).unwrap_or_default();
            seen == expected
        });
        assert!(reached, "the standbys never were {expected}: last {seen}");
    }

    /// Sends `signal` (`STOP`, `CONT`) to the whole server: the postmaster and every
    /// process it started (the backends that serve the open sessions, the WAL writer, ...).
    /// The postmaster alone, stopped, would leave the open sessions served. When this
    /// returns, every process has been signalled: a `STOP` is whole from then on.
    pub fn signal_all(&self, signal: &str) {
        let postmaster = self.process.pid().expect("a running server");
        // A child may have exited since it was listed (an autovacuum worker): `kill`
        // then fails for it alone and still signals the others.
        let kill = |pids: &[u32]| {
            let _ = Command::new("kill")
                .arg(format!("-{signal}"))
                .args(pids.iter().map(u32::to_string))
                .status();
        };
        // Stopped first, so that it starts no process after the children are listed;
        // continued last, so that none starts before its siblings run.
        if signal == "STOP" {
            kill(&[postmaster]);
        }
        let children: Vec<u32> = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                // `/proc/PID/stat`: `PID (COMM) STATE PPID ...`; COMM may hold spaces.
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .ok()
                    .and_then(|stat| {
                        let after = &stat[stat.rfind(')')? + 1..];
                        after.split_whitespace().nth(1)?.parse::<u32>().ok()
                    })
                    == Some(postmaster)
            })
            .collect();
        // One `kill` for all the children: one instant, not one process start each.
        if !children.is_empty() {
            kill(&children);
        }
        if signal != "STOP" {
            kill(&[postmaster]);
        }
    }

    /// Promotes a standby to primary, and waits (bounded) until it takes writes.
    pub fn promote(&self) {
        let status = self
            .command("pg_ctl")
            .arg("promote")
            .arg("-D")
            .arg(self.data())
            .args(["-w", "-t", "30"])
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "pg_ctl promote failed");
        let deadline = Instant::now() + Duration::from_secs(30);
        while self
            .psql("postgres", "SELECT pg_is_in_recovery()")
            .as_deref()
            != Ok("f")
        {
            assert!(Instant::now() < deadline, "the standby was not promoted");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Server for Postgres {
    fn url(&self) -> String {
        self.url_of("postgres")
    }

    /// An immediate shutdown: the server and its backends go at once, without a
    /// checkpoint, as in a crash (`kill -9` of the postmaster alone would leave its
    /// backends holding the data directory).
    fn stop(&mut self) {
        if self.process.pid().is_some() {
            let _ = self
                .command("pg_ctl")
                .arg("stop")
                .arg("-D")
                .arg(self.data())
                .args(["-m", "immediate", "-w", "-t", "30"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
        self.process.stop();
    }

    /// Starts (or restarts) the server on the same port and data, and waits (bounded)
    /// until it answers.
    fn launch(&mut self) {
        let mut command = self.command("postgres");
        command.arg("-D").arg(self.data());
        let port = self.port;
        self.process.start(&mut command);
        let log = self.process.dir.join("server.log");
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.answers() {
            assert!(
                Instant::now() < deadline,
                "PostgreSQL on port {port} did not answer within 60s: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The claim's row given to nobody: its token cleared and its lease ended, as an
    /// operator's `UPDATE` would.
    fn take_claim_away(&self, namespace: &str, node: u64) {
        let done = self.sql(
            "postgres",
            &format!(
                "UPDATE flakeid.nodes SET token = 0, expires = NULL \
                 WHERE namespace = '{namespace}' AND node = {node} RETURNING node"
            ),
        );
        assert_eq!(
            done,
            node.to_string(),
            "{namespace}/{node} was not there to take"
        );
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}
