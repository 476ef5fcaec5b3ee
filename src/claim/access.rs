//! [`Access`]: how a network store proves who it is and whom it trusts (TLS files, a user
//! and its password, a ZooKeeper read ACL), read from a store URL's query; [`Secret`], a
//! password that never prints.

use core::fmt;
use std::path::{Path, PathBuf};
use std::string::String;
use std::vec::Vec;

use super::{ClaimError, Reason};

/// A password: read from a file or the environment, never printed. Its `Debug` says
/// `Secret(<redacted>)`; it has no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// A secret from its text.
    pub fn new(text: impl Into<String>) -> Secret {
        Secret(text.into())
    }

    /// The secret in the file at `path`, without the line end that editors and `echo`
    /// leave. An error names the file, never its content.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Secret, ClaimError> {
        let path = path.as_ref();
        let io = |reason: Reason| ClaimError::Io {
            path: path.display().to_string(),
            reason,
        };
        let bytes = read_private(path)
            .map_err(|e| io(e.context("the password file (password-file=) cannot be used")))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| io("the password file is not UTF-8 text".into()))?;
        let text = text.trim_end_matches(['\n', '\r']);
        if text.is_empty() {
            return Err(io("the password file is empty".into()));
        }
        Ok(Secret(text.into()))
    }

    /// The secret's text, for the client that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// Who may read a ZooKeeper store's znodes when it authenticates (writes and deletes are
/// always its own identity's only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ReadAccess {
    /// Anyone may read (`flakeid claims` works without the password).
    #[default]
    Open,
    /// Only the store's own identity may read.
    Creator,
}

/// How a network store authenticates, and which servers it trusts. Read from the query of
/// the store's URL (see [`open`](super::open)); the password comes from `password-file=`
/// or [`Access::password`], never from the URL itself.
///
/// | query | etcd | ZooKeeper |
/// |---|---|---|
/// | `ca=FILE` | PEM CA bundle that signs the servers' certificates (TLS; implied by `etcds://`) | — |
/// | `cert=FILE`, `key=FILE` | the client's certificate and key (mutual TLS) | — |
/// | `user=NAME` | etcd's user/password auth; the token is refreshed when it expires | digest auth as `NAME` |
/// | `password-file=FILE` | the user's password | the digest password |
/// | `read=open\|creator` | — | who may read the znodes (default `open`); only this identity writes them |
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Access {
    /// TLS: the URL was `etcds://`, or a CA or client certificate was given.
    pub tls: bool,
    /// The CA bundle (PEM) that verifies the servers; without it, the system's roots.
    pub ca: Option<PathBuf>,
    /// The client certificate (PEM) for mutual TLS; needs `key`.
    pub cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    pub key: Option<PathBuf>,
    /// The user to authenticate as.
    pub user: Option<String>,
    /// The user's password.
    pub password: Option<Secret>,
    /// Who may read a ZooKeeper store's znodes.
    pub read: ReadAccess,
}

/// Reads a private key (PEM) for the TLS setup, naming it and its role in an error; a
/// file that other users may read, or that is not a regular file, is refused as a
/// password file is ([`Secret::from_file`]).
pub fn read_key(path: &Path, role: &str) -> Result<Vec<u8>, ClaimError> {
    read_private(path).map_err(|reason| ClaimError::Io {
        path: path.display().to_string(),
        reason: reason.context(format_args!("cannot use the {role}")),
    })
}

/// The bytes of a file that holds a secret, or why not. As OpenSSH and libpq do: the file
/// must be regular (opened without waiting, so that a FIFO is refused instead of blocking),
/// owned by this user or by root, and readable by nobody else (root's file may be
/// readable by its group: a group of services sharing one secret, as Kubernetes mounts
/// it with `defaultMode: 0440`).
fn read_private(path: &Path) -> Result<Vec<u8>, Reason> {
    use std::io::Read;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let mut file = options.open(path).map_err(Reason::from_error)?;
    let meta = file.metadata().map_err(Reason::from_error)?;
    #[cfg(not(unix))]
    if !meta.is_file() {
        return Err(Reason::new(
            "it is not a regular file: give the path of a file",
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let kind = rustix::fs::FileType::from_raw_mode(meta.mode());
        if kind != rustix::fs::FileType::RegularFile {
            return Err(Reason::new(format!(
                "it is {}, not a regular file: give the path of a file",
                super::file::os::kind_name(kind)
            )));
        }
        let me = rustix::process::geteuid().as_raw();
        let mode = meta.mode() & 0o777;
        let shown = path.display();
        if meta.uid() != me && meta.uid() != 0 {
            return Err(Reason::new(format!(
                "it is owned by uid {}, neither this user (uid {me}) nor root: another user could change it; chown {me} {shown}",
                meta.uid()
            )));
        }
        let others = if meta.uid() == 0 { 0o037 } else { 0o077 };
        if mode & others != 0 {
            return Err(Reason::new(format!(
                "its mode {mode:04o} lets other users read or change it: chmod 600 {shown} (or 640, owned by root, for a group of readers)"
            )));
        }
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(Reason::from_error)?;
    Ok(bytes)
}

/// Reads a PEM file for the TLS setup, naming it and its role in an error.
pub fn read_pem(path: &Path, role: &str) -> Result<Vec<u8>, ClaimError> {
    std::fs::read(path).map_err(|e| ClaimError::Io {
        path: path.display().to_string(),
        reason: Reason::from_error(e).context(format_args!("cannot read the {role}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_never_prints() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?}"), "Secret(<redacted>)");
        let a = Access {
            password: Some(s),
            user: Some("u".into()),
            ..Access::default()
        };
        assert!(!format!("{a:?}").contains("hunter2"));
    }

    /// A password file that cannot be read is named as the password file, with its path
    /// and why, so the message says which of a URL's files is missing.
    #[test]
    fn a_missing_password_file_is_named_as_the_password_file() {
        let dir = std::env::temp_dir().join(format!("flakeid-no-pw-{}", std::process::id()));
        let err = Secret::from_file(dir.join("pw")).unwrap_err().to_string();
        assert!(err.contains("the password file (password-file=)"), "{err}");
        assert!(err.contains(&dir.join("pw").display().to_string()), "{err}");
    }
}
