//! [`OpenOptions`]: how a store opens from its URL (TTL, timeout, access), below the
//! stores that read it and the URL parse that hands it to them.

use core::time::Duration;

use super::{Access, Secret};

/// How [`open_with`](super::open_with) opens a network store.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenOptions {
    /// A claim's lease TTL on a coordinator (default 10 s): a holder that stops renewing
    /// loses its id this long after its last renewal.
    pub ttl: Duration,
    /// The bound on connecting and on each request (default 5 s).
    pub timeout: Duration,
    /// TLS and authentication; the URL's query adds to it.
    pub access: Access,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            ttl: Duration::from_secs(10),
            timeout: Duration::from_secs(5),
            access: Access::default(),
        }
    }
}

impl OpenOptions {
    /// The lease TTL.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The bound on connecting and on each request.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The password of the URL's `user=` (instead of its `password-file=`).
    pub fn password(mut self, password: Secret) -> Self {
        self.access.password = Some(password);
        self
    }
}
