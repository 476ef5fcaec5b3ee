//! What the network stores share: a runtime of their own, and calls to it that are bounded
//! by a timeout and work from any thread (also one inside another runtime).

use core::future::Future;
use core::time::Duration;
use std::string::String;

use super::ClaimError;

/// The store could not be reached: `reason`, for the store at `url`.
pub(crate) fn unreachable(url: &str, reason: impl core::fmt::Display) -> ClaimError {
    ClaimError::Unreachable {
        store: url.into(),
        reason: reason.to_string(),
    }
}

/// A network store's runtime (one worker thread) and its bounds.
pub(crate) struct Remote {
    pub(crate) url: String,
    pub(crate) timeout: Duration,
    runtime: tokio::runtime::Runtime,
}

impl Remote {
    pub(crate) fn new(url: String, timeout: Duration, thread: &str) -> Result<Remote, ClaimError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(thread)
            .enable_all()
            .build()
            .map_err(|e| unreachable(&url, e))?;
        Ok(Remote {
            url,
            timeout,
            runtime,
        })
    }

    /// Runs `fut` on the store's runtime, bounded by the timeout.
    pub(crate) fn run<T, F>(&self, fut: F) -> Result<T, ClaimError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, ClaimError>> + Send + 'static,
    {
        let (timeout, url) = (self.timeout, self.url.clone());
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.runtime.spawn(async move {
            let result = match tokio::time::timeout(timeout, fut).await {
                Ok(r) => r,
                Err(_) => Err(unreachable(&url, format!("no answer within {timeout:?}"))),
            };
            let _ = tx.send(result);
        });
        rx.recv()
            .unwrap_or_else(|_| Err(unreachable(&self.url, "the client's runtime stopped")))
    }
}

/// A stored reservation, `RESERVED_UNIX_NS STATE HOLDER` (`held` or `released`; a bare
/// number is read too): the reservation, whether it was released, the holder.
pub(crate) fn parse_reserved(value: &[u8]) -> (u64, bool, Option<String>) {
    let text = String::from_utf8_lossy(value);
    let mut parts = text.splitn(3, ' ');
    let reserved = parts.next().and_then(|r| r.parse().ok()).unwrap_or(0);
    let released = parts.next() == Some("released");
    let holder = parts.next().map(str::to_string);
    (reserved, released, holder)
}
