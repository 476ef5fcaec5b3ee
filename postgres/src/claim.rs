//! The claim operations on the `nodes` and `namespaces` tables: claim, renew, release,
//! list, the layout record, the namespaces, repair.

use std::string::String;
use std::sync::Arc;
use std::vec::Vec;

use flakeid::claim::store::{ClaimRequest, Claimed, claim_token};
use flakeid::claim::{ClaimError, ClaimInfo, NodeState};
use tokio_postgres::Client;

use crate::{PostgresStore, Shared};

/// A node id or reservation as the `bigint` it is stored as; one past `i64::MAX` (the
/// year 2262 in nanoseconds) cannot be.
pub(crate) fn bigint(url: &str, what: &str, value: u64) -> Result<i64, ClaimError> {
    i64::try_from(value).map_err(|_| ClaimError::Refused {
        store: url.into(),
        reason: format!("{what} {value} is past what a bigint holds (2^63 - 1)").into(),
    })
}

/// What a stored reservation is: `None` (none stored) reads as 0; below 0 it is data no
/// version wrote.
fn reservation(
    shared: &Shared,
    namespace: &str,
    node: i64,
    stored: Option<i64>,
) -> Result<u64, ClaimError> {
    match stored {
        None => Ok(0),
        Some(v) => u64::try_from(v).map_err(|_| corrupt(shared, namespace, node, v)),
    }
}

fn corrupt(shared: &Shared, namespace: &str, node: i64, value: i64) -> ClaimError {
    ClaimError::Corrupt {
        path: format!("{}.nodes ({namespace}/{node})", shared.schema),
        reason: format!(
            "its reservation is {value}, not a time in Unix nanoseconds: repair it (ClaimStore::repair) with a time past the last ID minted on it"
        ).into(),
    }
}

/// A write whose row, as stored, is not what the statement wrote: something on the
/// table rewrites the store's writes, so nothing it answered is trusted.
fn rewritten(shared: &Shared, namespace: &str, node: i64, what: String) -> ClaimError {
    ClaimError::Corrupt {
        path: format!("{}.nodes ({namespace}/{node})", shared.schema),
        reason: format!(
            "the row as stored is not what was written ({what}): a trigger, rule or policy rewrites the store's writes, so no claim or reservation on it is trusted; drop it (the store refuses such a schema at connect)"
        ).into(),
    }
}

impl PostgresStore {
    /// [`ClaimStore::claim`](flakeid::claim::ClaimStore::claim): the lowest id of the pool
    /// with no row, or whose lease ended and whose data can be read, each try one
    /// statement that checks the id is still free.
    pub(crate) fn claim(&self, request: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        let url = &self.shared.url;
        let lo = bigint(url, "node id", request.pool.start)?;
        let hi = bigint(url, "node id", request.pool.end)?;
        // One token for every attempt: an attempt whose reply was lost may have taken an
        // id, which the next finds as its own.
        let token = claim_token() as i64;
        let (namespace, instance) = (
            String::from(request.namespace),
            String::from(request.instance),
        );
        let pool = request.pool.clone();
        self.run(move |shared, client| {
            let (namespace, instance, pool) = (namespace.clone(), instance.clone(), pool.clone());
            async move {
                let claim = Claim {
                    shared: &shared,
                    client: &client,
                    namespace: &namespace,
                    instance: &instance,
                    pool,
                    token,
                };
                claim.once(lo, hi).await
            }
        })
    }

    /// [`ClaimStore::renew`](flakeid::claim::ClaimStore::renew): the larger reservation
    /// and a new lease, where the row's token is the claim's and it was not released.
    pub(crate) fn renew(&self, claimed: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        let reserved = bigint(&self.shared.url, "reservation", reserved)?;
        let claimed = claimed.clone();
        // A renewal that has not landed within the lease cannot keep it.
        self.run_within(self.ttl, move |shared, client| {
            let claimed = claimed.clone();
            async move {
                let node = claimed.node as i64;
                let token = claimed.token as i64;
                let done = client
                    .query_opt(
                        &shared.sql.renew,
                        &[&claimed.namespace, &node, &token, &reserved, &shared.ttl_ms],
                    )
                    .await
                    .map_err(shared.e())?;
                let Some(row) = done else {
                    return Err(why_not(&shared, &client, &claimed).await);
                };
                let (stored, kept, live): (Option<i64>, i64, Option<bool>) =
                    (row.get(0), row.get(1), row.get(2));
                if stored.is_some_and(|s| s >= reserved) && kept == token && live == Some(true) {
                    Ok(())
                } else {
                    Err(rewritten(
                        &shared,
                        &claimed.namespace,
                        node,
                        format!(
                            "renewed to {reserved}, stored {stored:?}, token {}, lease live: {live:?}",
                            if kept == token { "kept" } else { "changed" }
                        ),
                    ))
                }
            }
        })
    }

    /// [`ClaimStore::release`](flakeid::claim::ClaimStore::release): the final reservation
    /// and the lease ended, where the token is the claim's; a lost claim's final
    /// reservation is left where none is stored.
    pub(crate) fn release(&self, claimed: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        let reserved = bigint(&self.shared.url, "reservation", reserved)?;
        let claimed = claimed.clone();
        self.run(move |shared, client| {
            let claimed = claimed.clone();
            async move {
                let node = claimed.node as i64;
                let token = claimed.token as i64;
                let ns = &claimed.namespace;
                let done = client
                    .query_opt(&shared.sql.release, &[ns, &node, &token, &reserved])
                    .await
                    .map_err(shared.e())?;
                if let Some(row) = done {
                    let (stored, released): (Option<i64>, bool) = (row.get(0), row.get(1));
                    if stored == Some(reserved) && released {
                        return Ok(());
                    }
                    return Err(rewritten(
                        &shared,
                        ns,
                        node,
                        format!("released at {reserved}, stored {stored:?}, released: {released}"),
                    ));
                }
                let why = why_not(&shared, &client, &claimed).await;
                if matches!(why, ClaimError::NotOwner { .. }) {
                    client
                        .execute(&shared.sql.leave, &[ns, &node, &reserved])
                        .await
                        .map_err(shared.e())?;
                }
                Err(why)
            }
        })
    }

    /// [`ClaimStore::list`](flakeid::claim::ClaimStore::list).
    pub(crate) fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        let namespace = String::from(namespace);
        self.run(move |shared, client| {
            let namespace = namespace.clone();
            async move {
                let rows = client
                    .query(&shared.sql.list, &[&namespace])
                    .await
                    .map_err(shared.e())?;
                let mut infos = Vec::with_capacity(rows.len());
                for row in rows {
                    let node: i64 = row.get(0);
                    let Ok(id) = u64::try_from(node) else {
                        continue;
                    };
                    let holder: Option<String> = row.get(1);
                    let (released, live): (bool, Option<bool>) = (row.get(2), row.get(3));
                    let stored: Option<i64> = row.get(4);
                    let (state, reserved, problem) =
                        match reservation(&shared, &namespace, node, stored) {
                            Err(e) => (NodeState::Corrupt, 0, Some(e.to_string())),
                            Ok(r) if released => (NodeState::Released, r, None),
                            Ok(r) if live == Some(true) => (NodeState::Held, r, None),
                            Ok(r) => (NodeState::Expired, r, None),
                        };
                    infos.push(ClaimInfo {
                        node: id,
                        state,
                        holder,
                        reserved_until_unix_ns: reserved,
                        problem,
                    });
                }
                Ok(infos)
            }
        })
    }
}

/// Why a write by `claimed` changed no row: its data cannot be read, or it is not the
/// claim's any more.
async fn why_not(shared: &Shared, client: &Client, claimed: &Claimed) -> ClaimError {
    let node = claimed.node as i64;
    let row = client
        .query_opt(&shared.sql.row, &[&claimed.namespace, &node])
        .await;
    let not_owner = ClaimError::NotOwner {
        namespace: claimed.namespace.clone(),
        node: claimed.node,
    };
    match row {
        Err(e) => shared.e()(e),
        Ok(Some(row)) if row.get::<_, i64>(0) == claimed.token as i64 => {
            match row.get::<_, Option<i64>>(2) {
                Some(v) if v < 0 => corrupt(shared, &claimed.namespace, node, v),
                _ => not_owner,
            }
        }
        Ok(_) => not_owner,
    }
}

/// One claim's attempt.
struct Claim<'a> {
    shared: &'a Arc<Shared>,
    client: &'a Client,
    namespace: &'a str,
    instance: &'a str,
    /// The pool as asked, for a full pool's error.
    pool: core::ops::Range<u64>,
    token: i64,
}

/// What the pool's rows say of one id.
struct Row {
    node: i64,
    token: i64,
    live: bool,
    reserved: Option<i64>,
}

impl Claim<'_> {
    /// Reads the pool's rows, then tries the ids lowest first: `PoolFull` when none could
    /// be taken.
    async fn once(&self, lo: i64, hi: i64) -> Result<Claimed, ClaimError> {
        let (shared, client) = (self.shared, self.client);
        let e = shared.e();
        let rows: Vec<Row> = client
            .query(&shared.sql.pool, &[&self.namespace, &lo, &hi])
            .await
            .map_err(&e)?
            .iter()
            .map(|r| Row {
                node: r.get(0),
                token: r.get(1),
                live: r.get(3),
                reserved: r.get(4),
            })
            .collect();
        if let Some(mine) = rows.iter().find(|r| r.token == self.token) {
            // An earlier attempt took it and its reply was lost (or was not trusted): a
            // write of its own, committed as every write is, before the row counts.
            let kept = client
                .query_opt(
                    &shared.sql.keep,
                    &[&self.namespace, &mine.node, &self.token, &shared.ttl_ms],
                )
                .await
                .map_err(&e)?;
            if let Some(kept) = kept {
                return self.claimed(mine.node, &kept);
            }
        }
        let (mut held, mut corrupt) = (0, Vec::new());
        let mut rows = rows.iter().peekable();
        for node in lo..hi {
            let row = rows.next_if(|r| r.node == node);
            let args: [&(dyn tokio_postgres::types::ToSql + Sync); 5] = [
                &self.namespace,
                &node,
                &self.instance,
                &self.token,
                &shared.ttl_ms,
            ];
            match row {
                None => {
                    let made = client
                        .query_opt(&shared.sql.insert, &args)
                        .await
                        .map_err(&e)?;
                    if let Some(made) = made {
                        return self.claimed(node, &made);
                    }
                    held += 1;
                }
                Some(r) if r.reserved.is_some_and(|v| v < 0) => corrupt.push(node as u64),
                Some(r) if r.live => held += 1,
                Some(_) => match client
                    .query_opt(&shared.sql.take, &args)
                    .await
                    .map_err(&e)?
                {
                    Some(taken) => return self.claimed(node, &taken),
                    None => held += 1,
                },
            }
        }
        Err(ClaimError::PoolFull {
            namespace: self.namespace.into(),
            pool: self.pool.clone(),
            held,
            waited: core::time::Duration::ZERO,
            corrupt,
            wanted: 1,
        })
    }

    /// The claim of `node`, from its row as the write returned it (`reserved, token`):
    /// refused where the token stored is not the one written.
    fn claimed(&self, node: i64, row: &tokio_postgres::Row) -> Result<Claimed, ClaimError> {
        let (stored, token): (Option<i64>, i64) = (row.get(0), row.get(1));
        if token != self.token {
            return Err(rewritten(
                self.shared,
                self.namespace,
                node,
                "claimed with a new token, another stored".into(),
            ));
        }
        Ok(Claimed {
            namespace: self.namespace.into(),
            node: node as u64,
            not_before_unix_ns: reservation(self.shared, self.namespace, node, stored)?,
            fenced: true,
            token: self.token as u64,
        })
    }
}
