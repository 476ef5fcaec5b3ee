//! A connection to the primary: TLS, the session's settings, the tables checked, and what
//! the primary's replication promises of a committed reservation.

use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;
use std::string::String;
use std::sync::Arc;
use std::vec::Vec;

use flakeid::claim::store::{read_key, read_pem, unreachable};
use flakeid::claim::{ClaimError, Reason};
use tokio_postgres::config::{SslMode, TargetSessionAttrs};
use tokio_postgres::error::Severity;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{AsyncMessage, Client, Config, NoTls, Socket};

use crate::auth::Guarded;
use crate::errors::pg_error;
use crate::schema;
use crate::settings::{AuthMethods, Settings, Tls};
use crate::tls::MakeTls;
use crate::topology;

/// A session on the primary.
pub(crate) struct Session {
    /// The client of the session.
    pub(crate) client: Arc<Client>,
    /// How many warnings the server sent (as it does when a commit's wait for a
    /// synchronous standby is cancelled: the write is committed on the primary, maybe not
    /// on the standby). Not the risks of the primary's replication, which are text.
    warned: Arc<AtomicU64>,
    /// `synchronous_standby_names` on the primary: the standbys each commit waits for.
    pub(crate) standby_names: String,
    /// The question of the primary's replication, asked after every request.
    pub(crate) topology: tokio_postgres::Statement,
}

impl Session {
    /// How many warnings the server sent so far. A request whose statements all returned
    /// between two readings that differ may have written on the primary only, so its
    /// success is not to be trusted (a request made at the same time is not trusted
    /// either: the count does not say whose statement was warned about).
    pub(crate) fn warned(&self) -> u64 {
        self.warned.load(Ordering::Acquire)
    }
}

/// How long, once a host answered as the primary, the others still have to answer: a
/// second primary among them (an old one still running beside a promoted standby) is
/// refused, and a host that does not answer (frozen, or dropping packets) costs no more.
const SECOND_PRIMARY_WAIT: Duration = Duration::from_millis(200);

/// A host of the URL and the client's configuration for it.
#[derive(Clone)]
struct Host {
    name: String,
    port: u16,
    /// `HOST:PORT`, as messages show it.
    shown: String,
    config: Config,
}

/// How a connection is made: the client's configuration and TLS, built once.
pub(crate) struct Connector {
    /// Each host of the URL, in its order.
    hosts: Vec<Host>,
    tls: Option<MakeTls>,
    settings: Settings,
    /// The bound on one attempt: the session's `statement_timeout` is four fifths of it.
    attempt: Duration,
}

impl Connector {
    /// The connector for `settings`, each attempt bounded by `attempt`.
    pub(crate) fn new(settings: &Settings, attempt: Duration) -> Result<Connector, ClaimError> {
        let mut config = Config::new();
        config
            .dbname(&settings.dbname)
            .user(&settings.user)
            .application_name(&settings.application_name)
            .connect_timeout(attempt)
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(5))
            // The store writes: a standby is never used.
            .target_session_attrs(TargetSessionAttrs::ReadWrite)
            // Pinned from the session's first statement: a function or operator another
            // role planted in `public` or in a schema named like this role is never
            // found (every statement also names pg_catalog's functions and types).
            .options("-c search_path=pg_catalog,pg_temp");
        if let Some(password) = &settings.password {
            config.password(password.expose());
        }
        let tls = match &settings.tls {
            Some(tls) => {
                config.ssl_mode(SslMode::Require);
                // SCRAM-SHA-256-PLUS where the server offers it: the password's proof
                // bound to this session (tokio-postgres's default, "prefer").
                Some(rustls_connector(tls, settings.auth)?)
            }
            None => {
                config.ssl_mode(SslMode::Disable);
                None
            }
        };
        // Each host on its own, all at once (not one after another), so that a host that
        // never answers costs no more than the wait above.
        let hosts = settings
            .hosts
            .iter()
            .map(|(host, port)| {
                let mut config = config.clone();
                config.host(host).port(*port);
                let shown = if host.contains(':') {
                    format!("[{host}]:{port}")
                } else {
                    format!("{host}:{port}")
                };
                Host {
                    name: host.clone(),
                    port: *port,
                    shown,
                    config,
                }
            })
            .collect();
        Ok(Connector {
            hosts,
            tls,
            settings: settings.clone(),
            attempt,
        })
    }

    /// A connection to the one host of the URL that takes writes, and the count of its
    /// warnings. The hosts are tried all at once, each within the attempt bound; once one
    /// answers as the primary, the others have [`SECOND_PRIMARY_WAIT`] to answer too,
    /// and a second primary that is not the same server is refused. Without a primary,
    /// the error that says most: a refusal (a password, a certificate) before an outage,
    /// the URL's first host before the others.
    async fn primary(&self) -> Result<(Client, Arc<AtomicU64>), ClaimError> {
        let (url, schema) = (&self.settings.url, &self.settings.schema);
        let mut tries = tokio::task::JoinSet::new();
        for (index, host) in self.hosts.iter().enumerate() {
            let (host, tls, attempt) = (host.clone(), self.tls.clone(), self.attempt);
            let (url, schema, auth) = (url.clone(), schema.clone(), self.settings.auth);
            tries.spawn(async move {
                let warned = Arc::new(AtomicU64::new(0));
                let counter = Arc::clone(&warned);
                let once = async {
                    match tls {
                        Some(tls) => open(&host.config, tls, counter)
                            .await
                            .map_err(|e| pg_error(&url, &schema, e)),
                        None => open_plain(&host, auth, counter, &url, &schema).await,
                    }
                };
                let opened = match tokio::time::timeout(attempt, once).await {
                    Ok(opened) => opened,
                    Err(_) => Err(unreachable(
                        &url,
                        format!("{}: no answer within {attempt:?}", host.shown),
                    )),
                };
                (index, opened.map(|client| (client, warned)))
            });
        }
        let mut found: Option<(usize, Client, Arc<AtomicU64>)> = None;
        let mut errors: Vec<(usize, ClaimError)> = Vec::new();
        let mut until = None;
        loop {
            let next = match until {
                None => tries.join_next().await,
                Some(until) => match tokio::time::timeout_at(until, tries.join_next()).await {
                    Ok(next) => next,
                    Err(_) => break,
                },
            };
            let Some(joined) = next else {
                break;
            };
            let Ok((index, opened)) = joined else {
                continue;
            };
            let host = &self.hosts[index].shown;
            match opened {
                Ok((client, warned)) => match &found {
                    None => {
                        found = Some((index, client, warned));
                        until = Some(tokio::time::Instant::now() + SECOND_PRIMARY_WAIT);
                    }
                    Some((first, first_client, _)) => {
                        if !same_server(first_client, &client).await {
                            return Err(ClaimError::Refused {
                                store: url.clone(),
                                reason: format!(
                                    "two hosts of the URL take writes ({} and {host}): an old primary still runs beside a promoted standby, and holders on each would mint the same IDs. Stop or fence the old primary (flakeid-postgres's README, Replication and failover)",
                                    self.hosts[*first].shown
                                ).into(),
                            });
                        }
                    }
                },
                Err(e) => errors.push((index, e)),
            }
        }
        if let Some((_, client, warned)) = found {
            return Ok((client, warned));
        }
        let rank = |e: &ClaimError| match e.kind() {
            flakeid::claim::ClaimErrorKind::Access => 0,
            flakeid::claim::ClaimErrorKind::Unavailable => 2,
            _ => 1,
        };
        errors.sort_by_key(|(index, e)| (rank(e), *index));
        Err(errors.into_iter().next().map_or_else(
            || unreachable(url, format!("no answer within {:?}", self.attempt)),
            |(_, e)| e,
        ))
    }

    /// What the URL said.
    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// A new session on the primary, its settings made, its tables checked; and the
    /// warnings of what the primary's replication risks.
    pub(crate) async fn connect(&self) -> Result<(Session, Vec<String>), ClaimError> {
        let (url, schema) = (&self.settings.url, &self.settings.schema);
        let e = |e: tokio_postgres::Error| pg_error(url, schema, e);
        let (mut client, warned) = self.primary().await?;
        // Each reservation is committed where a failover keeps it (the standby's
        // flush), each statement at read committed with its row locks, and a statement
        // that hangs (a lock held by a stalled session) is cancelled by the server.
        // The server cancels a statement a little before the client gives up on it, so
        // that the session stays usable and the error says what happened.
        let ms = (self.attempt.as_millis() * 4 / 5).max(1);
        client
            .batch_execute(&format!(
                "SET synchronous_commit = on; \
                 SET default_transaction_isolation = 'read committed'; \
                 SET statement_timeout = {ms}; \
                 SET idle_in_transaction_session_timeout = {idle}",
                idle = ms * 2
            ))
            .await
            .map_err(e)?;
        let topology = topology::prepare(&client, url, schema).await?;
        let (risks, standby_names) =
            topology::check(&client, &topology, url, schema, self.settings.replication).await?;
        schema::ensure(&mut client, url, schema, self.settings.owner.as_deref()).await?;
        let session = Session {
            client: Arc::new(client),
            warned,
            standby_names,
            topology,
        };
        Ok((session, risks))
    }
}

/// Whether two sessions are on one server (a URL may name it twice, by two names): the
/// same system and the same postmaster start. A promoted standby shares the system
/// identifier of its old primary, never the start.
async fn same_server(a: &Client, b: &Client) -> bool {
    const WHO: &str = "SELECT (SELECT system_identifier FROM pg_catalog.pg_control_system())::pg_catalog.text \
                       || ' ' || pg_catalog.pg_postmaster_start_time()::pg_catalog.text";
    match (a.query_one(WHO, &[]).await, b.query_one(WHO, &[]).await) {
        (Ok(a), Ok(b)) => a.get::<_, String>(0) == b.get::<_, String>(0),
        _ => false,
    }
}

/// Connects by `config` over `tls`, the connection driven by a task of its own, which
/// counts in `warned` each warning the server sends.
async fn open<T>(
    config: &Config,
    tls: T,
    warned: Arc<AtomicU64>,
) -> Result<Client, tokio_postgres::Error>
where
    T: MakeTlsConnect<Socket> + Send + 'static,
    T::Stream: Send + 'static,
    T::TlsConnect: Send,
    <T::TlsConnect as tokio_postgres::tls::TlsConnect<Socket>>::Future: Send,
{
    let (client, connection) = config.connect(tls).await?;
    drive(connection, warned);
    Ok(client)
}

/// Drives `connection` on a task of its own, counting in `warned` each warning the
/// server sends.
fn drive<S, T>(mut connection: tokio_postgres::Connection<S, T>, warned: Arc<AtomicU64>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        // The connection ends with an error or a close: the client's next request says
        // so, and the store connects again. A notice is handed over before the messages
        // after it, so it is counted before the statement it came with returns.
        while let Some(Ok(message)) = core::future::poll_fn(|cx| connection.poll_message(cx)).await
        {
            if let AsyncMessage::Notice(notice) = message
                && notice.parsed_severity() == Some(Severity::Warning)
            {
                warned.fetch_add(1, Ordering::Release);
            }
        }
    });
}

/// Connects to `host` in plain text through a [`Guarded`] stream (no password in clear
/// text or by MD5 unless `auth` allows it), the connection driven as [`open`] drives it;
/// a host that takes no writes is refused as the client refuses it over TLS.
async fn open_plain(
    host: &Host,
    auth: AuthMethods,
    warned: Arc<AtomicU64>,
    url: &str,
    schema: &str,
) -> Result<Client, ClaimError> {
    let stream = tokio::net::TcpStream::connect((host.name.as_str(), host.port))
        .await
        .map_err(|e| unreachable(url, Reason::from_error(e).context(&host.shown)))?;
    let _ = stream.set_nodelay(true);
    let keepalive = socket2::TcpKeepalive::new().with_time(Duration::from_secs(5));
    let _ = socket2::SockRef::from(&stream).set_tcp_keepalive(&keepalive);
    let (client, connection) = host
        .config
        .connect_raw(Guarded::new(stream, auth), NoTls)
        .await
        .map_err(|e| pg_error(url, schema, e))?;
    drive(connection, warned);
    let read_only: String = client
        .query_one("SHOW transaction_read_only", &[])
        .await
        .map_err(|e| pg_error(url, schema, e))?
        .get(0);
    if read_only == "on" {
        return Err(crate::errors::takes_no_writes(url, Some(&host.shown)));
    }
    Ok(client)
}

/// rustls for `tls`: the server's certificate and name always verified, against the CA
/// bundle or the system's roots; a client certificate where given.
pub(crate) fn rustls_connector(tls: &Tls, auth: AuthMethods) -> Result<MakeTls, ClaimError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let bad_pem = |path: &std::path::Path, what: &str| ClaimError::Io {
        path: path.display().to_string(),
        reason: format!("it holds no PEM {what}").into(),
    };
    let mut roots = rustls::RootCertStore::empty();
    match &tls.ca {
        Some(ca) => {
            let pem = read_pem(ca, "CA bundle (sslrootcert=)")?;
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|_| bad_pem(ca, "certificate"))?;
                roots.add(cert).map_err(|e| ClaimError::Io {
                    path: ca.display().to_string(),
                    reason: Reason::from_error(e)
                        .context("a certificate in it cannot be used as a CA"),
                })?;
            }
            if roots.is_empty() {
                return Err(bad_pem(ca, "certificate"));
            }
        }
        None => {
            let native = rustls_native_certs::load_native_certs();
            for cert in native.certs {
                let _ = roots.add(cert);
            }
        }
    }
    // ring, not aws-lc-rs: it builds with cargo alone (no cmake, no NASM). rustls 0.23.48
    // deprecates its provider for lacking post-quantum key exchange, which this TLS
    // does not offer yet either way.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ClaimError::Io {
            path: "TLS".into(),
            reason: Reason::from_error(e),
        })?
        .with_root_certificates(roots);
    let config = match &tls.client {
        Some((cert, key)) => {
            let cert_pem = read_pem(cert, "client certificate (sslcert=)")?;
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
                .collect::<Result<_, _>>()
                .map_err(|_| bad_pem(cert, "certificate"))?;
            let key_pem = read_key(key, "client key (sslkey=)")?;
            let key_der =
                PrivateKeyDer::from_pem_slice(&key_pem).map_err(|_| bad_pem(key, "private key"))?;
            builder
                .with_client_auth_cert(certs, key_der)
                .map_err(|e| ClaimError::Io {
                    path: cert.display().to_string(),
                    reason: Reason::from_error(e)
                        .context("the client certificate and key do not go together"),
                })?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(MakeTls::new(config, auth))
}
