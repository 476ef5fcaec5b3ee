//! Whether the store's schema is its own: owned by the connecting role or the owner the
//! URL names, no other role able to write to it, nothing that rewrites a write (a
//! trigger, a rule, a row-level policy), and the shape the statements rely on (plain,
//! logged tables with their primary keys). Any role with `CREATE` on the database can
//! make the schema or its tables first and grant this role what it needs; that role
//! could then end a live lease or clear a reservation, so such a schema is refused.

use std::string::String;
use std::vec::Vec;

use flakeid::claim::ClaimError;
use tokio_postgres::Client;

use crate::errors::pg_error;

/// Every way the schema `$1` is not the store's alone, as `(kind, what)` rows: `access`
/// for whom it trusts (owners, grants, triggers, rules, policies), `shape` for what
/// its statements rely on (plain logged tables, primary keys). `$2` names the roles
/// trusted beside `current_user` (the URL's `owner=`).
///
/// Written grants (`INSERT`, `UPDATE`, `DELETE`, `TRUNCATE`, `TRIGGER`) of another role
/// count on the tables, on a column, and `UPDATE` (setval) on the line's sequence;
/// `CREATE` on the schema.
const PROBLEMS: &str = "\
WITH ns AS (
    SELECT n.oid, n.nspname::text AS name, n.nspowner, n.nspacl
    FROM pg_catalog.pg_namespace n WHERE n.nspname = $1),
trusted AS (
    SELECT r.oid FROM pg_catalog.pg_roles r
    WHERE r.rolname = CURRENT_USER OR r.rolname = ANY($2::pg_catalog.text[])),
rel AS (
    SELECT c.oid, c.relname::text AS name, c.relkind, c.relpersistence, c.relowner,
           c.relacl, c.relrowsecurity
    FROM pg_catalog.pg_class c JOIN ns ON c.relnamespace = ns.oid
    WHERE c.relname IN ('flakeid_schema', 'namespaces', 'nodes', 'line')
       OR (c.relkind = 'S' AND EXISTS (
           SELECT 1 FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_class t ON t.oid = d.refobjid
           WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = c.oid
             AND t.relnamespace = ns.oid AND t.relname = 'line'))),
who AS (
    SELECT r.oid, r.rolname::text AS name FROM pg_catalog.pg_roles r
    UNION ALL SELECT 0, 'PUBLIC')
SELECT 'access', 'the schema ' || ns.name || ' is owned by ' || w.name
    FROM ns JOIN who w ON w.oid = ns.nspowner
    WHERE ns.nspowner NOT IN (SELECT oid FROM trusted)
UNION ALL
SELECT 'access', w.name || ' may CREATE in the schema ' || ns.name
    FROM ns, pg_catalog.aclexplode(ns.nspacl) a JOIN who w ON w.oid = a.grantee
    WHERE a.privilege_type = 'CREATE' AND a.grantee NOT IN (SELECT oid FROM trusted)
UNION ALL
SELECT 'access', rel.name || ' is owned by ' || w.name
    FROM rel JOIN who w ON w.oid = rel.relowner
    WHERE rel.relowner NOT IN (SELECT oid FROM trusted)
UNION ALL
SELECT 'access', w.name || ' may ' || a.privilege_type || ' ' || rel.name
    FROM rel, pg_catalog.aclexplode(rel.relacl) a JOIN who w ON w.oid = a.grantee
    WHERE a.privilege_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'TRIGGER')
      AND a.grantee NOT IN (SELECT oid FROM trusted)
UNION ALL
SELECT 'access', w.name || ' may ' || a.privilege_type || ' ' || rel.name || '.' || att.attname::text
    FROM rel JOIN pg_catalog.pg_attribute att ON att.attrelid = rel.oid,
         pg_catalog.aclexplode(att.attacl) a JOIN who w ON w.oid = a.grantee
    WHERE a.privilege_type IN ('INSERT', 'UPDATE')
      AND a.grantee NOT IN (SELECT oid FROM trusted)
UNION ALL
SELECT 'access', 'a trigger ' || t.tgname::text || ' on ' || rel.name
    FROM pg_catalog.pg_trigger t JOIN rel ON t.tgrelid = rel.oid WHERE NOT t.tgisinternal
UNION ALL
SELECT 'access', 'a rule ' || r.rulename::text || ' on ' || rel.name
    FROM pg_catalog.pg_rewrite r JOIN rel ON r.ev_class = rel.oid WHERE r.rulename <> '_RETURN'
UNION ALL
SELECT 'access', 'row-level security on ' || rel.name FROM rel WHERE rel.relrowsecurity
UNION ALL
SELECT 'access', 'a policy ' || p.polname::text || ' on ' || rel.name
    FROM pg_catalog.pg_policy p JOIN rel ON p.polrelid = rel.oid
UNION ALL
SELECT 'shape', rel.name || ' is not a plain table' FROM rel
    WHERE rel.relkind <> 'r' AND rel.name IN ('flakeid_schema', 'namespaces', 'nodes', 'line')
UNION ALL
SELECT 'shape', rel.name || ' is unlogged (a crash empties it, and no standby has it)'
    FROM rel WHERE rel.relpersistence <> 'p'
UNION ALL
SELECT 'shape', e.name || ' has no PRIMARY KEY (' || e.cols || ')'
    FROM (VALUES ('nodes', 'namespace, node'), ('namespaces', 'namespace'), ('line', 'place'))
         AS e (name, cols)
    WHERE EXISTS (SELECT 1 FROM rel WHERE rel.name = e.name)
      AND NOT EXISTS (
        SELECT 1 FROM pg_catalog.pg_constraint k JOIN rel ON k.conrelid = rel.oid
        WHERE rel.name = e.name AND k.contype = 'p'
          AND pg_catalog.pg_get_constraintdef(k.oid) = 'PRIMARY KEY (' || e.cols || ')')";

/// Refuses the schema unless it is the store's alone (see the module's text), and, with
/// `shape`, unless its tables have the shape the statements rely on. Before the store
/// makes its tables, `shape` is off: whom the schema trusts is checked, and a table made
/// by hand there makes the creation fail.
pub(crate) async fn check(
    client: &Client,
    url: &str,
    schema: &str,
    owner: Option<&str>,
    shape_too: bool,
) -> Result<(), ClaimError> {
    let owners: Vec<&str> = owner.into_iter().collect();
    let rows = client
        .query(PROBLEMS, &[&schema, &owners])
        .await
        .map_err(|e| pg_error(url, schema, e))?;
    let (mut access, mut shape) = (Vec::new(), Vec::new());
    for row in &rows {
        let (kind, what): (String, String) = (row.get(0), row.get(1));
        if kind == "access" {
            access.push(what);
        } else {
            shape.push(what);
        }
    }
    if !access.is_empty() {
        let role: String = client
            .query_one("SELECT CURRENT_USER::pg_catalog.text", &[])
            .await
            .map_err(|e| pg_error(url, schema, e))?
            .get(0);
        let trusted = match owner {
            Some(owner) => format!("{role} and the owner {owner} (owner= in the URL)"),
            None => {
                format!("{role} (give owner=ROLE in the URL where another role of yours owns them)")
            }
        };
        return Err(ClaimError::Refused {
            store: url.into(),
            reason: format!(
                "the schema {schema} is not the store's alone ({}): another role could end a live lease or clear a reservation, and two holders would mint the same IDs. Only {trusted} may own or write to it, and nothing may rewrite its rows: revoke the others' grants, drop the triggers, rules and policies, or make the schema again as flakeid-postgres's README does",
                access.join("; ")
            ).into(),
        });
    }
    if shape_too && !shape.is_empty() {
        return Err(ClaimError::Corrupt {
            path: format!("{url} schema {schema}"),
            reason: format!(
                "the tables were made or altered by hand ({}): the claims rely on plain, logged tables with these keys; make them again as flakeid-postgres's README does",
                shape.join("; ")
            ).into(),
        });
    }
    Ok(())
}
