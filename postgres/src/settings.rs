//! What a `postgres://` URL says: the hosts, the database, the role, the schema, TLS and
//! what the store accepts of the server's replication.

use core::time::Duration;
use std::path::PathBuf;
use std::string::String;
use std::vec::Vec;

use flakeid::claim::store::StoreUrl;
use flakeid::claim::{Access, ClaimError, OpenOptions, Secret};

/// The port of a host given without one.
const DEFAULT_PORT: u16 = 5432;

/// The schema of the store's tables when the URL names none.
pub const DEFAULT_SCHEMA: &str = "flakeid";

/// The query parameters a `postgres://` URL takes.
const KNOWN: &[&str] = &[
    "schema",
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "ca",
    "cert",
    "key",
    "user",
    "password-file",
    "password_file",
    "target_session_attrs",
    "replication",
    "application_name",
    "owner",
    "require_auth",
];

/// Names of one parameter: each pair may be given once between them.
const ALIASES: &[(&str, &str)] = &[
    ("ca", "sslrootcert"),
    ("cert", "sslcert"),
    ("key", "sslkey"),
    ("password-file", "password_file"),
];

/// What the store accepts of the primary's replication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replication {
    /// A committed reservation must survive a failover: synchronous standbys, or none at
    /// all (a lone server has nothing to fail over to).
    Synchronous,
    /// `replication=async`: asynchronous standbys accepted, with a warning.
    Asynchronous,
}

/// The ways of proving the password the store accepts when the server asks
/// (`require_auth=`, as libpq names them): SCRAM-SHA-256 always; MD5 and the password in
/// clear text only where the URL lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AuthMethods {
    /// `md5`: the MD5 challenge, whose answer a listener can replay and crack offline.
    pub md5: bool,
    /// `password`: the password itself, to whoever asks.
    pub cleartext: bool,
}

/// A `postgres://` URL, read.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The URL as messages show it.
    pub url: String,
    /// `(host, port)`, in the order given.
    pub hosts: Vec<(String, u16)>,
    /// The database.
    pub dbname: String,
    /// The role.
    pub user: String,
    /// Its password, from `password-file=` or the options.
    pub password: Option<Secret>,
    /// The schema of the store's tables.
    pub schema: String,
    /// TLS: the CA bundle (or the system's roots) and a client certificate.
    pub tls: Option<Tls>,
    /// What is accepted of the primary's replication.
    pub replication: Replication,
    /// `application_name` of the store's sessions.
    pub application_name: String,
    /// The role that owns the schema and its tables (`owner=`); without it, the role the
    /// store connects as.
    pub owner: Option<String>,
    /// How the password may be proved beside SCRAM.
    pub auth: AuthMethods,
    /// The lease of a claim.
    pub ttl: Duration,
    /// The bound on a request.
    pub timeout: Duration,
}

/// TLS to the servers: always with the server's certificate and name verified.
#[derive(Debug, Clone, Default)]
pub struct Tls {
    /// The CA bundle (PEM); the system's roots without one.
    pub ca: Option<PathBuf>,
    /// A client certificate (PEM) and its key.
    pub client: Option<(PathBuf, PathBuf)>,
}

impl Settings {
    /// Reads `url` (`postgres://` or `postgresql://`) with the TTL, timeout and access of
    /// `options` under the URL's.
    pub fn from_url(url: &StoreUrl, options: &OpenOptions) -> Result<Settings, ClaimError> {
        let shown = url.redacted().to_owned();
        if url.get("password").is_some() {
            return Err(ClaimError::PasswordInUrl { url: shown });
        }
        url.only(KNOWN)?;
        for (a, b) in ALIASES {
            if url.get(a).is_some() && url.get(b).is_some() {
                return Err(url.bad(format!("{a}= and {b}= name one file: give one of them")));
            }
        }
        let authority = url.authority().unwrap_or_default();
        let (userinfo, hostlist) = match authority.rsplit_once('@') {
            Some((userinfo, hosts)) => (Some(userinfo), hosts),
            None => (None, authority),
        };
        if userinfo.is_some_and(|u| u.contains(':')) {
            return Err(ClaimError::PasswordInUrl { url: shown });
        }
        let hosts = hosts(url, hostlist)?;
        let access = access(url, &options.access, userinfo)?;
        let user = match access.user.clone() {
            Some(user) => user,
            // libpq's default, the user the process runs as, where the environment
            // says it; else the superuser's usual name.
            None => std::env::var("USER")
                .or_else(|_| std::env::var("LOGNAME"))
                .unwrap_or_else(|_| "postgres".into()),
        };
        let dbname = match url.path().trim_start_matches('/') {
            "" => user.clone(),
            db if db.contains('/') => {
                return Err(url.bad("the path is the database: postgres://HOST/DB"));
            }
            db => db.to_owned(),
        };
        let schema = url.get("schema").unwrap_or(DEFAULT_SCHEMA).to_owned();
        check_identifier(url, &schema)?;
        let tls = tls(url, &access)?;
        let auth = auth_methods(url)?;
        if access.password.is_some() && tls.is_none() && url.get("sslmode") != Some("disable") {
            return Err(url.bad(
                "a password-file= without TLS would send the role's proof of its password to whatever answers at the host's address: give sslmode=verify-full (with sslrootcert=, or the system's roots), or sslmode=disable on a network that is yours alone",
            ));
        }
        let replication = match url.get("replication") {
            None | Some("sync") => Replication::Synchronous,
            Some("async") => Replication::Asynchronous,
            Some(other) => {
                return Err(url.bad(format!(
                    "replication={other}: give replication=sync (the default) or replication=async"
                )));
            }
        };
        match url.get("target_session_attrs") {
            None | Some("read-write") | Some("primary") => {}
            Some(other) => {
                return Err(url.bad(format!(
                    "target_session_attrs={other}: the store writes, so it only connects to a primary (read-write)"
                )));
            }
        }
        if options.ttl < Duration::from_secs(1) {
            return Err(url.bad("the lease TTL is at least 1s"));
        }
        Ok(Settings {
            url: shown,
            hosts,
            dbname,
            user,
            password: access.password,
            schema,
            tls,
            replication,
            application_name: url.get("application_name").unwrap_or("flakeid").to_owned(),
            owner: url.get("owner").map(str::to_owned),
            auth,
            ttl: options.ttl,
            timeout: options.timeout,
        })
    }
}

/// The hosts of `HOST[:PORT][,HOST[:PORT]...]`, or why not.
fn hosts(url: &StoreUrl, list: &str) -> Result<Vec<(String, u16)>, ClaimError> {
    let bad = || url.bad("give postgres://[ROLE@]HOST[:PORT][,HOST[:PORT]...]/DB");
    if list.is_empty() {
        return Err(bad());
    }
    list.split(',')
        .map(|host| {
            // An IPv6 address is in brackets: [::1]:5432.
            let (name, port) = match host.strip_prefix('[') {
                Some(rest) => {
                    let (name, after) = rest.split_once(']').ok_or_else(bad)?;
                    (name, after.strip_prefix(':'))
                }
                None => match host.rsplit_once(':') {
                    Some((name, port)) => (name, Some(port)),
                    None => (host, None),
                },
            };
            let port = match port {
                None => DEFAULT_PORT,
                Some(p) => p.parse().map_err(|_| bad())?,
            };
            if name.is_empty() {
                return Err(bad());
            }
            Ok((name.to_owned(), port))
        })
        .collect()
}

/// The access the URL and `options` give: the role from the URL's user part or `user=`,
/// a password from `password-file=` (never from the URL), TLS files under libpq's names
/// or the other stores'.
fn access(url: &StoreUrl, base: &Access, userinfo: Option<&str>) -> Result<Access, ClaimError> {
    let mut access = base.clone();
    if let Some(user) = userinfo.filter(|u| !u.is_empty()) {
        access.user = Some(user.to_owned());
    }
    for (name, value) in url.query() {
        let value = value.as_str();
        match name.as_str() {
            "ca" | "sslrootcert" => access.ca = Some(value.into()),
            "cert" | "sslcert" => access.cert = Some(value.into()),
            "key" | "sslkey" => access.key = Some(value.into()),
            "user" => access.user = Some(value.into()),
            "password-file" | "password_file" => {
                access.password = Some(Secret::from_file(value)?);
            }
            _ => {}
        }
    }
    if access.cert.is_some() != access.key.is_some() {
        return Err(url.bad(
            "a client certificate needs both sslcert=FILE and sslkey=FILE (or cert= and key=)",
        ));
    }
    if access.password.is_some() && access.user.is_none() {
        return Err(url.bad("a password without a role: give postgres://ROLE@HOST/DB"));
    }
    Ok(access)
}

/// `require_auth=` (libpq's name): a comma-separated list of `scram-sha-256`, `md5` and
/// `password`; SCRAM alone without it.
fn auth_methods(url: &StoreUrl) -> Result<AuthMethods, ClaimError> {
    let mut auth = AuthMethods::default();
    let Some(list) = url.get("require_auth") else {
        return Ok(auth);
    };
    for method in list.split(',') {
        match method {
            "scram-sha-256" => {}
            "md5" => auth.md5 = true,
            "password" => auth.cleartext = true,
            other => {
                return Err(url.bad(format!(
                    "require_auth={list}: {other:?} is not a method the store sends a password by; give scram-sha-256, md5 or password, comma-separated"
                )));
            }
        }
    }
    Ok(auth)
}

/// TLS as `sslmode=` asks, or `None` for plain text.
fn tls(url: &StoreUrl, access: &Access) -> Result<Option<Tls>, ClaimError> {
    let files = access.tls || access.ca.is_some() || access.cert.is_some();
    let on = match url.get("sslmode") {
        None => files,
        Some("disable") if files => {
            return Err(url.bad(
                "sslmode=disable with TLS files: drop sslrootcert=/sslcert=, or give sslmode=verify-full",
            ));
        }
        Some("disable") => false,
        Some("require" | "verify-ca" | "verify-full") => true,
        Some(mode @ ("prefer" | "allow")) => {
            return Err(url.bad(format!(
                "sslmode={mode} may fall back to plain text, which flakeid never does: give sslmode=verify-full (the server's certificate checked against sslrootcert= or the system's roots) or sslmode=disable"
            )));
        }
        Some(other) => {
            return Err(url.bad(format!(
                "sslmode={other}: give sslmode=verify-full or sslmode=disable"
            )));
        }
    };
    Ok(on.then(|| Tls {
        ca: access.ca.clone(),
        client: access.cert.clone().zip(access.key.clone()),
    }))
}

/// A schema name the store can put in its statements as it is: letters, digits and `_`,
/// not starting with a digit, at most 63 bytes (PostgreSQL's limit), lower case (an
/// unquoted name is folded to it).
fn check_identifier(url: &StoreUrl, name: &str) -> Result<(), ClaimError> {
    let valid = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !name.as_bytes()[0].is_ascii_digit();
    if valid {
        Ok(())
    } else {
        Err(url.bad(format!(
            "schema={name}: give a name of lower-case letters, digits and _ (at most 63, not starting with a digit)"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(url: &str) -> Result<Settings, ClaimError> {
        Settings::from_url(&StoreUrl::parse(url)?, &OpenOptions::default())
    }

    /// Each part of a URL lands where it belongs; what is left out takes libpq's default.
    #[test]
    fn a_url_says_hosts_database_role_schema_and_tls() {
        let s = read("postgres://ids@h1,h2:6432,[::1]:7/orders?schema=claims&target_session_attrs=read-write").unwrap();
        assert_eq!(
            s.hosts,
            [
                ("h1".to_owned(), 5432),
                ("h2".to_owned(), 6432),
                ("::1".to_owned(), 7)
            ]
        );
        assert_eq!((s.dbname.as_str(), s.user.as_str()), ("orders", "ids"));
        assert_eq!(s.schema, "claims");
        assert!(s.tls.is_none());
        assert_eq!(s.replication, Replication::Synchronous);
        let s =
            read("postgresql://ids@h?sslmode=verify-full&sslrootcert=/ca.pem&replication=async")
                .unwrap();
        assert_eq!(s.dbname, "ids", "the database defaults to the role's name");
        assert_eq!(s.schema, DEFAULT_SCHEMA);
        let tls = s.tls.unwrap();
        assert_eq!(tls.ca.as_deref(), Some(std::path::Path::new("/ca.pem")));
        assert_eq!(s.replication, Replication::Asynchronous);
    }

    /// What the store cannot honour is refused before it connects, saying what to give.
    #[test]
    fn what_the_store_cannot_honour_is_refused_by_name() {
        for (url, says) in [
            ("postgres://ids:hunter2@h/db", "password"),
            ("postgres://ids@h/db?password=hunter2", "password"),
            ("postgres://ids@h/db?sslmode=prefer", "never"),
            (
                "postgres://ids@h/db?sslmode=disable&sslrootcert=/ca",
                "sslmode=disable",
            ),
            ("postgres://ids@h/db?schema=Bad-Name", "schema=Bad-Name"),
            ("postgres://ids@h/db?schema=1x", "schema=1x"),
            ("postgres://ids@h/db?target_session_attrs=any", "primary"),
            ("postgres://ids@h/db?replication=maybe", "replication=maybe"),
            ("postgres://ids@h/db?sslcert=/c", "sslkey"),
            ("postgres://ids@h:x/db", "HOST[:PORT]"),
            ("postgres://ids@/db", "HOST[:PORT]"),
            ("postgres://ids@h/db/more", "the path is the database"),
            ("postgres://ids@h/db?nope=1", "nope"),
            ("postgres://ids@h/db?require_auth=gss", "\"gss\""),
            (
                "postgres://ids@h/db?ca=/a&sslrootcert=/b",
                "ca= and sslrootcert=",
            ),
        ] {
            let e = read(url).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
            assert!(!e.contains("hunter2"), "{url}: {e}");
        }
    }

    /// A password goes only over TLS, unless the URL says the network is trusted
    /// (`sslmode=disable`); a password file others may read, or a FIFO, is refused.
    #[test]
    fn a_password_needs_tls_or_a_stated_trust_and_a_private_file() {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = std::env::temp_dir().join(format!("flakeid-pg-pw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = |name: &str, mode: u32| {
            let path = dir.join(name);
            let _ = std::fs::remove_file(&path);
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(&path)
                .unwrap();
            std::fs::write(&path, "hunter2").unwrap();
            path.display().to_string()
        };
        let private = file("private", 0o600);
        let open = file("open", 0o644);
        let e = read(&format!("postgres://ids@h/db?password-file={private}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("sslmode=verify-full"), "{e}");
        let s = read(&format!(
            "postgres://ids@h/db?password-file={private}&sslmode=disable"
        ))
        .unwrap();
        assert!(s.tls.is_none() && s.password.is_some());
        assert_eq!(s.auth, AuthMethods::default());
        let s = read(&format!(
            "postgres://ids@h/db?password-file={private}&sslmode=verify-full&require_auth=scram-sha-256,md5"
        ))
        .unwrap();
        assert!(s.tls.is_some() && s.auth.md5 && !s.auth.cleartext);
        let e = read(&format!(
            "postgres://ids@h/db?password-file={open}&sslmode=disable"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("mode 0644") && e.contains("chmod 600"), "{e}");
        let fifo = dir.join("fifo");
        let _ = std::fs::remove_file(&fifo);
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let e = read(&format!(
            "postgres://ids@h/db?password-file={}&sslmode=disable",
            fifo.display()
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
