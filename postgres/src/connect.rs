//! A connection to the primary: TLS, the session's settings, the tables checked, and what
//! the primary's replication promises of a committed reservation.

use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;
use std::string::String;
use std::sync::Arc;
use std::vec::Vec;

use flakeid::claim::ClaimError;
use flakeid::claim::store::read_pem;
use tokio_postgres::config::{SslMode, TargetSessionAttrs};
use tokio_postgres::error::Severity;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{AsyncMessage, Client, Config, NoTls, Socket};

use crate::errors::pg_error;
use crate::schema;
use crate::settings::{Replication, Settings, Tls};

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

/// How a connection is made: the client's configuration and TLS, built once.
pub(crate) struct Connector {
    config: Config,
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    settings: Settings,
    /// The bound on one attempt: the session's `statement_timeout` is four fifths of it.
    attempt: Duration,
}

impl Connector {
    /// The connector for `settings`, each attempt bounded by `attempt`.
    pub(crate) fn new(settings: &Settings, attempt: Duration) -> Result<Connector, ClaimError> {
        let mut config = Config::new();
        for (host, port) in &settings.hosts {
            config.host(host).port(*port);
        }
        config
            .dbname(&settings.dbname)
            .user(&settings.user)
            .application_name(&settings.application_name)
            .connect_timeout(attempt)
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(5))
            // The store writes: a standby is never used, and a multi-host URL finds the
            // primary among its hosts.
            .target_session_attrs(TargetSessionAttrs::ReadWrite);
        if let Some(password) = &settings.password {
            config.password(password.expose());
        }
        let tls = match &settings.tls {
            Some(tls) => {
                config.ssl_mode(SslMode::Require);
                Some(rustls_connector(tls)?)
            }
            None => {
                config.ssl_mode(SslMode::Disable);
                None
            }
        };
        Ok(Connector {
            config,
            tls,
            settings: settings.clone(),
            attempt,
        })
    }

    /// A new session on the primary, its settings made, its tables checked; and the
    /// warnings of what the primary's replication risks.
    pub(crate) async fn connect(&self) -> Result<(Session, Vec<String>), ClaimError> {
        let (url, schema) = (&self.settings.url, &self.settings.schema);
        let e = |e: tokio_postgres::Error| pg_error(url, schema, &e);
        let warned = Arc::new(AtomicU64::new(0));
        let mut client = match &self.tls {
            Some(tls) => open(&self.config, tls.clone(), Arc::clone(&warned)).await,
            None => open(&self.config, NoTls, Arc::clone(&warned)).await,
        }
        .map_err(e)?;
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
        let (risks, standby_names) = self.replication(&client).await?;
        schema::ensure(&mut client, url, schema).await?;
        let session = Session {
            client: Arc::new(client),
            warned,
            standby_names,
        };
        Ok((session, risks))
    }

    /// Whether a committed reservation survives a failover: synchronous standbys, or no
    /// standby at all; asynchronous ones only with `replication=async`, with a warning.
    /// With the warnings, `synchronous_standby_names`.
    async fn replication(&self, client: &Client) -> Result<(Vec<String>, String), ClaimError> {
        let (url, schema) = (&self.settings.url, &self.settings.schema);
        let row = client
            .query_one(
                "SELECT current_setting('synchronous_standby_names'), \
                 (SELECT count(*) FROM pg_stat_replication), pg_is_in_recovery()",
                &[],
            )
            .await
            .map_err(|e| pg_error(url, schema, &e))?;
        let (names, standbys, recovery): (String, i64, bool) = (row.get(0), row.get(1), row.get(2));
        if recovery {
            return Err(flakeid::claim::store::unreachable(
                url,
                "the server is a standby (in recovery): connect to the primary, or list every host with target_session_attrs=read-write",
            ));
        }
        if !names.trim().is_empty() || standbys == 0 {
            return Ok((Vec::new(), names));
        }
        let risk = format!(
            "{url}: the primary streams to {standbys} standby(s) asynchronously (synchronous_standby_names is empty): a failover to one of them can lose the last renewals, and a holder there may then start below IDs the old holder minted (as far back as one window). Name them in synchronous_standby_names to close this"
        );
        match self.settings.replication {
            Replication::Asynchronous => Ok((vec![risk], names)),
            Replication::Synchronous => Err(ClaimError::Refused {
                store: url.clone(),
                reason: format!("{risk}, or add replication=async to the URL to accept it"),
            }),
        }
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
    let (client, mut connection) = config.connect(tls).await?;
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
    Ok(client)
}

/// rustls for `tls`: the server's certificate and name always verified, against the CA
/// bundle or the system's roots; a client certificate where given.
fn rustls_connector(tls: &Tls) -> Result<tokio_postgres_rustls::MakeRustlsConnect, ClaimError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let bad_pem = |path: &std::path::Path, what: &str| ClaimError::Io {
        path: path.display().to_string(),
        reason: format!("it holds no PEM {what}"),
    };
    let mut roots = rustls::RootCertStore::empty();
    match &tls.ca {
        Some(ca) => {
            let pem = read_pem(ca, "CA bundle (sslrootcert=)")?;
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|_| bad_pem(ca, "certificate"))?;
                roots.add(cert).map_err(|e| ClaimError::Io {
                    path: ca.display().to_string(),
                    reason: format!("a certificate in it cannot be used as a CA: {e}"),
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
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ClaimError::Io {
            path: "TLS".into(),
            reason: e.to_string(),
        })?
        .with_root_certificates(roots);
    let config = match &tls.client {
        Some((cert, key)) => {
            let cert_pem = read_pem(cert, "client certificate (sslcert=)")?;
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
                .collect::<Result<_, _>>()
                .map_err(|_| bad_pem(cert, "certificate"))?;
            let key_pem = read_pem(key, "client key (sslkey=)")?;
            let key_der =
                PrivateKeyDer::from_pem_slice(&key_pem).map_err(|_| bad_pem(key, "private key"))?;
            builder
                .with_client_auth_cert(certs, key_der)
                .map_err(|e| ClaimError::Io {
                    path: cert.display().to_string(),
                    reason: format!("the client certificate and key do not go together: {e}"),
                })?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}
