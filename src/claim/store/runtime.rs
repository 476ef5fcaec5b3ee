//! A network store's runtime: a tokio runtime of its own (one worker thread), and calls to
//! it that are bounded by a timeout and work from any thread, also one inside another
//! runtime.

use core::future::Future;
use core::time::Duration;
use std::string::String;

use super::unreachable;
use crate::claim::{ClaimError, Reason};

/// A network store's runtime (one worker thread) and its bounds: what a client of etcd,
/// ZooKeeper or any async coordinator runs on behind the synchronous [`ClaimStore`](super::ClaimStore).
pub struct Runtime {
    /// The store's URL (redacted), for messages.
    pub url: String,
    /// The bound on each call.
    pub timeout: Duration,
    /// `None` only in the drop.
    runtime: Option<tokio::runtime::Runtime>,
}

impl Runtime {
    /// A runtime whose worker thread is named `thread`, for the store at `url`, its calls
    /// bounded by `timeout`.
    pub fn new(url: String, timeout: Duration, thread: &str) -> Result<Runtime, ClaimError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(thread)
            .enable_all()
            .build()
            .map_err(|e| unreachable(&url, Reason::from_error(e)))?;
        Ok(Runtime {
            url,
            timeout,
            runtime: Some(runtime),
        })
    }

    /// Runs `fut` on the store's runtime, bounded by the timeout.
    pub fn run<T, F>(&self, fut: F) -> Result<T, ClaimError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, ClaimError>> + Send + 'static,
    {
        self.run_within(self.timeout, fut)
    }

    /// [`Runtime::run`] bounded by `bound` (at most the timeout).
    pub fn run_within<T, F>(&self, bound: Duration, fut: F) -> Result<T, ClaimError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, ClaimError>> + Send + 'static,
    {
        let (timeout, url) = (bound.min(self.timeout), self.url.clone());
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let Some(runtime) = &self.runtime else {
            return Err(unreachable(&self.url, "the client's runtime stopped"));
        };
        runtime.spawn(async move {
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

impl Drop for Runtime {
    /// Lets the client's tasks finish what they were sending (a session's close), briefly.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Inside another runtime nothing may block: let the tasks go in the background.
            if tokio::runtime::Handle::try_current().is_ok() {
                runtime.shutdown_background();
            } else {
                runtime.shutdown_timeout(Duration::from_secs(1));
            }
        }
    }
}
