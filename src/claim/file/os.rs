//! What the file store asks of the operating system beyond its files: whether a user is a
//! member of a group (for `share=group`), what a file's kind is called, and an OS error as
//! a claim error with the fix that fits it.

use std::path::Path;
use std::string::{String, ToString};
use std::vec::Vec;

use rustix::fs::FileType;

use super::super::{ClaimError, Reason};

/// What kind of file a name is, as the store sees it.
pub(in crate::claim) fn kind_name(t: FileType) -> &'static str {
    match t {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO (named pipe)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "a file of an unknown kind",
    }
}

/// A state or lock file that is not a regular file: its id is skipped, never read (a FIFO
/// would block) and never written through.
pub(super) fn not_regular(path: &Path, t: FileType) -> ClaimError {
    ClaimError::Corrupt {
        path: path.display().to_string(),
        reason: format!(
            "it is {}, not a regular file: nothing this store writes is one, so someone made it by hand or planted it",
            kind_name(t)
        ).into(),
    }
}

/// Whether user `uid` is a member of group `gid`: its primary group in `/etc/passwd`, or
/// named in the group's line of `/etc/group`. A user or group these files do not list (a
/// directory service's) is not a member: the store fails closed.
pub(super) fn member_of(uid: u32, gid: u32) -> bool {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    member_in(&read("/etc/passwd"), &read("/etc/group"), uid, gid)
}

/// [`member_of`] over the text of `passwd` and `group`.
fn member_in(passwd: &str, group: &str, uid: u32, gid: u32) -> bool {
    // name:password:uid:gid:...
    let Some((name, primary)) = passwd.lines().find_map(|line| {
        let mut f = line.split(':');
        let name = f.next()?;
        let _ = f.next()?;
        (f.next()?.parse::<u32>().ok()? == uid).then_some((name, f.next()?.parse::<u32>().ok()))
    }) else {
        return false;
    };
    if primary == Some(gid) {
        return true;
    }
    // name:password:gid:member,member
    group.lines().any(|line| {
        let f: Vec<&str> = line.split(':').collect();
        f.len() == 4
            && f[2].parse::<u32>().ok() == Some(gid)
            && f[3].split(',').any(|m| m.trim() == name)
    })
}

/// What the file store found wrong at a path: an OS error (kept as the
/// [`Reason`]'s cause), or what it saw in words.
pub(in crate::claim) enum Found {
    /// An error of the operating system.
    Os(std::io::Error),
    /// What the store found, in words.
    Text(String),
}

impl From<std::io::Error> for Found {
    fn from(e: std::io::Error) -> Found {
        Found::Os(e)
    }
}

impl From<rustix::io::Errno> for Found {
    fn from(e: rustix::io::Errno) -> Found {
        Found::Os(e.into())
    }
}

impl From<String> for Found {
    fn from(text: String) -> Found {
        Found::Text(text)
    }
}

impl From<&str> for Found {
    fn from(text: &str) -> Found {
        Found::Text(text.into())
    }
}

/// A file system error at `path` (an OS error, or what the store found): what was found
/// and, for an OS error, the fix that fits it. The OS error is the claim error's
/// [`source`](std::error::Error::source).
pub(super) fn io_error(path: &Path, found: impl Into<Found>) -> ClaimError {
    let reason = match found.into() {
        Found::Os(e) => match e.raw_os_error().map(fix) {
            Some(fix) => Reason::caused_by(format!("{e}; {fix}"), e),
            None => Reason::from_error(e),
        },
        Found::Text(text) => Reason::new(text),
    };
    ClaimError::Io {
        path: path.display().to_string(),
        reason,
    }
}

/// What to do about the OS error `errno` at a path of the store.
fn fix(errno: i32) -> &'static str {
    match errno {
        // ENOENT
        2 => {
            "it is not there (moved or removed under this process, or never made): put it back, or give a directory that exists or that this process can create"
        }
        // EPERM, EACCES
        1 | 13 => {
            "this process's user may not use it: grant it (chown or chmod), or give a directory of its own"
        }
        // EROFS
        30 => "its file system is mounted read-only: give a directory on a writable one",
        // ENOSPC, EDQUOT
        28 | 122 => "the disk (or the user's quota) is full: free space there",
        // ENOTDIR
        20 => "a part of the path is not a directory: give the path of a directory",
        _ => {
            "the operating system's error says what is wrong there: fix that, or give another directory"
        }
    }
}

#[cfg(test)]
mod member_tests {
    use super::member_in;

    const PASSWD: &str = "root:x:0:0:root:/root:/bin/sh\nann:x:1000:1000::/home/ann:/bin/sh\nbob:x:1001:1001::/home/bob:/bin/sh\n";
    const GROUP: &str = "root:x:0:\nann:x:1000:\nbob:x:1001:\nids:x:2000:ann,carl\n";

    #[test]
    fn a_user_is_a_member_by_its_primary_group_or_the_groups_list() {
        assert!(member_in(PASSWD, GROUP, 1000, 1000), "primary group");
        assert!(member_in(PASSWD, GROUP, 1000, 2000), "listed");
        assert!(!member_in(PASSWD, GROUP, 1001, 2000), "bob is not in ids");
        assert!(!member_in(PASSWD, GROUP, 1001, 0));
        assert!(!member_in(PASSWD, GROUP, 4242, 2000), "an unknown user");
        assert!(!member_in("", "", 1000, 1000), "no files: fails closed");
    }
}

#[cfg(test)]
mod io_tests {
    use super::io_error;
    use std::path::Path;

    #[test]
    fn each_os_error_names_what_was_found_and_its_own_fix() {
        let text = |errno: i32| {
            io_error(Path::new("/s"), std::io::Error::from_raw_os_error(errno)).to_string()
        };
        assert!(text(2).contains("it is not there"), "{}", text(2));
        assert!(text(13).contains("may not use it"), "{}", text(13));
        assert!(text(30).contains("read-only"), "{}", text(30));
        assert!(text(28).contains("full"), "{}", text(28));
        for errno in [2, 13, 30, 28, 20] {
            assert!(
                !text(errno).contains("can create and write"),
                "{}",
                text(errno)
            );
        }
        let found = io_error(Path::new("/s"), "the lock is held").to_string();
        assert_eq!(found, "cannot use /s: the lock is held");
    }
}
