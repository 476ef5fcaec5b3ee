//! TLS for the client by rustls: the server's certificate and name verified by the
//! configuration given, the server's authentication requests read through an
//! [`AuthScan`] inside the TLS session (no password in clear text or by MD5 unless the URL
//! allows it), and the `tls-server-end-point` channel binding (RFC 5929) that SCRAM-SHA-256-PLUS
//! binds the password's proof to, so that the proof is good for this session and no other.

use core::future::Future;
use core::pin::Pin;
use std::io;
use std::sync::Arc;

use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use tokio_rustls::TlsConnector;

use crate::auth::Guarded;
use crate::settings::AuthMethods;

/// Makes a [`Connect`] for each host.
#[derive(Clone)]
pub(crate) struct MakeTls {
    config: Arc<ClientConfig>,
    auth: AuthMethods,
}

impl MakeTls {
    pub(crate) fn new(config: ClientConfig, auth: AuthMethods) -> MakeTls {
        MakeTls {
            config: Arc::new(config),
            auth,
        }
    }
}

/// TLS to one host, by its name.
pub(crate) struct Connect {
    connector: TlsConnector,
    name: ServerName<'static>,
    auth: AuthMethods,
}

/// A TLS session whose server messages pass through an [`AuthScan`](crate::auth::AuthScan).
pub(crate) type Session<S> = Guarded<tokio_rustls::client::TlsStream<S>>;

impl<S> MakeTlsConnect<S> for MakeTls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = Session<S>;
    type TlsConnect = Connect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> io::Result<Connect> {
        let name = ServerName::try_from(domain.to_owned())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Ok(Connect {
            connector: TlsConnector::from(Arc::clone(&self.config)),
            name,
            auth: self.auth,
        })
    }
}

impl<S> TlsConnect<S> for Connect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = Session<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Session<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let session = self.connector.connect(self.name, stream).await?;
            Ok(Guarded::new(session, self.auth))
        })
    }
}

impl<S> TlsStream for Session<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    /// `tls-server-end-point`: the hash of the server's certificate, by its signature's
    /// hash (SHA-256 for MD5 and SHA-1, as RFC 5929 says); none for a signature without
    /// one hash (Ed25519, RSASSA-PSS), as PostgreSQL does.
    fn channel_binding(&self) -> ChannelBinding {
        let (_, connection) = self.get_ref().get_ref();
        let Some(cert) = connection.peer_certificates().and_then(|c| c.first()) else {
            return ChannelBinding::none();
        };
        match end_point_hash(cert.as_ref()) {
            Some(algorithm) => ChannelBinding::tls_server_end_point(
                ring::digest::digest(algorithm, cert.as_ref())
                    .as_ref()
                    .to_vec(),
            ),
            None => ChannelBinding::none(),
        }
    }
}

/// The hash RFC 5929 binds a certificate by: its signature algorithm's hash, SHA-256 in
/// place of MD5 and SHA-1.
fn end_point_hash(der: &[u8]) -> Option<&'static ring::digest::Algorithm> {
    use x509_cert::der::Decode;
    let cert = x509_cert::Certificate::from_der(der).ok()?;
    let oid = cert.signature_algorithm.oid.to_string();
    Some(match oid.as_str() {
        // md5WithRSAEncryption, sha1WithRSAEncryption, sha256WithRSAEncryption,
        // ecdsa-with-SHA1, ecdsa-with-SHA256
        "1.2.840.113549.1.1.4"
        | "1.2.840.113549.1.1.5"
        | "1.2.840.113549.1.1.11"
        | "1.2.840.10045.4.1"
        | "1.2.840.10045.4.3.2" => &ring::digest::SHA256,
        // sha384WithRSAEncryption, ecdsa-with-SHA384
        "1.2.840.113549.1.1.12" | "1.2.840.10045.4.3.3" => &ring::digest::SHA384,
        // sha512WithRSAEncryption, ecdsa-with-SHA512
        "1.2.840.113549.1.1.13" | "1.2.840.10045.4.3.4" => &ring::digest::SHA512,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests' certificates (ECDSA P-256 with SHA-256) bind by SHA-256; data that is no
    /// certificate binds by nothing.
    #[test]
    fn the_end_point_hash_follows_the_signature() {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let dir = std::env::temp_dir().join(format!("flakeid-pg-cb-{}", std::process::id()));
        let certs = flakeid_fleet::certs::make(&dir, "cb", "flakeid");
        let der = CertificateDer::from_pem_file(&certs.server_cert).unwrap();
        assert_eq!(
            end_point_hash(der.as_ref()).map(|a| a.output_len()),
            Some(32)
        );
        assert!(end_point_hash(b"not a certificate").is_none());
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Against a real PostgreSQL over TLS (scram-sha-256, a client certificate), a client
    /// that requires channel binding connects through [`MakeTls`]: the password's proof is
    /// bound to the session (SCRAM-SHA-256-PLUS).
    #[test]
    fn a_real_server_takes_the_channel_binding() {
        use tokio_postgres::config::{ChannelBinding as Binding, SslMode};
        let _one = flakeid_fleet::scenarios::one_at_a_time();
        let dir = std::env::temp_dir().join(format!("flakeid-pg-cbs-{}", std::process::id()));
        let certs = flakeid_fleet::certs::make(&dir, "pg", "flakeid");
        let Some(server) = flakeid_fleet::postgres::Postgres::start_tls("binding", &certs) else {
            return;
        };
        let tls = crate::settings::Tls {
            ca: Some(certs.ca.clone()),
            client: Some((certs.client_cert.clone(), certs.client_key.clone())),
        };
        let make = crate::connect::rustls_connector(&tls, AuthMethods::default()).unwrap();
        let mut config = tokio_postgres::Config::new();
        config
            .host("127.0.0.1")
            .port(server.port)
            .user(flakeid_fleet::postgres::SUPERUSER)
            .password(flakeid_fleet::postgres::PASSWORD)
            .dbname("postgres")
            .ssl_mode(SslMode::Require)
            .channel_binding(Binding::Require);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (client, connection) = config.connect(make).await.unwrap();
            let driver = tokio::spawn(connection);
            let one: i32 = client.query_one("SELECT 1", &[]).await.unwrap().get(0);
            assert_eq!(one, 1);
            drop(client);
            let _ = driver.await;
        });
        let _ = std::fs::remove_dir_all(dir);
    }
}
