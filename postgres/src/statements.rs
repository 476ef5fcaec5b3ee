//! The store's statements, each one atomic step, with the schema written in once.
//!
//! A lease's length is `$ttl` milliseconds (a `float8`), added to the server's
//! `clock_timestamp()`. A reservation is a `bigint` of Unix nanoseconds; one below 0 is
//! data no version wrote (corrupt), `NULL` is none stored (removed by hand).

use std::string::String;

/// The server's clock, from pg_catalog whatever the session's `search_path`.
const NOW: &str = "pg_catalog.clock_timestamp()";

/// The statements for the tables of one schema.
pub(crate) struct Statements {
    /// `$1` namespace, `$2`..`$3` the pool: each row of the pool, in id order, as
    /// `(node, token, holder, live, reserved)`.
    pub pool: String,
    /// `$1` namespace, `$2` node, `$3` holder, `$4` token, `$5` ttl: a new row, if the id
    /// has none; returns `(reserved, token)` as stored.
    pub insert: String,
    /// The same parameters: the row of a free id (lease ended or released, readable data)
    /// taken; returns `(reserved, token)` as stored.
    pub take: String,
    /// `$1` namespace, `$2` node, `$3` token, `$4` reservation, `$5` ttl: the larger
    /// reservation and a new lease, where the token is the claim's and it was not released;
    /// returns `(reserved, token, live)` as stored.
    pub renew: String,
    /// `$1` namespace, `$2` node, `$3` token, `$4` ttl: a new lease, where the token is the
    /// claim's and it was not released; returns `(reserved, token)` as stored.
    pub keep: String,
    /// `$1` namespace, `$2` node, `$3` token, `$4` reservation: the final reservation, the
    /// lease ended, where the token is the claim's; returns `(reserved, released)` as stored.
    pub release: String,
    /// `$1` namespace, `$2` node, `$3` reservation: a lost claim's final reservation where
    /// none is stored.
    pub leave: String,
    /// `$1` namespace, `$2` node: `(token, released, reserved)`, why a write found nothing.
    pub row: String,
    /// `$1` namespace: every row, as `(node, holder, released, live, reserved)`.
    pub list: String,
    /// `$1` namespace, `$2` layout: recorded if the namespace has none.
    pub bind: String,
    /// `$1` namespace: the recorded layout.
    pub layout: String,
    /// Every namespace with its layout, in byte order.
    pub namespaces: String,
    /// `$1` namespace, `$2` node, `$3` reservation: where no live holder owns the id, the
    /// larger reservation, released, the token cleared; returns `(previous, live, stored)`.
    pub repair: String,
    /// The same parameters: a released row with `$3`, where the id has none.
    pub repair_missing: String,
    /// `$1` namespace, `$2` instance, `$3` ttl: a place at the back of the line.
    pub join: String,
    /// Places whose lease ended a minute ago.
    pub sweep: String,
    /// `$1` namespace: the live places, first first.
    pub line: String,
    /// `$1` place, `$2` namespace, `$3` ttl: the place's lease extended, if it lives.
    pub stay: String,
    /// `$1` place: the place removed.
    pub leave_line: String,
}

impl Statements {
    pub(crate) fn new(s: &str) -> Statements {
        let lease_of = |ttl: &str| {
            format!("{NOW} + {ttl}::pg_catalog.float8 * '1 millisecond'::pg_catalog.interval")
        };
        let lease = lease_of("$5");
        let readable = "(reserved IS NULL OR reserved >= 0)";
        Statements {
            pool: format!(
                "SELECT node, token, holder, expires IS NOT NULL AND expires > {NOW}, reserved \
                 FROM {s}.nodes WHERE namespace = $1 AND node >= $2 AND node < $3 ORDER BY node"
            ),
            insert: format!(
                "INSERT INTO {s}.nodes (namespace, node, holder, token, expires, reserved) \
                 VALUES ($1, $2, $3, $4, {lease}, NULL) ON CONFLICT DO NOTHING RETURNING reserved, token"
            ),
            take: format!(
                "UPDATE {s}.nodes SET holder = $3, token = $4, expires = {lease} \
                 WHERE namespace = $1 AND node = $2 \
                 AND (expires IS NULL OR expires <= {NOW}) AND {readable} \
                 RETURNING reserved, token"
            ),
            renew: format!(
                "UPDATE {s}.nodes SET reserved = GREATEST(COALESCE(reserved, 0), $4), expires = {lease} \
                 WHERE namespace = $1 AND node = $2 AND token = $3 AND expires IS NOT NULL AND {readable} \
                 RETURNING reserved, token, expires > {NOW}"
            ),
            keep: format!(
                "UPDATE {s}.nodes SET expires = {lease} \
                 WHERE namespace = $1 AND node = $2 AND token = $3 AND expires IS NOT NULL AND {readable} \
                 RETURNING reserved, token",
                lease = lease_of("$4")
            ),
            release: format!(
                "UPDATE {s}.nodes SET reserved = $4, expires = NULL \
                 WHERE namespace = $1 AND node = $2 AND token = $3 AND {readable} \
                 RETURNING reserved, expires IS NULL"
            ),
            leave: format!(
                "INSERT INTO {s}.nodes AS n (namespace, node, holder, token, expires, reserved) \
                 VALUES ($1, $2, NULL, 0, NULL, $3) \
                 ON CONFLICT (namespace, node) DO UPDATE SET reserved = EXCLUDED.reserved \
                 WHERE n.reserved IS NULL"
            ),
            row: format!(
                "SELECT token, expires IS NULL, reserved FROM {s}.nodes WHERE namespace = $1 AND node = $2"
            ),
            list: format!(
                "SELECT node, holder, expires IS NULL, expires > {NOW}, reserved \
                 FROM {s}.nodes WHERE namespace = $1 ORDER BY node"
            ),
            bind: format!(
                "INSERT INTO {s}.namespaces (namespace, layout) VALUES ($1, $2) ON CONFLICT DO NOTHING"
            ),
            layout: format!("SELECT layout FROM {s}.namespaces WHERE namespace = $1"),
            namespaces: format!(
                "SELECT n.namespace, l.layout FROM \
                 (SELECT namespace FROM {s}.nodes UNION SELECT namespace FROM {s}.namespaces) n \
                 LEFT JOIN {s}.namespaces l ON l.namespace = n.namespace \
                 ORDER BY n.namespace COLLATE pg_catalog.\"C\""
            ),
            repair: format!(
                "WITH cur AS (SELECT reserved, expires IS NOT NULL AND expires > {NOW} AS live \
                   FROM {s}.nodes WHERE namespace = $1 AND node = $2 FOR UPDATE), \
                 up AS (UPDATE {s}.nodes n \
                   SET reserved = GREATEST(CASE WHEN cur.reserved >= 0 THEN cur.reserved ELSE 0 END, $3), \
                       expires = NULL, token = 0 \
                   FROM cur WHERE n.namespace = $1 AND n.node = $2 AND NOT cur.live RETURNING n.reserved) \
                 SELECT cur.reserved, cur.live, (SELECT reserved FROM up) FROM cur"
            ),
            repair_missing: format!(
                "INSERT INTO {s}.nodes (namespace, node, holder, token, expires, reserved) \
                 VALUES ($1, $2, NULL, 0, NULL, $3) ON CONFLICT DO NOTHING RETURNING reserved"
            ),
            join: format!(
                "INSERT INTO {s}.line (namespace, instance, expires) \
                 VALUES ($1, $2, {NOW} + $3::pg_catalog.float8 * '1 millisecond'::pg_catalog.interval) RETURNING place"
            ),
            sweep: format!(
                "DELETE FROM {s}.line WHERE expires < {NOW} - '1 minute'::pg_catalog.interval"
            ),
            line: format!(
                "SELECT place, instance FROM {s}.line \
                 WHERE namespace = $1 AND expires > {NOW} ORDER BY place"
            ),
            stay: format!(
                "UPDATE {s}.line SET expires = {NOW} + $3::pg_catalog.float8 * '1 millisecond'::pg_catalog.interval \
                 WHERE place = $1 AND namespace = $2 AND expires > {NOW} RETURNING place"
            ),
            leave_line: format!("DELETE FROM {s}.line WHERE place = $1"),
        }
    }
}
