//! The file store's directories: every directory on the way checked (who owns it, who may
//! write to it), the store's and the namespace's opened without following a link, and every
//! file reached through their descriptors, never through a path that could be swapped after
//! the check.

use core::time::Duration;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::string::String;
use std::sync::atomic::{AtomicU64, Ordering};
use std::vec::Vec;

use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags, Stat};
use rustix::io::Errno;

use super::super::ClaimError;
use super::os::{io_error as io_err, kind_name, not_regular};

/// What identifies a file: its device and inode.
pub(super) type FileId = (u64, u64);

/// Whom the store trusts with its directories: this process's user, root, and, told so
/// (`share=group`), this process's groups.
#[derive(Debug, Clone)]
pub(super) struct Trust {
    uid: u32,
    groups: Vec<u32>,
    /// `share=group`: the group may own (with another user) and write the directories.
    pub(super) group: bool,
}

impl Trust {
    pub(super) fn of_this_process(group: bool) -> Trust {
        let mut groups: Vec<u32> = rustix::process::getgroups()
            .unwrap_or_default()
            .into_iter()
            .map(|g| g.as_raw())
            .collect();
        groups.push(rustix::process::getegid().as_raw());
        Trust {
            uid: rustix::process::geteuid().as_raw(),
            groups,
            group,
        }
    }

    /// Files 0600 (0660 with the group), directories 0700 (0770), less the umask.
    fn file_mode(&self) -> Mode {
        Mode::from_raw_mode(if self.group { 0o660 } else { 0o600 })
    }

    fn dir_mode(&self) -> Mode {
        Mode::from_raw_mode(if self.group { 0o770 } else { 0o700 })
    }

    /// Why the directory `path` (`stat`) cannot be trusted, if it cannot: its owner is
    /// another user, or users other than the owner (and the shared group) may write to it.
    /// A directory on the way to the store (`on_the_way`) may be writable by all if it is
    /// sticky, as `/tmp` is: there only an entry's owner can move it.
    fn check(&self, path: &Path, stat: &Stat, on_the_way: bool) -> Result<(), ClaimError> {
        let (uid, gid) = (stat.st_uid, stat.st_gid);
        let mode = stat.st_mode & 0o7777;
        let shared = self.group && self.groups.contains(&gid);
        let refuse = |reason: String| ClaimError::Refused {
            store: format!("file:{}", path.display()),
            reason: reason.into(),
        };
        if uid != 0 && uid != self.uid && shared && !super::os::member_of(uid, gid) {
            // The group matches, but its owner is not in it: a setgid parent gives its group
            // to whatever anyone makes in it, and the owner could move the files aside.
            return Err(refuse(format!(
                "{} has the shared group {gid} but belongs to user {uid}, who is not a member of it (by /etc/passwd and /etc/group): its owner could move the store's files aside and take a live node id, so two holders would mint the same IDs; remove it and make it again as this user or a member of the group (chown it to one), or add user {uid} to group {gid}",
                path.display()
            )));
        }
        if uid != 0 && uid != self.uid && !shared {
            return Err(refuse(format!(
                "{} belongs to user {uid}, not to this process's user ({}) or root: its owner could move the store's files aside and take a live node id, so two holders would mint the same IDs; use a directory of your own (such as $XDG_STATE_HOME/flakeid or /var/lib/flakeid), or file:DIR?share=group if it belongs to a group of yours",
                path.display(),
                self.uid
            )));
        }
        let sticky = on_the_way && mode & 0o1000 != 0;
        if mode & 0o002 != 0 && !sticky {
            return Err(refuse(format!(
                "{} is writable by every user (mode {mode:o}): anyone could replace the store's files and make two holders mint the same IDs; chmod o-w it{}",
                path.display(),
                if on_the_way {
                    " (or chmod +t, as /tmp is)"
                } else {
                    ""
                }
            )));
        }
        if mode & 0o020 != 0 && !shared && !sticky {
            return Err(refuse(format!(
                "{} is writable by its group ({gid}) (mode {mode:o}), which this store does not share with: chmod g-w it, or give file:DIR?share=group if that group's users hold ids here",
                path.display()
            )));
        }
        Ok(())
    }
}

fn file_id(stat: &Stat) -> FileId {
    #[allow(clippy::useless_conversion)]
    (u64::from(stat.st_dev), u64::from(stat.st_ino))
}

/// A directory of the store, opened without following a link and checked; every file
/// under it is reached through its descriptor.
#[derive(Debug)]
pub(super) struct Dir {
    fd: OwnedFd,
    /// Where it was found (for messages, and to see whether it is still there).
    path: PathBuf,
    id: FileId,
}

/// The exclusive lock on a directory: `flock` of a descriptor of its own (a lock belongs
/// to an open file, so two threads sharing one descriptor would not exclude each other);
/// let go when dropped, with the descriptor.
pub(super) struct DirLock(#[allow(dead_code)] OwnedFd);

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

impl Dir {
    /// Opens `name` in `parent` (at `path`) as a directory, without following a link, and
    /// checks it; creates it first if missing and `create`. `None` if missing.
    fn open_at(
        parent: &OwnedFd,
        name: &str,
        path: PathBuf,
        trust: &Trust,
        create: bool,
        on_the_way: bool,
    ) -> Result<Option<Dir>, ClaimError> {
        let fd = loop {
            match rustix::fs::openat(parent, name, DIR_FLAGS, Mode::empty()) {
                Ok(fd) => break fd,
                Err(Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(parent, name, trust.dir_mode()) {
                        Ok(()) | Err(Errno::EXIST) => continue,
                        Err(e) => return Err(io_err(&path, e)),
                    }
                }
                Err(Errno::NOENT) => return Ok(None),
                Err(Errno::LOOP) | Err(Errno::NOTDIR) => {
                    let found = rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW)
                        .map(|s| FileType::from_raw_mode(s.st_mode));
                    if found != Ok(FileType::Symlink) {
                        let found = found.map_or("not a directory", kind_name);
                        return Err(io_err(&path, format!("it is {found}, not a directory")));
                    }
                    return Err(ClaimError::Refused {
                        store: format!("file:{}", path.display()),
                        reason: format!(
                            "{} is a symbolic link: the store never follows a link to its directories (someone may have planted it to take the store's files); remove it, and check who can write to {}",
                            path.display(),
                            path.parent().unwrap_or(Path::new("/")).display()
                        ).into(),
                    });
                }
                Err(e) => return Err(io_err(&path, e)),
            }
        };
        let stat = rustix::fs::fstat(&fd).map_err(|e| io_err(&path, e))?;
        trust.check(&path, &stat, on_the_way)?;
        Ok(Some(Dir {
            fd,
            id: file_id(&stat),
            path,
        }))
    }

    /// The store's directory at `path`: the directories on the way (the user's own links
    /// among them resolved) each checked, the last one opened without following a link and
    /// checked strictly (nobody else may write to it); if it is a link of root or this
    /// user, its target, found the same way. With `create`, missing directories
    /// are made (owner-only, or with the group); without, `None` if it is missing.
    pub(super) fn open_store(
        path: &Path,
        trust: &Trust,
        create: bool,
    ) -> Result<Option<Dir>, ClaimError> {
        Dir::open_store_at(path, trust, create, 0)
    }

    /// [`open_store`](Dir::open_store), `depth` trusted links into the way.
    fn open_store_at(
        path: &Path,
        trust: &Trust,
        create: bool,
        depth: u32,
    ) -> Result<Option<Dir>, ClaimError> {
        let absolute = std::path::absolute(path).map_err(|e| io_err(path, e))?;
        let (Some(parent), Some(name)) = (absolute.parent(), absolute.file_name()) else {
            return Err(io_err(path, "give a directory below /"));
        };
        let name = name
            .to_str()
            .ok_or_else(|| io_err(path, "the directory's name is not UTF-8"))?;
        // The longest part of the way that exists, with its links resolved (the user's
        // choice); the rest is to be made.
        let mut existing = parent.to_path_buf();
        let mut missing: Vec<String> = Vec::new();
        let resolved = loop {
            match std::fs::canonicalize(&existing) {
                Ok(resolved) => break resolved,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let Some(last) = existing.file_name().and_then(|n| n.to_str()) else {
                        return Err(io_err(&existing, e));
                    };
                    missing.push(last.into());
                    if !existing.pop() {
                        return Err(io_err(&existing, e));
                    }
                }
                Err(e) => return Err(io_err(&existing, e)),
            }
        };
        if missing.iter().any(|m| m == ".." || m == ".") {
            return Err(io_err(
                path,
                "a missing directory on the way is '.' or '..'",
            ));
        }
        let root = rustix::fs::open("/", DIR_FLAGS, Mode::empty()).map_err(|e| io_err(path, e))?;
        let mut at = Dir {
            id: file_id(&rustix::fs::fstat(&root).map_err(|e| io_err(path, e))?),
            fd: root,
            path: PathBuf::from("/"),
        };
        let components: Vec<String> = resolved
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                _ => None,
            })
            .chain(missing.into_iter().rev())
            .collect();
        for part in &components {
            let here = at.path.join(part);
            match Dir::open_at(&at.fd, part, here, trust, create, true)? {
                Some(next) => at = next,
                None => return Ok(None),
            }
        }
        let here = at.path.join(name);
        let link = rustix::fs::statat(&at.fd, name, AtFlags::SYMLINK_NOFOLLOW)
            .ok()
            .filter(|s| FileType::from_raw_mode(s.st_mode) == FileType::Symlink);
        match link {
            // A link only root or this user could have made (its directory is checked
            // above: nobody else may write to it), as systemd's `DynamicUser` makes
            // /var/lib/NAME -> private/NAME: followed, and its target checked the same way.
            Some(stat) if (stat.st_uid == 0 || stat.st_uid == trust.uid) && depth < 8 => {
                let target = rustix::fs::readlinkat(&at.fd, name, Vec::new())
                    .map_err(|e| io_err(&here, e))?;
                let target = at.path.join(target.to_string_lossy().as_ref());
                Dir::open_store_at(&target, trust, create, depth + 1)
            }
            Some(stat) => Err(ClaimError::Refused {
                store: format!("file:{}", here.display()),
                reason: format!(
                    "{} is a symbolic link of user {} (or one of too many in a row): the store follows only a link of root or this process's user ({}) to its directory, as someone may have planted it to take the store's files; remove it, and check who can write to {}",
                    here.display(),
                    stat.st_uid,
                    trust.uid,
                    at.path.display()
                ).into(),
            }),
            None => Dir::open_at(&at.fd, name, here, trust, create, false),
        }
    }

    /// The directory `name` in this one (a namespace's), opened without following a link
    /// and checked strictly; made if missing and `create`.
    pub(super) fn child(
        &self,
        name: &str,
        trust: &Trust,
        create: bool,
    ) -> Result<Option<Dir>, ClaimError> {
        Dir::open_at(&self.fd, name, self.path.join(name), trust, create, false)
    }

    /// The path of `name` in it, for messages.
    pub(super) fn path_of(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Whether `name` in this directory is still the directory `dir` (nobody moved, removed
    /// or replaced it).
    pub(super) fn holds(&self, name: &str, dir: &Dir) -> bool {
        self.id_of(name) == Some(dir.id)
    }

    /// Whether the path this directory was found at still leads to it.
    pub(super) fn still_there(&self) -> bool {
        std::fs::symlink_metadata(&self.path).is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            (m.dev(), m.ino()) == self.id
        })
    }

    /// What `name` is (not following a link), if it exists.
    fn stat_of(&self, name: &str) -> Result<Option<Stat>, ClaimError> {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(stat)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(io_err(&self.path_of(name), e)),
        }
    }

    /// The identity of `name`, if it exists.
    pub(super) fn id_of(&self, name: &str) -> Option<FileId> {
        self.stat_of(name).ok().flatten().map(|s| file_id(&s))
    }

    /// Opens the regular file `name` (creating it with `create`), without following a
    /// link and without blocking: anything but a regular file is
    /// [`ClaimError::Corrupt`], found by its kind before it is opened and checked again on
    /// the open descriptor. `None` if it is missing (and not to be created).
    fn open_regular(
        &self,
        name: &str,
        flags: OFlags,
        trust: &Trust,
    ) -> Result<Option<(File, FileId)>, ClaimError> {
        let path = self.path_of(name);
        if let Some(stat) = self.stat_of(name)? {
            let t = FileType::from_raw_mode(stat.st_mode);
            if t != FileType::RegularFile {
                return Err(not_regular(&path, t));
            }
        }
        let flags = flags | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&self.fd, name, flags, trust.file_mode()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP) => return Err(not_regular(&path, FileType::Symlink)),
            Err(Errno::NXIO) => return Err(not_regular(&path, FileType::Socket)),
            Err(e) => return Err(io_err(&path, e)),
        };
        let stat = rustix::fs::fstat(&fd).map_err(|e| io_err(&path, e))?;
        let t = FileType::from_raw_mode(stat.st_mode);
        if t != FileType::RegularFile {
            return Err(not_regular(&path, t));
        }
        Ok(Some((File::from(fd), file_id(&stat))))
    }

    /// A node id's lock file, opened (made if missing) for locking, and its identity.
    pub(super) fn lock_file(
        &self,
        name: &str,
        trust: &Trust,
        create: bool,
    ) -> Result<Option<(File, FileId)>, ClaimError> {
        let flags = if create {
            OFlags::RDWR | OFlags::CREATE
        } else {
            OFlags::RDONLY
        };
        self.open_regular(name, flags, trust)
    }

    /// The bytes of the regular file `name`, or `None` if there is none.
    pub(super) fn read(&self, name: &str, trust: &Trust) -> Result<Option<Vec<u8>>, ClaimError> {
        let Some((mut file, _)) = self.open_regular(name, OFlags::RDONLY, trust)? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| io_err(&self.path_of(name), e))?;
        Ok(Some(bytes))
    }

    /// Replaces `name` durably: a new temporary file (never one that exists, nor a link)
    /// written and fsynced, renamed over `name` (replacing whatever is there, a planted
    /// link included, and not its target), the directory fsynced. A crash leaves the old
    /// file or the new one, never half.
    pub(super) fn replace(
        &self,
        name: &str,
        bytes: &[u8],
        trust: &Trust,
    ) -> Result<(), ClaimError> {
        // Unique in this process (several stores may share a directory) and across processes.
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let n = WRITES.fetch_add(1, Ordering::Relaxed);
        let tmp = format!("{name}.tmp-{}-{n}", std::process::id());
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let result = (|| {
            let fd = rustix::fs::openat(&self.fd, tmp.as_str(), flags, trust.file_mode())?;
            let mut file = File::from(fd);
            file.write_all(bytes)?;
            file.sync_all()?;
            rustix::fs::renameat(&self.fd, tmp.as_str(), &self.fd, name)?;
            rustix::fs::fsync(&self.fd)?;
            Ok::<(), std::io::Error>(())
        })();
        if result.is_err() {
            let _ = rustix::fs::unlinkat(&self.fd, tmp.as_str(), AtFlags::empty());
        }
        result.map_err(|e| io_err(&self.path_of(name), e))
    }

    /// Removes `name` (a file that is not regular, by a repair).
    pub(super) fn remove(&self, name: &str) -> Result<(), ClaimError> {
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(io_err(&self.path_of(name), e)),
        }
    }

    /// The names in the directory, with whether each is a directory (not following links).
    pub(super) fn entries(&self) -> Result<Vec<(String, bool)>, ClaimError> {
        let dir = rustix::fs::Dir::read_from(&self.fd).map_err(|e| io_err(&self.path, e))?;
        let mut names = Vec::new();
        for entry in dir {
            let entry = entry.map_err(|e| io_err(&self.path, e))?;
            let Ok(name) = entry.file_name().to_str() else {
                continue;
            };
            if name == "." || name == ".." {
                continue;
            }
            let is_dir = match entry.file_type() {
                FileType::Unknown => self
                    .stat_of(name)?
                    .is_some_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Directory),
                t => t == FileType::Directory,
            };
            names.push((String::from(name), is_dir));
        }
        Ok(names)
    }

    /// The exclusive lock on this directory that every state write is made under, waited
    /// for at most `bound`: a holder of it that hangs (a process stopped in the middle of
    /// a write) makes the caller fail rather than wait without end.
    pub(super) fn lock(&self, bound: Duration) -> Result<DirLock, ClaimError> {
        let own = rustix::fs::openat(&self.fd, ".", DIR_FLAGS, Mode::empty())
            .map_err(|e| io_err(&self.path, e))?;
        let started = std::time::Instant::now();
        let mut nap = Duration::from_micros(200);
        loop {
            match rustix::fs::flock(&own, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(DirLock(own)),
                Err(Errno::WOULDBLOCK) if started.elapsed() < bound => {
                    std::thread::sleep(nap);
                    nap = (nap * 2).min(Duration::from_millis(10));
                }
                Err(Errno::WOULDBLOCK) => {
                    return Err(io_err(
                        &self.path,
                        format!(
                            "another process has held the directory's lock for more than {bound:?} (one stopped in the middle of a write?); find it with `fuser -v {}`",
                            self.path.display()
                        ),
                    ));
                }
                Err(e) => return Err(io_err(&self.path, e)),
            }
        }
    }
}
