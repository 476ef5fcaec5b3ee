//! The store's tables: made where the role may and they are missing, their version and
//! shape checked at every connect, the privileges the role needs checked by name.

use std::string::String;
use std::vec::Vec;

use flakeid::claim::ClaimError;
use tokio_postgres::Client;

use crate::errors::pg_error;
use crate::grants::grant_statements;
use crate::trust;

/// The version of the tables this build reads and writes, stored in `flakeid_schema`.
pub const SCHEMA_VERSION: i32 = 1;

/// The tables of version [`SCHEMA_VERSION`] in `schema`, each a `CREATE TABLE` without
/// `IF NOT EXISTS` (a table someone made first is an error, not a silent "skipping").
fn tables(schema: &str) -> [String; 4] {
    [
        format!("CREATE TABLE {schema}.flakeid_schema (version integer NOT NULL)"),
        format!(
            "CREATE TABLE {schema}.namespaces (
        namespace text PRIMARY KEY,
        layout text NOT NULL
    )"
        ),
        format!(
            "CREATE TABLE {schema}.nodes (
        namespace text NOT NULL,
        node bigint NOT NULL,
        holder text,
        token bigint NOT NULL,
        expires timestamptz,
        reserved bigint,
        PRIMARY KEY (namespace, node)
    )"
        ),
        format!(
            "CREATE TABLE {schema}.line (
        place bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        namespace text NOT NULL,
        instance text NOT NULL,
        expires timestamptz NOT NULL
    )"
        ),
    ]
}

/// The row of the tables' version.
fn version_row(schema: &str) -> String {
    format!("INSERT INTO {schema}.flakeid_schema (version) VALUES ({SCHEMA_VERSION})")
}

/// The statements that make the schema `schema` and its tables of version
/// [`SCHEMA_VERSION`], all owned by the role `owner` (`CREATE SCHEMA ... AUTHORIZATION`
/// makes its tables as that role), as a superuser or a member of `owner` with `CREATE`
/// on the database runs them (the README prints them). No `IF NOT EXISTS`: a schema
/// another role made first fails here instead of being used.
pub fn create_statements(schema: &str, owner: &str) -> String {
    let mut out = format!("CREATE SCHEMA {schema} AUTHORIZATION {owner}");
    for table in tables(schema) {
        out.push_str("\n    ");
        out.push_str(&table);
    }
    out.push_str(";\n");
    out.push_str(&version_row(schema));
    out.push(';');
    out
}

/// Each table's columns and their types (as `information_schema` names them).
const COLUMNS: &[(&str, &[(&str, &str)])] = &[
    ("flakeid_schema", &[("version", "integer")]),
    ("namespaces", &[("namespace", "text"), ("layout", "text")]),
    (
        "nodes",
        &[
            ("namespace", "text"),
            ("node", "bigint"),
            ("holder", "text"),
            ("token", "bigint"),
            ("expires", "timestamp with time zone"),
            ("reserved", "bigint"),
        ],
    ),
    (
        "line",
        &[
            ("place", "bigint"),
            ("namespace", "text"),
            ("instance", "text"),
            ("expires", "timestamp with time zone"),
        ],
    ),
];

/// The privileges the store uses on each table.
const PRIVILEGES: &[(&str, &[&str])] = &[
    ("flakeid_schema", &["SELECT"]),
    ("namespaces", &["SELECT", "INSERT"]),
    ("nodes", &["SELECT", "INSERT", "UPDATE"]),
    ("line", &["SELECT", "INSERT", "UPDATE", "DELETE"]),
];

/// Makes the tables where they are missing and the role may (one maker at a time, under
/// an advisory lock; never in a schema another role owns or may write to), then checks
/// their version, their columns, that they are the store's alone (owner `owner`, or the
/// role connected), and the role's privileges.
pub async fn ensure(
    client: &mut Client,
    url: &str,
    schema: &str,
    owner: Option<&str>,
) -> Result<(), ClaimError> {
    let e = |e: tokio_postgres::Error| pg_error(url, schema, e);
    let found: Option<String> = client
        .query_one(
            "SELECT pg_catalog.to_regclass($1)::pg_catalog.text",
            &[&format!("{schema}.flakeid_schema")],
        )
        .await
        .map_err(e)?
        .get(0);
    if found.is_none() {
        trust::check(client, url, schema, owner, false).await?;
        create(client, url, schema).await?;
    }
    let corrupt = |reason: String| ClaimError::Corrupt {
        path: format!("{url} schema {schema}"),
        reason: reason.into(),
    };
    let versions: Vec<i32> = client
        .query(&format!("SELECT version FROM {schema}.flakeid_schema"), &[])
        .await
        .map_err(e)?
        .iter()
        .map(|row| row.get(0))
        .collect();
    match versions.as_slice() {
        [SCHEMA_VERSION] => {}
        [v] if *v > SCHEMA_VERSION => {
            return Err(corrupt(format!(
                "the tables are of version {v}, newer than this build's {SCHEMA_VERSION}: upgrade flakeid"
            )));
        }
        [v] => {
            return Err(corrupt(format!(
                "the tables are of version {v}, older than this build's {SCHEMA_VERSION}: migrate them as the CHANGELOG says"
            )));
        }
        other => {
            return Err(corrupt(format!(
                "{schema}.flakeid_schema holds {} rows, not one version: restore it as flakeid-postgres's README creates it",
                other.len()
            )));
        }
    }
    check_columns(client, url, schema).await?;
    trust::check(client, url, schema, owner, true).await?;
    check_privileges(client, url, schema).await
}

/// Makes the schema (where it is missing) and the tables in one transaction, under an
/// advisory lock so that two first connects do not race; a role that may not is told
/// what an owner must run.
async fn create(client: &mut Client, url: &str, schema: &str) -> Result<(), ClaimError> {
    let e = |e: tokio_postgres::Error| pg_error(url, schema, e);
    let tx = client.transaction().await.map_err(e)?;
    tx.execute(
        "SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('flakeid-postgres schema ' || $1))",
        &[&schema],
    )
    .await
    .map_err(e)?;
    // Under the lock: another first connect may have made them meanwhile.
    let row = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1), \
             pg_catalog.to_regclass($2) IS NOT NULL",
            &[&schema, &format!("{schema}.flakeid_schema")],
        )
        .await
        .map_err(e)?;
    let (exists, made): (bool, bool) = (row.get(0), row.get(1));
    if made {
        return tx.commit().await.map_err(e);
    }
    let mut statements = Vec::new();
    if !exists {
        statements.push(format!("CREATE SCHEMA {schema}"));
    }
    statements.extend(tables(schema));
    statements.push(version_row(schema));
    match tx.batch_execute(&statements.join(";\n")).await {
        Ok(()) => tx.commit().await.map_err(e),
        Err(err)
            if err.code() == Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) =>
        {
            Err(ClaimError::Refused {
                store: url.into(),
                reason: format!(
                    "the schema {schema} has no flakeid tables and this role may not make them ({}): have an owner run the statements in flakeid-postgres's README (or connect once as a role that may), then grant this role what it needs",
                    err.as_db_error()
                        .map_or("permission denied", |d| d.message())
                ).into(),
            })
        }
        Err(err) if err.code() == Some(&tokio_postgres::error::SqlState::DUPLICATE_TABLE) => {
            Err(ClaimError::Corrupt {
                path: format!("{url} schema {schema}"),
                reason: format!(
                    "some of the tables are there without flakeid_schema ({}): made by hand or by another tool; drop them, or make the schema again as flakeid-postgres's README does",
                    err.as_db_error().map_or("already exists", |d| d.message())
                ).into(),
            })
        }
        Err(err) => Err(e(err)),
    }
}

/// Every column the store uses is there with its type.
async fn check_columns(client: &Client, url: &str, schema: &str) -> Result<(), ClaimError> {
    let rows = client
        .query(
            "SELECT table_name::pg_catalog.text, column_name::pg_catalog.text, data_type::pg_catalog.text \
             FROM information_schema.columns WHERE table_schema = $1",
            &[&schema],
        )
        .await
        .map_err(|e| pg_error(url, schema, e))?;
    let found: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let mut wrong = Vec::new();
    for (table, columns) in COLUMNS {
        for (column, kind) in *columns {
            let there = found
                .iter()
                .find(|(t, c, _)| t == table && c == column)
                .map(|(_, _, k)| k.as_str());
            match there {
                Some(k) if k == *kind => {}
                Some(k) => wrong.push(format!("{table}.{column} is {k}, not {kind}")),
                None => wrong.push(format!("{table}.{column} is missing")),
            }
        }
    }
    if wrong.is_empty() {
        return Ok(());
    }
    Err(ClaimError::Corrupt {
        path: format!("{url} schema {schema}"),
        reason: format!(
            "the tables were altered by hand ({}): restore them as flakeid-postgres's README creates them",
            wrong.join("; ")
        ).into(),
    })
}

/// The role holds every privilege the store uses; else a refusal naming the missing ones
/// and the grants.
async fn check_privileges(client: &Client, url: &str, schema: &str) -> Result<(), ClaimError> {
    let e = |e: tokio_postgres::Error| pg_error(url, schema, e);
    let mut missing = Vec::new();
    for (table, privileges) in PRIVILEGES {
        for privilege in *privileges {
            let held: bool = client
                .query_one(
                    "SELECT pg_catalog.has_table_privilege($1, $2)",
                    &[&format!("{schema}.{table}"), privilege],
                )
                .await
                .map_err(e)?
                .get(0);
            if !held {
                missing.push(format!("{privilege} on {schema}.{table}"));
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let role: String = client
        .query_one("SELECT CURRENT_USER::pg_catalog.text", &[])
        .await
        .map_err(e)?
        .get(0);
    Err(ClaimError::Refused {
        store: url.into(),
        reason: format!(
            "the role {role} lacks {}: have an owner run `{}`",
            missing.join(", "),
            grant_statements(schema, &role).replace('\n', " ")
        )
        .into(),
    })
}
