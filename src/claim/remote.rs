//! What the network stores share: a runtime of their own, and calls to it that are bounded
//! by a timeout and work from any thread (also one inside another runtime).

use core::future::Future;
use core::time::Duration;
use std::string::String;

use super::{ClaimError, ClaimInfo, NodeState};

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
    /// `None` only in the drop.
    runtime: Option<tokio::runtime::Runtime>,
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
            runtime: Some(runtime),
        })
    }

    /// Runs `fut` on the store's runtime, bounded by the timeout.
    pub(crate) fn run<T, F>(&self, fut: F) -> Result<T, ClaimError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, ClaimError>> + Send + 'static,
    {
        self.run_within(self.timeout, fut)
    }

    /// [`Remote::run`] bounded by `bound` (at most the timeout).
    pub(crate) fn run_within<T, F>(&self, bound: Duration, fut: F) -> Result<T, ClaimError>
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

/// A stored reservation, `RESERVED_UNIX_NS STATE HOLDER` (`held` or `released`; a bare
/// number is read too): the reservation, whether it was released, the holder. Anything
/// else is [`ClaimError::Corrupt`] naming `key`: never read as 0.
pub(crate) fn parse_reserved(
    value: &[u8],
    key: &str,
) -> Result<(u64, bool, Option<String>), ClaimError> {
    let corrupt = |reason: &str| ClaimError::Corrupt {
        path: key.into(),
        reason: reason.into(),
    };
    let text = core::str::from_utf8(value).map_err(|_| corrupt("it is not UTF-8 text"))?;
    let mut parts = text.splitn(3, ' ');
    let reserved = parts
        .next()
        .filter(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|r| r.parse().ok())
        .ok_or_else(|| corrupt("it does not start with a reservation in Unix nanoseconds"))?;
    let released = match parts.next() {
        None | Some("held") => false,
        Some("released") => true,
        Some(_) => return Err(corrupt("its state is neither 'held' nor 'released'")),
    };
    let holder = parts.next().map(str::to_string);
    Ok((reserved, released, holder))
}

/// A node id's listing, built from what a coordinator stores for it, in either order: the
/// claim key (`nodes/N`: the holder's name) and the reservation (`reserved/N`).
pub(crate) struct Listing(pub(crate) ClaimInfo);

impl Listing {
    pub(crate) fn new(node: u64) -> Listing {
        Listing(ClaimInfo {
            node,
            state: NodeState::Expired,
            holder: None,
            reserved_until_unix_ns: 0,
            problem: None,
        })
    }

    /// `nodes/N` exists: held by `holder` (unless its reservation is unreadable).
    pub(crate) fn held_by(&mut self, holder: &[u8]) {
        let info = &mut self.0;
        if info.state != NodeState::Corrupt {
            info.state = NodeState::Held;
        }
        info.holder = Some(String::from_utf8_lossy(holder).into_owned());
    }

    /// `reserved/N` (at `key`) holds `value`.
    pub(crate) fn reserved(&mut self, value: &[u8], key: &str) {
        let info = &mut self.0;
        match parse_reserved(value, key) {
            Ok((reserved, released, holder)) => {
                info.reserved_until_unix_ns = reserved;
                if info.state != NodeState::Held {
                    if released {
                        info.state = NodeState::Released;
                    }
                    info.holder = info.holder.take().or(holder);
                }
            }
            Err(err) => {
                info.state = NodeState::Corrupt;
                info.problem = Some(err.to_string());
            }
        }
    }
}

impl Drop for Remote {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_parse_or_are_corrupt() {
        assert_eq!(
            parse_reserved(b"17 held a:1", "k").unwrap(),
            (17, false, Some("a:1".into()))
        );
        assert_eq!(parse_reserved(b"17", "k").unwrap(), (17, false, None));
        assert_eq!(
            parse_reserved(b"5 released h h", "k").unwrap(),
            (5, true, Some("h h".into()))
        );
        for bad in [&b""[..], b"x held a", b"-1 held a", b"17 gone a", b"\xff"] {
            assert!(
                matches!(parse_reserved(bad, "k"), Err(ClaimError::Corrupt { .. })),
                "{bad:?}"
            );
        }
    }
}
