//! Claims of [flakeid](https://docs.rs/flakeid) node ids on PostgreSQL: [`PostgresStore`],
//! a row per node id whose lease runs on the server's clock, each claim, renewal and
//! release one statement that checks the claim's own token.
//!
//! ```no_run
//! use flakeid::claim::{Claims, OpenOptions};
//! use flakeid::claim::store::{FromUrl, StoreUrl};
//! use flakeid::{Generator, Layout};
//! use flakeid_postgres::PostgresStore;
//!
//! let url = StoreUrl::parse(
//!     "postgres://ids@db1:5432,db2:5432/app?password-file=/run/secrets/pg&sslmode=verify-full&sslrootcert=/etc/ca.pem",
//! )?;
//! let store = PostgresStore::from_url(&url, &OpenOptions::default())?;
//! let generator = Generator::builder(Layout::snowflake())
//!     .build_claimed(Claims::new(store).namespace("orders"))?;
//! println!("{}", generator.next_id()?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The store keeps the contract of [`ClaimStore`] (the `flakeid-testkit` conformance suite
//! runs against a real PostgreSQL in this crate's tests).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use core::time::Duration;
use std::string::String;
use std::sync::Arc;
use std::vec::Vec;

use flakeid::claim::store::{
    ClaimRequest, Claimed, FromUrl, Repaired, Runtime as Remote, StoreUrl, Ticket, Waiter,
    unreachable,
};
use flakeid::claim::{ClaimError, ClaimInfo, ClaimStore, NamespaceInfo, OpenOptions};
use tokio_postgres::Client;

mod auth;
mod claim;
mod connect;
mod errors;
mod grants;
mod schema;
mod settings;
mod statements;
mod store;
mod tls;
mod topology;
mod trust;

pub use grants::grant_statements;
pub use schema::{SCHEMA_VERSION, create_statements};
pub use settings::DEFAULT_SCHEMA;

use connect::{Connector, Session};
use statements::Statements;

/// Claims on a PostgreSQL primary.
///
/// Tables, in a schema (`schema=`, default `flakeid`), made by the first connect where the
/// role may ([`create_statements`]):
///
/// | table | a row is | written |
/// |---|---|---|
/// | `nodes` | a node id of a namespace: its holder, the claim's token, when its lease ends (`expires`, the server's clock; `NULL` once released), the last reservation (Unix ns) | a claim inserts the row or takes a free one by a conditional update; a renewal and a release update it where the token is the claim's |
/// | `namespaces` | a namespace and the layout its first claim recorded | inserted once |
/// | `line` | a claimant waiting for a free id, in the order it began | while it waits |
/// | `flakeid_schema` | the tables' version ([`SCHEMA_VERSION`]), checked at every connect | once |
///
/// **Time is the database's.** A lease ends by the server's `clock_timestamp()`, never a
/// client's: two holders whose clocks disagree cannot both hold an id. A claim takes the
/// lowest id of the pool that has no row, or whose row's lease ended and whose data can be
/// read, each by one statement that checks it is still free (`INSERT ... ON CONFLICT DO
/// NOTHING`, `UPDATE ... WHERE expires <= clock_timestamp()`), at read committed, where an
/// update re-checks its condition on the row it locked. The claim's token is random and
/// new; a renewal (`UPDATE ... SET reserved = GREATEST(reserved, $new) WHERE token = $mine`)
/// and a release change nothing of a later claim, also one by the same process.
///
/// **Durable across a failover:** each session commits with `synchronous_commit = on`;
/// at connect and after every request, every standby the primary streams to must have
/// each commit (all `sync` in a `FIRST n` list, or an `ANY n` quorum as large as its
/// standbys), else the store refuses, naming the standby, unless the URL says
/// `replication=async` (then [`ClaimStore::warnings`] says what a failover can cost). A
/// multi-host URL tries every host at once and connects to the one that takes writes;
/// two that do are refused.
///
/// **The store's alone:** the schema, its tables and sequence owned by the role
/// connecting or the URL's `owner=`, no other role able to write to them, no trigger,
/// rule or policy, plain logged tables with their keys; the session's `search_path`
/// pinned to `pg_catalog, pg_temp`. A role with the grants of [`grant_statements`] on
/// tables an owner made by [`create_statements`] is enough; what it lacks is named at
/// connect.
pub struct PostgresStore {
    shared: Arc<Shared>,
    remote: Remote,
    ttl: Duration,
    /// The bound on one attempt of a request.
    attempt: Duration,
    /// How many hosts the URL names.
    hosts: usize,
}

/// What the store's requests share: the connection (made again after a failure) and
/// the statements.
pub(crate) struct Shared {
    connector: Connector,
    client: tokio::sync::Mutex<Option<Arc<Session>>>,
    warnings: std::sync::Mutex<Vec<String>>,
    /// `synchronous_standby_names` on the primary last connected to.
    standby_names: std::sync::Mutex<String>,
    pub(crate) sql: Statements,
    pub(crate) url: String,
    pub(crate) schema: String,
    /// The lease of a claim and of a place in a line, in milliseconds.
    pub(crate) ttl_ms: f64,
}

impl Shared {
    /// The session, connected first if there is none.
    async fn session(&self) -> Result<Arc<Session>, ClaimError> {
        let mut slot = self.client.lock().await;
        if let Some(session) = slot.as_ref().filter(|s| !s.client.is_closed()) {
            return Ok(Arc::clone(session));
        }
        let (session, warnings) = self.connector.connect().await?;
        *self.warnings.lock().unwrap_or_else(|p| p.into_inner()) = warnings;
        self.standby_names
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone_from(&session.standby_names);
        let session = Arc::new(session);
        *slot = Some(Arc::clone(&session));
        Ok(session)
    }

    /// `error`, the last of a request that ran out of time, with what the primary's
    /// commits wait for where that may be why.
    fn last(&self, error: ClaimError) -> ClaimError {
        let names = self.standby_names.lock().unwrap_or_else(|p| p.into_inner());
        match error {
            ClaimError::Unreachable { store, reason } if !names.trim().is_empty() => {
                let words = format!(
                    "{reason} (each commit waits for a synchronous standby of synchronous_standby_names = '{names}': is one connected and streaming?)"
                );
                ClaimError::Unreachable {
                    store,
                    reason: reason.reworded(words),
                }
            }
            other => other,
        }
    }

    /// Whether what the session committed is on every standby the primary streams to;
    /// the warnings renewed where the URL accepts asynchronous standbys.
    async fn replicated(&self, session: &Session) -> Result<(), ClaimError> {
        let settings = self.connector.settings();
        let (risks, _) = topology::check(
            &session.client,
            &session.topology,
            &self.url,
            &self.schema,
            settings.replication,
        )
        .await?;
        *self.warnings.lock().unwrap_or_else(|p| p.into_inner()) = risks;
        Ok(())
    }

    /// Drops the session: the next request connects again (to the primary of the moment).
    async fn forget(&self) {
        *self.client.lock().await = None;
    }

    /// `e` for this store.
    pub(crate) fn e(&self) -> impl Fn(tokio_postgres::Error) -> ClaimError + '_ {
        |e| errors::pg_error(&self.url, &self.schema, e)
    }
}

impl core::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("url", &self.shared.url)
            .field("schema", &self.shared.schema)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// Why an attempt the server warned about is not trusted.
const UNREPLICATED: &str = "the server warned during the request (as when a commit's wait for the synchronous standby is cancelled: committed on the primary, maybe not on the standby), so its answer is not trusted";

/// The pause before the next attempt.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// The least time worth another attempt: less is left to the last error.
const MIN_ATTEMPT: Duration = Duration::from_millis(100);

/// The bound on one attempt: a third of the request timeout and a fifth of the lease,
/// whichever is shorter, at least 300 ms (and at most the timeout).
fn attempt_bound(timeout: Duration, ttl: Duration) -> Duration {
    (timeout / 3)
        .min(ttl / 5)
        .max(Duration::from_millis(300))
        .min(timeout)
}

impl PostgresStore {
    /// Connects as `url` says, within the options' timeout: the tables are made where
    /// the role may and missing, then checked.
    fn open(url: &StoreUrl, options: &OpenOptions) -> Result<PostgresStore, ClaimError> {
        let settings = settings::Settings::from_url(url, options)?;
        let attempt = attempt_bound(settings.timeout, settings.ttl);
        let remote = Remote::new(settings.url.clone(), settings.timeout, "flakeid-postgres")?;
        let shared = Arc::new(Shared {
            connector: Connector::new(&settings, attempt)?,
            client: tokio::sync::Mutex::new(None),
            warnings: std::sync::Mutex::default(),
            standby_names: std::sync::Mutex::default(),
            sql: Statements::new(&settings.schema),
            url: settings.url.clone(),
            schema: settings.schema.clone(),
            ttl_ms: settings.ttl.as_secs_f64() * 1e3,
        });
        let store = PostgresStore {
            shared,
            remote,
            ttl: settings.ttl,
            attempt,
            hosts: settings.hosts.len(),
        };
        // Connect now, so that a store that cannot be reached or refuses fails here.
        store.run(|_, _| async { Ok(()) })?;
        Ok(store)
    }

    /// The lease TTL.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Runs `f` with the session on the store's runtime: each attempt of `f` bounded by the
    /// attempt bound, again (on a new session) while the store cannot be reached, all
    /// within the request timeout; a new session's connect within what is left of it.
    pub(crate) fn run<T, F>(
        &self,
        f: impl Fn(Arc<Shared>, Arc<Client>) -> F + Send + Sync + 'static,
    ) -> Result<T, ClaimError>
    where
        T: Send + 'static,
        F: core::future::Future<Output = Result<T, ClaimError>> + Send + 'static,
    {
        self.run_within(self.remote.timeout, f)
    }

    /// [`PostgresStore::run`] within `timeout` (at most the request timeout).
    pub(crate) fn run_within<T, F>(
        &self,
        timeout: Duration,
        f: impl Fn(Arc<Shared>, Arc<Client>) -> F + Send + Sync + 'static,
    ) -> Result<T, ClaimError>
    where
        T: Send + 'static,
        F: core::future::Future<Output = Result<T, ClaimError>> + Send + 'static,
    {
        let shared = Arc::clone(&self.shared);
        let (timeout, attempt) = (timeout.min(self.remote.timeout), self.attempt);
        self.remote.run_within(timeout, async move {
            // A little inside the runtime's own bound, so that this loop's error is the one
            // returned.
            let deadline = tokio::time::Instant::now() + timeout.saturating_sub(RETRY_PAUSE);
            // What the store last answered: an attempt cut short by the deadline does not
            // hide it behind "no answer".
            let mut answered: Option<ClaimError> = None;
            loop {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                // A new session is bounded by what is left of the request, not by one
                // attempt: each host's first answer has the attempt's bound (a host that
                // never answers costs no more), but a connect of many round trips on a
                // slow link or a busy host would never end if every try began again.
                let outcome = match tokio::time::timeout(left, shared.session()).await {
                    Err(_) => Err(left),
                    Ok(Err(e)) => Ok(Err(e)),
                    Ok(Ok(session)) => {
                        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                        let bound = attempt.min(left);
                        let once = async {
                            let warned = session.warned();
                            let done = f(Arc::clone(&shared), Arc::clone(&session.client)).await;
                            if session.warned() != warned {
                                return Err(unreachable(&shared.url, UNREPLICATED));
                            }
                            let done = done?;
                            // Trusted only where the primary's standbys all had it: one
                            // attached since the session was made (asynchronous) would
                            // lack it.
                            shared.replicated(&session).await?;
                            Ok(done)
                        };
                        tokio::time::timeout(bound, once).await.map_err(|_| bound)
                    }
                };
                let error = match outcome {
                    Ok(Err(e @ ClaimError::Unreachable { .. })) => e,
                    Ok(done) => return done,
                    Err(bound) => answered.take().unwrap_or_else(|| {
                        unreachable(&shared.url, format!("no answer within {bound:?}"))
                    }),
                };
                shared.forget().await;
                if tokio::time::Instant::now() + RETRY_PAUSE + MIN_ATTEMPT >= deadline {
                    return Err(shared.last(error));
                }
                answered = Some(error);
                tokio::time::sleep(RETRY_PAUSE).await;
            }
        })
    }
}

impl FromUrl for PostgresStore {
    /// `postgres://[ROLE@]HOST[:PORT][,HOST[:PORT]...]/DB[?QUERY]` (or `postgresql://`);
    /// the query: `schema`, `sslmode` (`disable` or `verify-full`), `sslrootcert`,
    /// `sslcert`, `sslkey` (or `ca`, `cert`, `key`), `user`, `password-file`,
    /// `target_session_attrs=read-write`, `replication` (`sync` or `async`),
    /// `application_name`; over the access of `options`.
    fn from_url(url: &StoreUrl, options: &OpenOptions) -> Result<PostgresStore, ClaimError> {
        PostgresStore::open(url, options)
    }
}

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
