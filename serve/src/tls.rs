//! TLS on the service's listeners (rustls): [`TlsKeys`], a certificate and key from PEM
//! files, reloaded when asked (SIGHUP) or when the files change, without dropping a
//! connection. Each connection's handshake runs in its own task, bounded by the header
//! timeout (see the connection server).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use tokio_rustls::rustls::crypto::CryptoProvider;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;
use tokio_rustls::rustls::{self, ServerConfig};

use crate::files::{Stamp, stamp};

/// Why a certificate and key could not be loaded: the file and what to do. Never the
/// key's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsError(String);

impl std::fmt::Display for TlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TlsError {}

/// The server's certificate chain and key, from PEM files; every new handshake uses the
/// last good pair, so a reload changes what new connections see and leaves the open
/// ones alone. A reload that fails keeps the pair in use.
pub struct TlsKeys {
    cert: PathBuf,
    key: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Arc<CertifiedKey>>,
    stamps: Mutex<(Stamp, Stamp)>,
}

impl std::fmt::Debug for TlsKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsKeys")
            .field("cert", &self.cert)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl TlsKeys {
    /// Loads the certificate chain (`cert`, PEM, the server's certificate first) and its
    /// private key (`key`, PEM: PKCS#8, PKCS#1 or SEC1).
    pub fn load(
        cert: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> Result<Arc<TlsKeys>, TlsError> {
        let (cert, key) = (cert.into(), key.into());
        // ring, not aws-lc-rs: it builds with cargo alone (no cmake, no NASM). rustls 0.23.48
        // deprecates its provider for lacking post-quantum key exchange, which this TLS
        // does not offer yet either way.
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let stamps = (stamp(&cert), stamp(&key));
        let pair = read_pair(&cert, &key, &provider)?;
        Ok(Arc::new(TlsKeys {
            cert,
            key,
            provider,
            current: RwLock::new(Arc::new(pair)),
            stamps: Mutex::new(stamps),
        }))
    }

    /// Reads the files again and, if they hold a good pair, serves it from the next
    /// handshake on; otherwise keeps the pair in use and says why.
    pub fn reload(&self) -> Result<(), TlsError> {
        let stamps = (stamp(&self.cert), stamp(&self.key));
        *self.stamps.lock().unwrap_or_else(|p| p.into_inner()) = stamps;
        let pair = read_pair(&self.cert, &self.key, &self.provider)?;
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(pair);
        Ok(())
    }

    /// Whether either file changed since it was last read.
    pub fn changed(&self) -> bool {
        let now = (stamp(&self.cert), stamp(&self.key));
        *self.stamps.lock().unwrap_or_else(|p| p.into_inner()) != now
    }

    /// The files, as flags and messages name them.
    pub fn files(&self) -> (&Path, &Path) {
        (&self.cert, &self.key)
    }

    /// A rustls server configuration that takes its certificate from these keys,
    /// offering `alpn` (as `h2`, `http/1.1`).
    pub fn server_config(self: &Arc<Self>, alpn: &[&[u8]]) -> Arc<ServerConfig> {
        let mut config = ServerConfig::builder_with_provider(Arc::clone(&self.provider))
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .with_no_client_auth()
            .with_cert_resolver(Arc::clone(self) as Arc<dyn ResolvesServerCert>);
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }
}

impl ResolvesServerCert for TlsKeys {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(
            &self.current.read().unwrap_or_else(|p| p.into_inner()),
        ))
    }
}

/// Reads and checks a certificate chain and its key.
fn read_pair(cert: &Path, key: &Path, provider: &CryptoProvider) -> Result<CertifiedKey, TlsError> {
    let read = |path: &Path, what: &str| {
        std::fs::read(path).map_err(|e| {
            TlsError(format!(
                "cannot read the TLS {what} {}: {e}; give a PEM file this process can read",
                path.display()
            ))
        })
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&read(cert, "certificate")?)
        .collect::<Result<_, _>>()
        .map_err(|e| {
            TlsError(format!(
                "{} is not a PEM certificate chain ({e}): give the server's certificate, then its intermediates",
                cert.display()
            ))
        })?;
    if chain.is_empty() {
        return Err(TlsError(format!(
            "{} holds no certificate (no BEGIN CERTIFICATE block): give the server's certificate in PEM",
            cert.display()
        )));
    }
    // The key is a secret's file: regular, this user's or root's, and readable by no
    // other user (as a claim's client key).
    let key_pem =
        flakeid::claim::store::read_key(key, "TLS key").map_err(|e| TlsError(e.to_string()))?;
    let private = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|_| {
        TlsError(format!(
            "{} holds no PEM private key (PKCS#8, PKCS#1 or SEC1): give the key of the certificate",
            key.display()
        ))
    })?;
    CertifiedKey::from_der(chain, private, provider).map_err(|e| {
        TlsError(format!(
            "the key {} does not go with the certificate {} ({e}): give the pair that belongs together",
            key.display(),
            cert.display()
        ))
    })
}

/// Reads the TLS certificate and key again; logged and counted either way.
pub(crate) fn reload_tls(tls: &TlsKeys) -> Result<(), String> {
    let (cert, _) = tls.files();
    match tls.reload() {
        Ok(()) => {
            metrics::counter!("flakeid_tls_reloads_total", "result" => "ok").increment(1);
            tracing::info!(target: "flakeid_serve", cert = %cert.display(), "TLS certificate reloaded");
            Ok(())
        }
        Err(e) => {
            metrics::counter!("flakeid_tls_reloads_total", "result" => "failed").increment(1);
            tracing::error!(target: "flakeid_serve", error = %e, "TLS certificate reload failed; the pair in use stays");
            Err(e.to_string())
        }
    }
}
