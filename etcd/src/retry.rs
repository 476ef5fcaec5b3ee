//! Retrying a request across the endpoints of an etcd cluster: one attempt bounded, the next endpoint after a failure, and the helpers of a transaction's answer.

use super::*;

/// The key-values the gets of a transaction read, one `Option` per get, in order.
pub(super) fn gets(resp: &TxnResponse) -> Vec<Option<KeyValue>> {
    resp.op_responses()
        .into_iter()
        .filter_map(|op| match op {
            TxnOpResponse::Get(get) => Some(get.kvs().first().cloned()),
            _ => None,
        })
        .collect()
}

/// The bound on one attempt of a request: a third of the request timeout and a fifth of
/// the lease TTL, whichever is shorter, at least 300 ms (a member under load answers a
/// durable write in tens of milliseconds). A renewal that meets a member which stopped
/// answering then reaches the next one within two attempts and a pause, well inside the
/// lease ([`ClaimStore::failover_bound`]).
pub(super) fn attempt_bound(timeout: Duration, ttl: Duration) -> Duration {
    (timeout / 3)
        .min(ttl / 5)
        .max(Duration::from_millis(300))
        .min(timeout)
}

/// The pause before the next attempt, on the next member.
pub(super) const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// The client of the endpoint in use.
pub(super) fn pick(clients: &[Client], current: &AtomicUsize) -> Client {
    clients[current.load(Ordering::Relaxed) % clients.len()].clone()
}

/// Moves on to the next endpoint.
pub(super) fn fail_over(current: &AtomicUsize, endpoints: usize) {
    let _ = current.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |i| {
        Some((i + 1) % endpoints)
    });
}

/// Runs `attempt` (each try bounded by `bound`) until it ends other than unreachable, or
/// `timeout` is spent: then the last error. After a try that failed or hung, `failed`
/// moves on to the next endpoint.
pub(super) async fn retrying<T, F: core::future::Future<Output = Result<T, ClaimError>>>(
    url: &str,
    timeout: Duration,
    bound: Duration,
    attempt: impl Fn() -> F,
    failed: impl Fn(),
) -> Result<T, ClaimError> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let error = match tokio::time::timeout(bound.min(left), attempt()).await {
            Ok(Err(e @ ClaimError::Unreachable { .. })) => e,
            Ok(done) => return done,
            Err(_) => unreachable(url, format!("no answer within {:?}", bound.min(left))),
        };
        failed();
        if deadline.saturating_duration_since(tokio::time::Instant::now()) <= RETRY_PAUSE {
            return Err(error);
        }
        tokio::time::sleep(RETRY_PAUSE).await;
    }
}

/// How many times a write reads and tries again when another write of the same claim
/// moved the reservation between its read and its compare-and-set (a backstop: each try
/// that loses sees a larger stored value, which ends a renewal's loop).
pub(super) const CAS_TRIES: usize = 64;

/// The lease of one operation across its attempts: the one an earlier attempt granted
/// (whose reply may have been lost after it bound a key), or a new one of `ttl` seconds.
pub(super) async fn lease_once(
    client: &mut Client,
    granted: &std::sync::Mutex<Option<i64>>,
    ttl: i64,
) -> Result<i64, etcd_client::Error> {
    let known = *granted.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(lease) = known {
        return Ok(lease);
    }
    let lease = client.lease_grant(ttl, None).await?.id();
    *granted.lock().unwrap_or_else(|p| p.into_inner()) = Some(lease);
    Ok(lease)
}

/// One keep-alive of `lease` (the one etcd-client sends when it opens the stream): the TTL
/// the member answered (0: it does not know the lease), or `None` if the stream ended
/// without an answer.
pub(super) async fn keep_alive(
    client: &mut Client,
    lease: i64,
) -> Result<Option<i64>, etcd_client::Error> {
    match client.lease_keep_alive(lease).await {
        Ok(_) => Ok(Some(1)),
        // How etcd-client reports the first answer's TTL of 0, and a stream that ended
        // before any answer.
        Err(etcd_client::Error::LeaseKeepAliveError(e)) if e.contains("lease not found") => {
            Ok(Some(0))
        }
        Err(etcd_client::Error::WatchError(e)) if e.contains("failed to create lease keeper") => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The TLS setup of `access`: its CA bundle (else the system's roots) and its client
/// certificate, each file read now so that a missing one is named.
pub(super) fn tls_options(access: &Access) -> Result<etcd_client::TlsOptions, ClaimError> {
    use etcd_client::{Certificate, Identity, TlsOptions};
    use flakeid::claim::store::{read_key, read_pem};
    let mut tls = TlsOptions::new();
    tls = match &access.ca {
        Some(ca) => tls.ca_certificate(Certificate::from_pem(read_pem(ca, "CA bundle (ca=)")?)),
        None => tls.with_native_roots(),
    };
    if let (Some(cert), Some(key)) = (&access.cert, &access.key) {
        let cert = read_pem(cert, "client certificate (cert=)")?;
        let key = read_key(key, "client key (key=)")?;
        tls = tls.identity(Identity::from_pem(cert, key));
    }
    Ok(tls)
}

/// An etcd client's error as a claim error: a refusal (TLS, the user or password, a
/// permission) is [`ClaimError::Refused`] saying what to fix and ends the retries; the
/// rest is unreachable (retried).
pub(super) fn etcd_error(url: &str, e: etcd_client::Error) -> ClaimError {
    let (refusal, words) = etcd_words(&e);
    let reason = Reason::caused_by(words, e);
    if refusal {
        ClaimError::Refused {
            store: url.into(),
            reason,
        }
    } else {
        unreachable(url, reason)
    }
}

/// Whether `e` is a refusal, and the words [`etcd_error`] gives it.
fn etcd_words(e: &etcd_client::Error) -> (bool, String) {
    let refused = |reason: String| (true, reason);
    // The whole chain: a TLS failure hides a few sources down. The deepest cause is what
    // an unreachable store is said to have failed with (the socket's own error).
    let mut text = e.to_string();
    let mut deepest = None;
    let mut source = match e {
        // The status carries the transport's error; the client's error does not link it.
        etcd_client::Error::GRpcStatus(status) => std::error::Error::source(status),
        e => std::error::Error::source(e),
    };
    while let Some(s) = source {
        let cause = s.to_string();
        text.push_str(": ");
        text.push_str(&cause);
        deepest = Some(cause);
        source = s.source();
    }
    if let etcd_client::Error::GRpcStatus(status) = e {
        let message = status.message();
        text = format!("{message}; {text}");
        match status.code() {
            tonic::Code::PermissionDenied => {
                return refused(format!(
                    "permission denied ({message}): grant the user's role readwrite on the key prefix, as in `etcdctl role grant-permission ROLE readwrite --prefix=true flakeid/`"
                ));
            }
            tonic::Code::InvalidArgument | tonic::Code::Unauthenticated
                if message.contains("authentication failed")
                    || message.contains("invalid user")
                    || message.contains("password") =>
            {
                return refused(format!(
                    "the user or its password was refused ({message}): check user= and the password file"
                ));
            }
            tonic::Code::InvalidArgument | tonic::Code::Unauthenticated
                if message.contains("invalid auth token") =>
            {
                return refused(format!(
                    "etcd no longer takes this client's auth token ({message}: it expired, or etcd restarted) and no new one was had: give user=NAME and password-file=FILE"
                ));
            }
            tonic::Code::InvalidArgument | tonic::Code::Unauthenticated
                if message.contains("user name is empty") || message.contains("token") =>
            {
                return refused(format!(
                    "etcd requires authentication ({message}): give user=NAME and password-file=FILE"
                ));
            }
            _ => {}
        }
    }
    let failure = TLS_FAILURES.iter().find(|(name, _)| text.contains(name));
    match failure {
        Some((name, TlsFailure::ServerUntrusted)) => refused(format!(
            "the server's certificate is not trusted (TLS: {name}): give ca= the CA bundle that signed the etcd servers' certificates"
        )),
        Some((name, TlsFailure::ClientCertificate)) => refused(format!(
            "the server refused this client's certificate, or wants one (TLS: {name}): give cert= and key= of a client certificate signed by a CA the servers trust"
        )),
        Some((name, TlsFailure::PlainText)) => refused(format!(
            "the server does not speak TLS (TLS: {name}): use etcd:// without ca=, cert= and key="
        )),
        None => {
            let status = match e {
                etcd_client::Error::GRpcStatus(status) => Some(status.message()),
                _ => None,
            };
            let reason = match (status, deepest) {
                (Some(m), Some(cause)) if m != cause => format!("{m}: {cause}"),
                (_, Some(cause)) => cause,
                (Some(m), None) => m.to_string(),
                (None, None) => e.to_string(),
            };
            (false, reason)
        }
    }
}

/// What a TLS failure in an error chain means for the client.
enum TlsFailure {
    /// The client does not trust the server's certificate.
    ServerUntrusted,
    /// The server refused the client's certificate, or the lack of one.
    ClientCertificate,
    /// The server answered in plain text.
    PlainText,
}

/// TLS failures as rustls names them in an error chain, the more precise first, and what
/// each means.
const TLS_FAILURES: [(&str, TlsFailure); 9] = [
    ("UnknownIssuer", TlsFailure::ServerUntrusted),
    ("CertExpired", TlsFailure::ServerUntrusted),
    ("NotValidForName", TlsFailure::ServerUntrusted),
    ("invalid peer certificate", TlsFailure::ServerUntrusted),
    ("CertificateRequired", TlsFailure::ClientCertificate),
    ("BadCertificate", TlsFailure::ClientCertificate),
    ("UnknownCA", TlsFailure::ClientCertificate),
    ("InvalidContentType", TlsFailure::PlainText),
    ("corrupt message", TlsFailure::PlainText),
];

/// A connect that failed only because every server closed (or reset) the connection right
/// after the TLS handshake: under TLS 1.3 that is how a server refuses a client
/// certificate, or the lack of one (the client may see no alert, only the closed
/// connection or a broken pipe on its next write), so over TLS it is
/// [`ClaimError::Refused`] saying so.
pub(super) fn closed_after_handshake(e: ClaimError, access: &Access) -> ClaimError {
    match e {
        ClaimError::Unreachable { store, reason } if access.tls && closed_connection(&reason) => {
            let (what, fix) = if access.cert.is_some() {
                (
                    "refuses a client certificate",
                    "check that cert= is signed by a CA the servers trust (their --trusted-ca-file)",
                )
            } else {
                (
                    "asks for a client certificate",
                    "give cert= and key= of a client certificate signed by a CA the servers trust",
                )
            };
            let words = format!(
                "every server closed the connection right after the TLS handshake, which is how etcd {what} ({reason}): {fix}"
            );
            ClaimError::Refused {
                store,
                reason: reason.reworded(words),
            }
        }
        e => e,
    }
}

/// Whether an error's text says the connection was closed or reset under the client, in
/// any of the spellings of io, h2 and tonic ("Broken pipe", "BrokenPipe", "stream closed
/// because of a broken pipe", ...).
fn closed_connection(reason: &str) -> bool {
    let reason = reason.to_ascii_lowercase();
    [
        "connection closed",
        "brokenpipe",
        "broken pipe",
        "connectionreset",
        "connection reset",
    ]
    .iter()
    .any(|c| reason.contains(c))
}

#[cfg(test)]
mod tests {
    use super::closed_connection;

    /// A store nobody answers for is unreachable with the etcd client's own error as the
    /// source, for a caller to downcast.
    #[test]
    fn an_unreachable_store_keeps_the_client_error_as_its_source() {
        use flakeid::claim::store::{FromUrl, StoreUrl};
        let url = StoreUrl::parse("etcd://127.0.0.1:9").unwrap();
        let options =
            flakeid::claim::OpenOptions::default().timeout(core::time::Duration::from_millis(500));
        let e = crate::EtcdStore::from_url(&url, &options).unwrap_err();
        assert!(
            matches!(e, flakeid::claim::ClaimError::Unreachable { .. }),
            "{e}"
        );
        let source = std::error::Error::source(&e).expect("a source");
        assert!(
            source.downcast_ref::<etcd_client::Error>().is_some(),
            "{source:?}"
        );
    }

    /// Every spelling of a closed or reset connection seen from tonic, h2 and io counts,
    /// whatever its case; other transport failures do not.
    #[test]
    fn a_closed_connection_is_seen_in_every_spelling() {
        for text in [
            "transport error: stream closed because of a broken pipe",
            "transport error: Broken pipe (os error 32)",
            "Io(Kind(BrokenPipe))",
            "connection closed before message completed",
            "Connection reset by peer (os error 104)",
            "Kind(ConnectionReset)",
        ] {
            assert!(closed_connection(text), "{text}");
        }
        for text in ["Connection refused (os error 111)", "deadline has elapsed"] {
            assert!(!closed_connection(text), "{text}");
        }
    }
}
