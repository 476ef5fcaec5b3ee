//! The checks of the names a claim is made under: [`check_namespace`] and
//! [`default_instance`]. Below every store that takes a namespace.

use std::string::String;

use super::{ClaimError, static_node};

/// Checks a namespace: 1 to 128 of `A-Z a-z 0-9 . _ -`, not `.` or `..` (it names a
/// directory or a key prefix in every store).
pub fn check_namespace(namespace: &str) -> Result<(), ClaimError> {
    let bad = |reason: &'static str| ClaimError::BadNamespace {
        namespace: namespace.into(),
        reason,
    };
    if namespace.is_empty() {
        return Err(bad("it is empty"));
    }
    if namespace.len() > 128 {
        return Err(bad("it is longer than 128 bytes"));
    }
    if namespace == "." || namespace == ".." {
        return Err(bad("it is a path component (. or ..)"));
    }
    if namespace.contains('/') {
        return Err(bad("it contains '/'"));
    }
    if namespace.contains('\0') {
        return Err(bad("it contains a NUL byte"));
    }
    if !namespace
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err(bad(
            "it has a character other than letters, digits, '.', '_' and '-'",
        ));
    }
    Ok(())
}

/// The default instance name: `host:pid`.
pub fn default_instance() -> String {
    format!("{}:{}", static_node::host_name(), std::process::id())
}
