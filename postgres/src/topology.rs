//! What the primary's replication promises of a committed reservation: each standby it
//! streams to, and whether a commit waits for that standby. A commit is trusted only
//! where every standby that could be promoted has it: each one synchronous (`FIRST n`
//! naming them all), or a quorum (`ANY n`) as large as the standbys that answer it.
//! Checked at connect and again after every request, so that a standby attached while
//! a holder runs stops the trust in its next reservation.

use std::string::String;
use std::vec::Vec;

use flakeid::claim::ClaimError;
use flakeid::claim::store::unreachable;
use tokio_postgres::{Client, Statement};

use crate::errors::pg_error;
use crate::settings::Replication;

/// `synchronous_standby_names`, whether the server is a standby, and each physical
/// standby it streams to (logical subscribers, which cannot be promoted, left out), in
/// one order: its `application_name`, `sync_state` and address. A role without
/// `pg_read_all_stats` sees the rows with these columns empty.
const QUERY: &str = "\
WITH r AS (
    SELECT s.pid, s.application_name, s.sync_state, s.client_addr
    FROM pg_catalog.pg_stat_replication s
    WHERE NOT EXISTS (
        SELECT 1 FROM pg_catalog.pg_replication_slots l
        WHERE l.active_pid = s.pid AND l.slot_type = 'logical'))
SELECT pg_catalog.current_setting('synchronous_standby_names'),
       pg_catalog.pg_is_in_recovery(),
       ARRAY(SELECT COALESCE(r.application_name, '') FROM r ORDER BY r.pid),
       ARRAY(SELECT COALESCE(r.sync_state, '') FROM r ORDER BY r.pid),
       ARRAY(SELECT COALESCE(pg_catalog.host(r.client_addr), '') FROM r ORDER BY r.pid)";

/// A standby as the primary sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Standby {
    /// Its `application_name` (empty where the role may not see it).
    pub name: String,
    /// `sync`, `quorum`, `potential` or `async` (empty where the role may not see it).
    pub state: String,
    /// Its address (empty for a Unix socket, or where the role may not see it).
    pub addr: String,
}

/// How many standbys a commit waits for, as `synchronous_standby_names` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    /// `[FIRST] n (...)` or a plain list (`FIRST 1`): the first `n` connected of the list.
    First,
    /// `ANY n (...)`: any `n` of the list.
    Any(u32),
}

/// The method of `names` (PostgreSQL's grammar: `FIRST n (...)`, `ANY n (...)`,
/// `n (...)`, or a plain list).
fn method(names: &str) -> Method {
    let names = names.trim_start();
    let word_end = names
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(names.len());
    let (word, rest) = names.split_at(word_end);
    let rest = rest.trim_start();
    let digits_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (digits, after) = rest.split_at(digits_end);
    let n = digits.parse::<u32>().ok();
    match n {
        Some(n) if word.eq_ignore_ascii_case("any") && after.trim_start().starts_with('(') => {
            Method::Any(n)
        }
        _ => Method::First,
    }
}

/// What a failover costs, said of each risk.
const COST: &str = "a failover to it can lose the last renewals, and a holder there may then start below IDs the old holder minted: as far back as the replication lag at the failover plus one window, and the difference between the holders' clocks";

/// The risk a commit runs with these standbys, or `None` where every one has each
/// commit before it is acknowledged.
pub(crate) fn risk(names: &str, standbys: &[Standby]) -> Option<String> {
    if standbys.is_empty() {
        return None;
    }
    let label = |s: &Standby| match (s.name.as_str(), s.addr.as_str()) {
        ("", "") => "a standby".to_owned(),
        (name, "") => format!("standby {name}"),
        ("", addr) => format!("a standby at {addr}"),
        (name, addr) => format!("standby {name} at {addr}"),
    };
    if standbys.iter().any(|s| s.state.is_empty()) {
        return Some(format!(
            "the primary streams to {} standby(s) and this role cannot see whether each is synchronous (pg_stat_replication shows sync_state to members of pg_read_all_stats): GRANT pg_read_all_stats TO the role, else {COST}",
            standbys.len()
        ));
    }
    if names.trim().is_empty() {
        return Some(format!(
            "the primary streams to {} standby(s) asynchronously (synchronous_standby_names is empty): {COST}. Name them in synchronous_standby_names to close this",
            standbys.len()
        ));
    }
    let waited = match method(names) {
        Method::First => "sync",
        Method::Any(_) => "quorum",
    };
    let outside: Vec<String> = standbys
        .iter()
        .filter(|s| s.state != waited)
        .map(|s| format!("{} is {}", label(s), s.state))
        .collect();
    if !outside.is_empty() {
        return Some(format!(
            "{} (synchronous_standby_names = '{names}'): a commit does not wait for it, so {COST}. Name every standby so that each commit waits for all of them (FIRST n with n the number of standbys, or ANY n likewise)",
            outside.join(", ")
        ));
    }
    if let Method::Any(n) = method(names) {
        let quorum = standbys.len();
        if (n as usize) < quorum {
            return Some(format!(
                "a commit waits for {n} of the {quorum} standbys (synchronous_standby_names = '{names}'), so a failover to one that did not answer it can lose it: {COST}. Give ANY {quorum}, or fence the standbys that lag before promoting one"
            ));
        }
    }
    None
}

/// [`QUERY`], prepared once per session: it runs after every request.
pub(crate) async fn prepare(
    client: &Client,
    url: &str,
    schema: &str,
) -> Result<Statement, ClaimError> {
    client
        .prepare(QUERY)
        .await
        .map_err(|e| pg_error(url, schema, e))
}

/// The replication of the primary `client` is connected to (asked by [`prepare`]'s
/// statement), judged: the warnings to
/// carry (where the URL accepts asynchronous standbys) and `synchronous_standby_names`,
/// or why the store refuses it.
pub(crate) async fn check(
    client: &Client,
    query: &Statement,
    url: &str,
    schema: &str,
    replication: Replication,
) -> Result<(Vec<String>, String), ClaimError> {
    let row = client
        .query_one(query, &[])
        .await
        .map_err(|e| pg_error(url, schema, e))?;
    let (names, recovery): (String, bool) = (row.get(0), row.get(1));
    if recovery {
        return Err(unreachable(
            url,
            "the server is a standby (in recovery): connect to the primary, or list every host with target_session_attrs=read-write",
        ));
    }
    let (apps, states, addrs): (Vec<String>, Vec<String>, Vec<String>) =
        (row.get(2), row.get(3), row.get(4));
    let standbys: Vec<Standby> = apps
        .into_iter()
        .zip(states)
        .zip(addrs)
        .map(|((name, state), addr)| Standby { name, state, addr })
        .collect();
    let Some(risk) = risk(&names, &standbys) else {
        return Ok((Vec::new(), names));
    };
    let risk = format!("{url}: {risk}");
    match replication {
        Replication::Asynchronous => Ok((vec![risk], names)),
        Replication::Synchronous => Err(ClaimError::Refused {
            store: url.into(),
            reason: format!("{risk}; or add replication=async to the URL to accept it").into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standby(name: &str, state: &str) -> Standby {
        Standby {
            name: name.into(),
            state: state.into(),
            addr: "127.0.0.1".into(),
        }
    }

    /// Each grammar of `synchronous_standby_names` is read as PostgreSQL reads it.
    #[test]
    fn the_method_is_read_as_postgres_reads_it() {
        for (names, m) in [
            ("s1", Method::First),
            ("s1, s2", Method::First),
            ("FIRST 2 (s1, s2)", Method::First),
            ("2 (s1, s2)", Method::First),
            ("ANY 1 (s1, s2)", Method::Any(1)),
            ("any 2(s1,s2)", Method::Any(2)),
            ("  Any 3 ( \"a\", b, c)", Method::Any(3)),
            ("any, other", Method::First),
            ("*", Method::First),
        ] {
            assert_eq!(method(names), m, "{names}");
        }
    }

    /// A commit is trusted only where every standby has it before it is acknowledged:
    /// each of a `FIRST` list synchronous, a quorum as large as its standbys; else the
    /// risk names the standby that may lack it.
    #[test]
    fn only_standbys_that_all_have_each_commit_are_trusted() {
        let none: [Standby; 0] = [];
        assert_eq!(risk("", &none), None, "a lone primary");
        assert_eq!(risk("s1", &none), None);
        assert_eq!(risk("s1", &[standby("s1", "sync")]), None);
        assert_eq!(
            risk(
                "FIRST 2 (s1, s2)",
                &[standby("s1", "sync"), standby("s2", "sync")]
            ),
            None
        );
        assert_eq!(
            risk(
                "ANY 2 (s1, s2)",
                &[standby("s1", "quorum"), standby("s2", "quorum")]
            ),
            None
        );
        for (names, standbys, says) in [
            ("", vec![standby("s1", "async")], "asynchronously"),
            (
                "s1",
                vec![standby("s1", "sync"), standby("s2", "async")],
                "standby s2 at 127.0.0.1 is async",
            ),
            (
                "FIRST 1 (s1, s2)",
                vec![standby("s1", "sync"), standby("s2", "potential")],
                "standby s2 at 127.0.0.1 is potential",
            ),
            (
                "ANY 1 (s1, s2)",
                vec![standby("s1", "quorum"), standby("s2", "quorum")],
                "waits for 1 of the 2",
            ),
            ("s1", vec![standby("", "")], "pg_read_all_stats"),
        ] {
            let text = risk(names, &standbys).unwrap_or_default();
            assert!(text.contains(says), "{names}: {text}");
            assert!(text.contains("replication lag"), "{names}: {text}");
        }
    }
}
