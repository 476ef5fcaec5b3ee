//! The line of claimants waiting for a free id: a row per place in `line`, numbered in the
//! order the rows were made, each with a lease of its own on the server's clock.

use std::string::{String, ToString};
use std::vec::Vec;

use flakeid::claim::ClaimError;
use flakeid::claim::store::{Ticket, Waiter};

use crate::PostgresStore;

impl PostgresStore {
    /// [`ClaimStore::join_line`](flakeid::claim::ClaimStore::join_line): a place at the
    /// back; places that lapsed a minute ago are swept.
    pub(crate) fn join_line(&self, namespace: &str, instance: &str) -> Result<Ticket, ClaimError> {
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
                Ok(Ticket {
                    namespace,
                    key: place.to_string(),
                })
            }
        })
    }

    /// [`ClaimStore::line`](flakeid::claim::ClaimStore::line): the live places, first
    /// first.
    pub(crate) fn line(&self, namespace: &str) -> Result<Vec<Waiter>, ClaimError> {
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

    /// [`ClaimStore::stay_in_line`](flakeid::claim::ClaimStore::stay_in_line): the place's
    /// lease extended; [`ClaimError::NotOwner`] once it lapsed.
    pub(crate) fn stay_in_line(&self, ticket: &Ticket) -> Result<(), ClaimError> {
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

    /// [`ClaimStore::leave_line`](flakeid::claim::ClaimStore::leave_line), best effort.
    pub(crate) fn leave_line(&self, ticket: &Ticket) {
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
}
