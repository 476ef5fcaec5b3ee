//! The store beside another team's role on the same database (a real PostgreSQL 15,
//! started by the test on 127.0.0.1): a schema or tables that role made first, a write
//! grant it holds, a trigger, a rule or a policy that rewrites the store's writes, a
//! function planted on the search path, tables made by hand without their keys or
//! unlogged. Each was a path to two holders minting the same IDs; each is refused,
//! saying what is wrong and what to do.

use flakeid::claim::{ClaimError, ClaimErrorKind, ClaimStore};
mod common;

use common::{claim_one, open, refused};
use flakeid_fleet::postgres::Postgres;
use flakeid_fleet::scenarios::{self as fleet, Server};
use flakeid_postgres::{create_statements, grant_statements};

/// A server with the roles of two teams: `ids` (the store's, password `ids`) and
/// `squatter` (another team's, with `CREATE` on the database), and `owner`, a role of
/// the store's team that owns what its statements make.
fn two_teams(name: &str) -> Option<(Postgres, String)> {
    let server = Postgres::start(name)?;
    server.sql(
        "postgres",
        "CREATE ROLE ids LOGIN PASSWORD 'ids'; CREATE ROLE squatter LOGIN; \
         CREATE ROLE owner NOLOGIN; GRANT CREATE ON DATABASE postgres TO squatter",
    );
    let pw = server.process.dir.join("ids.password");
    flakeid_fleet::write_secret(&pw, "ids");
    let url = format!(
        "postgres://ids@127.0.0.1:{}/postgres?password-file={}&sslmode=disable",
        server.port,
        pw.display()
    );
    Some((server, url))
}

/// A schema another role made first (its tables, grants to the store's role as the
/// README lists them) is refused, naming the owner; so is the owner's own schema once
/// that role holds a write grant on a table or a column, or may create in the schema.
/// The README's statements fail on a schema someone else made (no "already exists,
/// skipping"), and the schema they make is accepted with `owner=`.
#[test]
fn a_schema_another_role_made_or_may_write_is_refused() {
    let _one = fleet::one_at_a_time();
    let Some((server, url)) = two_teams("squat") else {
        return;
    };
    server.sql(
        "postgres",
        &format!(
            "SET ROLE squatter; {} {}",
            create_statements("flakeid", "squatter"),
            grant_statements("flakeid", "ids")
        ),
    );
    refused(
        &url,
        ClaimErrorKind::Access,
        &[
            "schema flakeid is owned by squatter",
            "nodes is owned by squatter",
            "owner=",
        ],
    );
    // The owner's statements on the squatted schema stop at the first one.
    let err = server
        .psql("postgres", &create_statements("flakeid", "owner"))
        .unwrap_err();
    assert!(err.contains("already exists"), "{err}");
    // The schema made by the README's statements, and the grants: accepted.
    server.sql("postgres", "DROP SCHEMA flakeid CASCADE");
    server.sql("postgres", &create_statements("flakeid", "owner"));
    server.sql("postgres", &grant_statements("flakeid", "ids"));
    let owned = format!("{url}&owner=owner");
    refused(&url, ClaimErrorKind::Access, &["is owned by owner"]);
    let store = open(&owned).unwrap();
    let c = claim_one(&store, "n");
    store.release(&c, 1).unwrap();
    for (grant, says) in [
        (
            "GRANT UPDATE ON flakeid.nodes TO squatter",
            "squatter may UPDATE nodes",
        ),
        (
            "GRANT UPDATE (reserved) ON flakeid.nodes TO squatter",
            "squatter may UPDATE nodes.reserved",
        ),
        (
            "GRANT DELETE ON flakeid.line TO PUBLIC",
            "PUBLIC may DELETE line",
        ),
        (
            "GRANT CREATE ON SCHEMA flakeid TO squatter",
            "squatter may CREATE in the schema flakeid",
        ),
    ] {
        server.sql("postgres", grant);
        refused(&owned, ClaimErrorKind::Access, &[says, "revoke"]);
        server.sql(
            "postgres",
            &grant.replace("GRANT", "REVOKE").replace(" TO ", " FROM "),
        );
    }
    drop(open(&owned).unwrap());
}

/// A trigger, a rule or a row-level policy on the tables is refused at connect; one
/// added under a connected store (a trigger that keeps `reserved` as it was) makes the
/// renewal fail, never succeed with the reservation unwritten.
#[test]
fn a_trigger_rule_or_policy_that_rewrites_writes_is_refused() {
    let _one = fleet::one_at_a_time();
    let Some((server, _)) = two_teams("rewrite") else {
        return;
    };
    let url = server.url();
    let store = open(&url).unwrap();
    let c = claim_one(&store, "n");
    store.renew(&c, 100).unwrap();
    server.sql(
        "postgres",
        "CREATE FUNCTION public.keep_reserved() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN NEW.reserved := OLD.reserved; RETURN NEW; END $$; \
         CREATE TRIGGER keep_reserved BEFORE UPDATE ON flakeid.nodes \
         FOR EACH ROW EXECUTE FUNCTION public.keep_reserved()",
    );
    let err = store.renew(&c, 200).unwrap_err();
    assert_eq!(err.kind(), ClaimErrorKind::Corrupt, "{err}");
    assert!(err.to_string().contains("not what was written"), "{err}");
    refused(
        &url,
        ClaimErrorKind::Access,
        &["a trigger keep_reserved on nodes"],
    );
    server.sql("postgres", "DROP TRIGGER keep_reserved ON flakeid.nodes");
    store.renew(&c, 200).unwrap();
    for (add, says, remove) in [
        (
            "CREATE RULE keep AS ON UPDATE TO flakeid.nodes DO INSTEAD NOTHING",
            "a rule keep on nodes",
            "DROP RULE keep ON flakeid.nodes",
        ),
        (
            "ALTER TABLE flakeid.nodes ENABLE ROW LEVEL SECURITY",
            "row-level security on nodes",
            "ALTER TABLE flakeid.nodes DISABLE ROW LEVEL SECURITY",
        ),
        (
            "CREATE POLICY mine ON flakeid.line USING (true)",
            "a policy mine on line",
            "DROP POLICY mine ON flakeid.line",
        ),
    ] {
        server.sql("postgres", add);
        refused(&url, ClaimErrorKind::Access, &[says]);
        server.sql("postgres", remove);
    }
    store.release(&c, 200).unwrap();
}

/// A function another role planted where the search path looks first (`public`, the
/// default before PostgreSQL 15 and kept by upgraded clusters, or a schema named like
/// the role), with an argument type closer than pg_catalog's, never runs: the store's
/// first connect makes its tables and the planted function is not called.
#[test]
fn a_function_planted_on_the_search_path_never_runs() {
    let _one = fleet::one_at_a_time();
    let Some((server, url)) = two_teams("planted") else {
        return;
    };
    server.sql(
        "postgres",
        "GRANT CREATE ON DATABASE postgres TO ids; \
         CREATE TABLE public.planted (ran_as text); GRANT INSERT ON public.planted TO PUBLIC; \
         CREATE SCHEMA ids AUTHORIZATION squatter; GRANT USAGE ON SCHEMA ids TO ids; \
         CREATE FUNCTION public.pg_advisory_xact_lock(integer) RETURNS void LANGUAGE sql \
         AS $$ INSERT INTO public.planted VALUES (current_user) $$; \
         CREATE FUNCTION ids.pg_advisory_xact_lock(integer) RETURNS void LANGUAGE sql \
         AS $$ INSERT INTO public.planted VALUES (current_user) $$",
    );
    let store = open(&url).unwrap();
    let c = claim_one(&store, "n");
    store.renew(&c, 5).unwrap();
    store.release(&c, 5).unwrap();
    assert_eq!(
        server.sql("postgres", "SELECT count(*) FROM public.planted"),
        "0",
        "a planted function ran"
    );
    assert_eq!(
        server.sql(
            "postgres",
            "SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = 'flakeid'"
        ),
        "ids"
    );
}

/// Tables made by hand without the primary keys the statements rely on, or unlogged,
/// are refused, naming each; so are tables someone made without `flakeid_schema`.
#[test]
fn tables_without_their_keys_or_unlogged_are_refused() {
    let _one = fleet::one_at_a_time();
    let Some(server) = Postgres::start("keys") else {
        return;
    };
    let url = server.url();
    let make = |schema: &str| {
        server.sql("postgres", &create_statements(schema, "flakeid"));
        format!("{url}&schema={schema}")
    };
    let no_key = make("nokey");
    server.sql(
        "postgres",
        "ALTER TABLE nokey.nodes DROP CONSTRAINT nodes_pkey; \
         ALTER TABLE nokey.line DROP CONSTRAINT line_pkey",
    );
    refused(
        &no_key,
        ClaimErrorKind::Corrupt,
        &[
            "nodes has no PRIMARY KEY (namespace, node)",
            "line has no PRIMARY KEY (place)",
        ],
    );
    let other_key = make("otherkey");
    server.sql(
        "postgres",
        "ALTER TABLE otherkey.nodes DROP CONSTRAINT nodes_pkey; \
         ALTER TABLE otherkey.nodes ADD PRIMARY KEY (namespace, node, token)",
    );
    refused(
        &other_key,
        ClaimErrorKind::Corrupt,
        &["nodes has no PRIMARY KEY (namespace, node)"],
    );
    let unlogged = make("unlogged");
    server.sql("postgres", "ALTER TABLE unlogged.nodes SET UNLOGGED");
    refused(&unlogged, ClaimErrorKind::Corrupt, &["nodes is unlogged"]);
    server.sql(
        "postgres",
        "CREATE SCHEMA partial; CREATE TABLE partial.nodes (namespace text)",
    );
    refused(
        &format!("{url}&schema=partial"),
        ClaimErrorKind::Corrupt,
        &["without flakeid_schema"],
    );
    let whole = open(&make("whole")).unwrap();
    assert!(ClaimStore::namespaces(&whole).unwrap().is_empty());
}

/// The `sql` blocks of the README, in order.
fn readme_sql() -> Vec<String> {
    let readme = include_str!("../README.md");
    let mut blocks = Vec::new();
    let mut block: Option<String> = None;
    for line in readme.lines() {
        match (&mut block, line.trim()) {
            (None, "```sql") => block = Some(String::new()),
            (Some(_), "```") => blocks.extend(block.take()),
            (Some(text), _) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// The README's statements, run as written from the first (the roles, the database) to
/// the last (the grants, in that database), make an installation the store claims on
/// with `owner=`, whose tables a role with `CREATE` on the database cannot write; the
/// README prints what `create_statements` and `grant_statements` give.
#[test]
fn the_readmes_statements_make_an_installation_no_other_role_can_take_over() {
    let _one = fleet::one_at_a_time();
    let blocks = readme_sql();
    let [cluster, database] = blocks.as_slice() else {
        panic!("the README has {} sql blocks, not 2", blocks.len());
    };
    assert!(
        database.contains(&format!(
            "{}\n{}",
            create_statements("flakeid", "flakeid_owner"),
            grant_statements("flakeid", "ids")
        )),
        "the README's statements are not create_statements and grant_statements: {database}"
    );
    let Some(server) = Postgres::start("readme") else {
        return;
    };
    // One at a time: CREATE DATABASE runs outside a transaction.
    for statement in cluster
        .split(";\n")
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        server.sql("postgres", statement);
    }
    // psql's \password, as the README says.
    server.sql("postgres", "ALTER ROLE ids PASSWORD 'ids'");
    server.sql("app", database);
    let pw = server.process.dir.join("ids.password");
    flakeid_fleet::write_secret(&pw, "ids");
    let url = format!(
        "postgres://ids@127.0.0.1:{}/app?owner=flakeid_owner&password-file={}&sslmode=disable",
        server.port,
        pw.display()
    );
    let store = open(&url).unwrap();
    let c = claim_one(&store, "readme");
    store.renew(&c, 9).unwrap();
    server.sql(
        "postgres",
        "CREATE ROLE squatter LOGIN; GRANT CREATE ON DATABASE app TO squatter",
    );
    let err = server
        .psql(
            "app",
            "SET ROLE squatter; UPDATE flakeid.nodes SET token = 0",
        )
        .unwrap_err();
    assert!(err.contains("permission denied"), "{err}");
    store.release(&c, 9).unwrap();
}

/// The kit's shared-database cases ([`flakeid_testkit::run_shared`]) on a real
/// PostgreSQL: the store connects as the superuser of the tests' cluster, and another
/// team's role (`squatter`, with `CREATE` on the database) makes the wrong states.
struct Shared<'a> {
    server: &'a Postgres,
}

impl flakeid_testkit::SharedDatabase for Shared<'_> {
    fn open(&self, schema: &str) -> Result<std::sync::Arc<dyn ClaimStore>, ClaimError> {
        let url = format!("{}&schema={schema}", self.server.url());
        Ok(std::sync::Arc::new(open(&url)?))
    }

    fn tamper(&self, schema: &str, tampering: flakeid_testkit::Tampering) -> bool {
        use flakeid_testkit::Tampering as T;
        let sql = match tampering {
            T::SquattedSchema => format!(
                "SET ROLE squatter; {} {}",
                create_statements(schema, "squatter"),
                grant_statements(schema, "flakeid")
            ),
            T::WriteGrant => format!("GRANT UPDATE ON {schema}.nodes TO squatter"),
            T::ColumnGrant => format!("GRANT UPDATE (reserved) ON {schema}.nodes TO squatter"),
            T::Trigger => format!(
                "CREATE FUNCTION {schema}.keep() RETURNS trigger LANGUAGE plpgsql AS \
                 $$ BEGIN NEW.reserved := OLD.reserved; RETURN NEW; END $$; \
                 CREATE TRIGGER keep BEFORE UPDATE ON {schema}.nodes \
                 FOR EACH ROW EXECUTE FUNCTION {schema}.keep()"
            ),
            T::Rule => {
                format!("CREATE RULE keep AS ON UPDATE TO {schema}.nodes DO INSTEAD NOTHING")
            }
            T::RowSecurity => format!("ALTER TABLE {schema}.nodes ENABLE ROW LEVEL SECURITY"),
            T::NoPrimaryKey => format!("ALTER TABLE {schema}.nodes DROP CONSTRAINT nodes_pkey"),
            T::Unlogged => format!("ALTER TABLE {schema}.nodes SET UNLOGGED"),
            _ => return false,
        };
        self.server.sql("postgres", &sql);
        true
    }
}

#[test]
fn the_postgres_store_passes_the_shared_database_cases() {
    let _one = fleet::one_at_a_time();
    let Some((server, _)) = two_teams("shared") else {
        return;
    };
    flakeid_testkit::run_shared(&Shared { server: &server }, "kit");
}
