//! The least a role needs on the store's tables: what the README, the refusals and the
//! connect check name.

use std::string::String;

/// The grants a role needs on the tables of `schema` (the README prints them).
pub fn grant_statements(schema: &str, role: &str) -> String {
    format!(
        "GRANT USAGE ON SCHEMA {schema} TO {role};
GRANT SELECT ON {schema}.flakeid_schema TO {role};
GRANT SELECT, INSERT ON {schema}.namespaces TO {role};
GRANT SELECT, INSERT, UPDATE ON {schema}.nodes TO {role};
GRANT SELECT, INSERT, UPDATE, DELETE ON {schema}.line TO {role};"
    )
}
