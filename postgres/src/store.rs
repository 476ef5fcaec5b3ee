//! The store as a [`ClaimStore`]: claims, renewals, releases and listings (written in
//! `claim.rs`), the line of waiters, a namespace's layout row, the list of namespaces and
//! the repair of a reservation.

use super::*;
use crate::claim::bigint;
use flakeid::claim::store::same_layout;

impl ClaimStore for PostgresStore {
    fn url(&self) -> String {
        self.shared.url.clone()
    }

    fn claim(&self, request: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        self.claim(request)
    }

    fn renew(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError> {
        self.renew(claimed, reserved_until_unix_ns)
    }

    fn release(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError> {
        self.release(claimed, reserved_until_unix_ns)
    }

    fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        self.list(namespace)
    }

    fn lease_ttl(&self) -> Option<Duration> {
        Some(self.ttl)
    }

    /// With more than one host: two attempts (the first, on the host that stopped
    /// answering, timed out) and the pause between them. The promotion of a standby
    /// itself is the operator's (or Patroni's) to bound: a holder whose renewals fail past
    /// its window stops minting, and renews again once a primary answers, if nobody took
    /// its id meanwhile.
    fn failover_bound(&self, ttl: Duration) -> Option<Duration> {
        (self.hosts > 1).then(|| 2 * attempt_bound(self.remote.timeout, ttl) + RETRY_PAUSE)
    }

    /// Inserted if
    /// the namespace has none, then the recorded one compared.
    fn bind_layout(&self, namespace: &str, layout: &str) -> Result<(), ClaimError> {
        let (namespace, layout) = (String::from(namespace), String::from(layout));
        self.run(move |shared, client| {
            let (namespace, layout) = (namespace.clone(), layout.clone());
            async move {
                client
                    .execute(&shared.sql.bind, &[&namespace, &layout])
                    .await
                    .map_err(shared.e())?;
                let recorded: String = client
                    .query_one(&shared.sql.layout, &[&namespace])
                    .await
                    .map_err(shared.e())?
                    .get(0);
                same_layout(&namespace, &recorded, &layout)
            }
        })
    }

    /// The namespaces with a layout row or a node row.
    fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
        self.run(move |shared, client| async move {
            let rows = client
                .query(&shared.sql.namespaces, &[])
                .await
                .map_err(shared.e())?;
            Ok(rows
                .iter()
                .map(|row| NamespaceInfo {
                    namespace: row.get(0),
                    layout: row.get(1),
                    problem: None,
                })
                .collect())
        })
    }

    /// One statement that
    /// locks the row, refuses a live holder's, and stores the larger reservation, released.
    fn repair(&self, namespace: &str, node: u64, reserved: u64) -> Result<Repaired, ClaimError> {
        let url = &self.shared.url;
        let (id, value) = (
            bigint(url, "node id", node)?,
            bigint(url, "reservation", reserved)?,
        );
        let namespace = String::from(namespace);
        self.run(move |shared, client| {
            let namespace = namespace.clone();
            async move {
                let e = shared.e();
                for _ in 0..2 {
                    let found = client
                        .query_opt(&shared.sql.repair, &[&namespace, &id, &value])
                        .await
                        .map_err(&e)?;
                    if let Some(row) = found {
                        let (previous, live, stored): (Option<i64>, bool, Option<i64>) =
                            (row.get(0), row.get(1), row.get(2));
                        if live {
                            return Err(ClaimError::NodeHeld {
                                namespace: namespace.clone(),
                                node,
                            });
                        }
                        return Ok(Repaired {
                            previous_unix_ns: previous.and_then(|v| u64::try_from(v).ok()),
                            reserved_until_unix_ns: stored.map_or(reserved, |v| v as u64),
                        });
                    }
                    let made = client
                        .query_opt(&shared.sql.repair_missing, &[&namespace, &id, &value])
                        .await
                        .map_err(&e)?;
                    if made.is_some() {
                        return Ok(Repaired {
                            previous_unix_ns: None,
                            reserved_until_unix_ns: reserved,
                        });
                    }
                    // A claim made the row meanwhile: look again.
                }
                Err(ClaimError::NodeHeld { namespace, node })
            }
        })
    }

    /// A row per waiter in `line`, numbered in the order the rows were made; a dead
    /// waiter's row lapses with its lease (the TTL).
    ///
    /// A place at the
    /// back; places that lapsed a minute ago are swept.
    fn join_line(&self, namespace: &str, instance: &str) -> Result<Option<Ticket>, ClaimError> {
        let (namespace, instance) = (String::from(namespace), String::from(instance));
        self.run(move |shared, client| {
            let (namespace, instance) = (namespace.clone(), instance.clone());
            async move {
                let e = shared.e();
                client.execute(&shared.sql.sweep, &[]).await.map_err(&e)?;
                let place: i64 = client
                    .query_one(&shared.sql.join, &[&namespace, &instance, &shared.ttl_ms])
                    .await
                    .map_err(&e)?
                    .get(0);
                Ok(Some(Ticket {
                    namespace,
                    key: place.to_string(),
                }))
            }
        })
    }

    /// The live places, first
    /// first.
    fn line(&self, namespace: &str) -> Result<Vec<Waiter>, ClaimError> {
        let namespace = String::from(namespace);
        self.run(move |shared, client| {
            let namespace = namespace.clone();
            async move {
                let rows = client
                    .query(&shared.sql.line, &[&namespace])
                    .await
                    .map_err(shared.e())?;
                Ok(rows
                    .iter()
                    .map(|r| Waiter {
                        key: r.get::<_, i64>(0).to_string(),
                        instance: r.get(1),
                    })
                    .collect())
            }
        })
    }

    /// The place's
    /// lease extended; [`ClaimError::NotOwner`] once it lapsed.
    fn stay_in_line(&self, ticket: &Ticket) -> Result<(), ClaimError> {
        let gone = ClaimError::NotOwner {
            namespace: ticket.namespace.clone(),
            node: 0,
        };
        let Ok(place) = ticket.key.parse::<i64>() else {
            return Err(gone);
        };
        let namespace = ticket.namespace.clone();
        self.run(move |shared, client| {
            let (namespace, gone) = (namespace.clone(), gone.clone());
            async move {
                let kept = client
                    .query_opt(&shared.sql.stay, &[&place, &namespace, &shared.ttl_ms])
                    .await
                    .map_err(shared.e())?;
                kept.map(drop).ok_or(gone)
            }
        })
    }

    /// Deletes the waiter's row, best effort (a row left lapses with its lease).
    fn leave_line(&self, ticket: &Ticket) {
        let Ok(place) = ticket.key.parse::<i64>() else {
            return;
        };
        let _ = self.run(move |shared, client| async move {
            client
                .execute(&shared.sql.leave_line, &[&place])
                .await
                .map(drop)
                .map_err(shared.e())
        });
    }

    /// What the primary's replication risks, where the URL accepted it
    /// (`replication=async`).
    fn warnings(&self) -> Vec<String> {
        self.shared
            .warnings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
