//! [`FileStore`]: claims of one host, held with exclusive OS file locks, reservations
//! written and fsynced to a state file per (namespace, node id).

use core::time::Duration;
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::string::String;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::vec::Vec;

use super::{ClaimError, ClaimInfo, ClaimRequest, ClaimStore, Claimed, NodeState};

/// Claims on one host, with no coordinator: `DIR/NAMESPACE/node-N.lock`, held with an
/// exclusive OS lock (`flock` on Unix) while a process owns node N, and
/// `DIR/NAMESPACE/node-N.state`, which holds the last reservation and the holder's name.
///
/// - Two processes (or two generators in one process) cannot hold one id: the second
///   takes the next free one, or fails with [`ClaimError::PoolFull`].
/// - A reservation is written to a temporary file, fsynced, renamed over the state file
///   and the directory fsynced, all before the fence lets the generator mint in it.
/// - Every write (a claim's, a renewal's, a release's) reads the state file, checks it and
///   writes it under an exclusive lock on the namespace's directory, so the check that
///   the claim is still this holder's and the write are one step for any other claimer.
///   The state carries a generation that each claim raises; a holder whose lock file
///   was removed or replaced, or whose generation is no longer the stored one, gets
///   [`ClaimError::NotOwner`] and writes nothing. A renewal stores the larger of the
///   stored reservation and its own.
/// - A state file that cannot be read is [`ClaimError::Corrupt`]: its id is skipped by
///   claims (the next free id is taken), listed as corrupt, and never overwritten.
/// - The OS drops the lock when the holder dies (`kill -9` included); the next holder reads
///   the state file and starts after its reservation, also on a clock set back across a
///   reboot (it waits, bounded, or fails with [`ClaimError::ClockBehind`]).
///
/// A process that is paused (`SIGSTOP`, a VM freeze) keeps its lock, so nobody takes its
/// id; its fence still stops it at the end of its window if the renewal cannot run.
///
/// [`ClaimStore::list`] probes each lock by taking it and letting go at once: a claim that
/// races the probe may skip that id and take the next free one.
#[derive(Debug)]
pub struct FileStore {
    dir: PathBuf,
    /// Shared with the owner's group ([`FileStore::shared_with_group`]).
    group: bool,
    held: Mutex<HashMap<u64, Held>>,
    next_token: AtomicU64,
}

#[derive(Debug)]
struct Held {
    /// The open, locked lock file: the claim lives as long as this handle.
    _lock: File,
    /// What identifies the lock file locked (device and inode on Unix).
    lock_id: FileId,
    lock_path: PathBuf,
    state_path: PathBuf,
    holder: String,
    /// The state's generation this claim wrote.
    generation: u64,
}

/// What the ownership check of a write needs of a [`Held`], copied out so that the map's
/// mutex is not held while waiting for the directory's lock.
struct Owned {
    lock_id: FileId,
    lock_path: PathBuf,
    state_path: PathBuf,
    holder: String,
    generation: u64,
}

/// What a state file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    node: u64,
    reserved_until_ns: u64,
    holder: String,
    released: bool,
    /// Raised by every claim: a renewal or release must find its own.
    generation: u64,
}

const MAGIC: &str = "flakeid-claim v1";

fn io_err(path: &Path, e: impl core::fmt::Display) -> ClaimError {
    ClaimError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

impl State {
    fn to_text(&self) -> String {
        // A holder name never spans lines.
        let holder: String = self
            .holder
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        format!(
            "{MAGIC}\nnode {}\nreserved_until_unix_ns {}\nholder {holder}\nstate {}\ngeneration {}\n",
            self.node,
            self.reserved_until_ns,
            if self.released { "released" } else { "held" },
            self.generation
        )
    }

    fn parse(text: &str, path: &Path, expected_node: u64) -> Result<State, ClaimError> {
        let corrupt = |reason: &str| ClaimError::Corrupt {
            path: path.display().to_string(),
            reason: reason.into(),
        };
        let mut lines = text.lines();
        if lines.next() != Some(MAGIC) {
            return Err(corrupt("its first line is not 'flakeid-claim v1'"));
        }
        let (mut node, mut reserved, mut holder, mut released) = (None, None, None, None);
        let mut generation = Some(0);
        for line in lines {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            match key {
                "node" => node = value.parse().ok(),
                "reserved_until_unix_ns" => reserved = value.parse().ok(),
                "holder" => holder = Some(value.to_string()),
                "state" => released = Some(value == "released"),
                "generation" => generation = value.parse().ok(),
                _ => {}
            }
        }
        match (node, reserved, generation) {
            (Some(node), _, _) if node != expected_node => Err(corrupt(&format!(
                "it names node {node}, not {expected_node}"
            ))),
            (Some(node), Some(reserved_until_ns), Some(generation)) => Ok(State {
                node,
                reserved_until_ns,
                holder: holder.unwrap_or_default(),
                released: released.unwrap_or(false),
                generation,
            }),
            _ => Err(corrupt(
                "a node, reserved_until_unix_ns or generation line is missing or not a number",
            )),
        }
    }
}

/// Files the store creates are its owner's alone (0600), directories too (0700); and no
/// file of the store is opened through a symbolic link: one planted in place of a state
/// or lock file (to make the holder write elsewhere, or read a reservation of someone
/// else's making) is refused.
/// With `group`, the owner's group may read and write them too (0660, 0770).
fn owner_only(options: &mut OpenOptions, group: bool) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mode = if group { 0o660 } else { 0o600 };
        options.mode(mode).custom_flags(libc::O_NOFOLLOW);
    }
    #[cfg(not(unix))]
    let _ = group;
    options
}

/// The permission bits of `dir` if users other than its owner (other than its owner's
/// group, with `group`) may write to it.
#[cfg(unix)]
fn writable_by_others(dir: &Path, group: bool) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(dir).ok()?.permissions().mode() & 0o7777;
    let others = if group { 0o002 } else { 0o022 };
    (mode & others != 0).then_some(mode)
}

#[cfg(not(unix))]
fn writable_by_others(_: &Path, _: bool) -> Option<u32> {
    None
}

/// Creates `dir` and its missing parents, owner-only (0700, less the umask), or with the
/// group too (0770, less the umask).
fn create_dirs(dir: &Path, group: bool) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(if group { 0o770 } else { 0o700 });
    }
    #[cfg(not(unix))]
    let _ = group;
    builder.create(dir)
}

/// An I/O error at `path`, saying so plainly when it was a symbolic link refused.
fn open_err(path: &Path, e: std::io::Error) -> ClaimError {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        return io_err(
            path,
            "it is a symbolic link, which the file store never follows (someone may have planted it): remove it, and check who can write to the directory",
        );
    }
    io_err(path, e)
}

/// Reads node `node`'s state file; `None` if there is none.
fn read_state(path: &Path, node: u64) -> Result<Option<State>, ClaimError> {
    let read = owner_only(OpenOptions::new().read(true), false)
        .open(path)
        .and_then(|mut f| {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut f, &mut bytes).map(|_| bytes)
        });
    match read {
        Ok(bytes) => {
            let text = String::from_utf8(bytes).map_err(|_| ClaimError::Corrupt {
                path: path.display().to_string(),
                reason: "it is not UTF-8 text".into(),
            })?;
            State::parse(&text, path, node).map(Some)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(open_err(path, e)),
    }
}

/// Replaces a state file durably: write a temporary file, fsync it, rename it over the
/// old one, fsync the directory. A crash leaves the old file or the new one, never half.
fn write_state(path: &Path, state: &State, group: bool) -> Result<(), ClaimError> {
    // Unique in this process (several stores may share a directory) and across processes.
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let n = WRITES.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_extension(format!("state.tmp-{}-{n}", std::process::id()));
    let result = (|| {
        // A new file (never one that exists, nor a link), owner-only; the rename then
        // replaces whatever is at `path`, a planted link included, and not its target.
        let mut f =
            owner_only(OpenOptions::new().write(true).create_new(true), group).open(&tmp)?;
        f.write_all(state.to_text().as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent() {
            File::open(dir)?.sync_all()?;
        }
        Ok::<(), std::io::Error>(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(|e| io_err(path, e))
}

/// What identifies a file: its device and inode on Unix; nothing elsewhere (where only
/// the generation guards a lock file that was replaced).
type FileId = (u64, u64);

#[cfg(unix)]
fn file_id(meta: &fs::Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn file_id(_: &fs::Metadata) -> FileId {
    (0, 0)
}

/// Whether the file at `path` is still the one identified by `id` (nobody removed or
/// replaced the lock file under the holder).
fn same_file(id: FileId, path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| file_id(&m) == id)
}

/// The exclusive lock on a namespace's directory that every state write is made under
/// (`flock` of the directory itself, which nobody replaces); let go when dropped.
fn lock_dir(dir: &Path) -> Result<File, ClaimError> {
    let file = File::open(dir).map_err(|e| io_err(dir, e))?;
    file.lock().map_err(|e| io_err(dir, e))?;
    Ok(file)
}

impl FileStore {
    /// A store in `dir`, which is created (with the namespace's directory) at the first
    /// claim. Fails if `dir` exists and is not a directory; nothing is written here.
    pub fn open(dir: impl AsRef<Path>) -> Result<FileStore, ClaimError> {
        let dir = dir.as_ref().to_path_buf();
        if dir.exists() && !dir.is_dir() {
            return Err(io_err(&dir, "it is not a directory"));
        }
        Ok(FileStore {
            dir,
            group: false,
            held: Mutex::default(),
            next_token: AtomicU64::new(1),
        })
    }

    /// Shares the store with the owner's group, told so explicitly (`file:DIR?share=group`):
    /// files created 0660 and directories 0770 (less the umask: a group that must write
    /// needs a umask such as 002), for holders that run as different users of one group.
    /// Only a directory others outside the group may write to is then a warning.
    pub fn shared_with_group(mut self) -> Self {
        self.group = true;
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn paths(&self, namespace: &str, node: u64) -> (PathBuf, PathBuf) {
        let dir = self.dir.join(namespace);
        (
            dir.join(format!("node-{node}.lock")),
            dir.join(format!("node-{node}.state")),
        )
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Held>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn not_owner(claimed: &Claimed) -> ClaimError {
        ClaimError::NotOwner {
            namespace: claimed.namespace.clone(),
            node: claimed.node,
        }
    }

    /// What a write of `claimed` checks, if this store holds it.
    fn owned(&self, claimed: &Claimed) -> Result<Owned, ClaimError> {
        let held = self.held();
        let h = held
            .get(&claimed.token)
            .ok_or_else(|| Self::not_owner(claimed))?;
        Ok(Owned {
            lock_id: h.lock_id,
            lock_path: h.lock_path.clone(),
            state_path: h.state_path.clone(),
            holder: h.holder.clone(),
            generation: h.generation,
        })
    }

    /// Writes the state of a claim this store holds, under the directory's lock, if its
    /// lock file is still the one locked and the stored generation still its own (else
    /// [`ClaimError::NotOwner`], nothing written). A renewal (`released` false) stores
    /// the larger of the stored reservation and `reserved_until_ns`; a release stores
    /// `reserved_until_ns` (its caller minted nothing at or past it).
    fn write_owned(
        o: &Owned,
        claimed: &Claimed,
        reserved_until_ns: u64,
        released: bool,
        group: bool,
    ) -> Result<(), ClaimError> {
        let dir = o.state_path.parent().unwrap_or(Path::new("."));
        let _dir_lock = lock_dir(dir)?;
        if !same_file(o.lock_id, &o.lock_path) {
            return Err(Self::not_owner(claimed));
        }
        let stored = read_state(&o.state_path, claimed.node)?;
        let stored = match stored {
            Some(s) if s.generation == o.generation && !s.released => s,
            _ => return Err(Self::not_owner(claimed)),
        };
        let state = State {
            node: claimed.node,
            reserved_until_ns: if released {
                reserved_until_ns
            } else {
                reserved_until_ns.max(stored.reserved_until_ns)
            },
            holder: o.holder.clone(),
            released,
            generation: o.generation,
        };
        write_state(&o.state_path, &state, group)
    }

    /// Opens and tries to lock node `node`'s lock file: `Some` if this call now holds it.
    fn try_lock(&self, path: &Path) -> Result<Option<File>, ClaimError> {
        let file = owner_only(
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
            self.group,
        )
        .open(path)
        .map_err(|e| open_err(path, e))?;
        let locked_id = file.metadata().map(|m| file_id(&m));
        match file.try_lock() {
            Ok(()) if locked_id.as_ref().is_ok_and(|&id| same_file(id, path)) => Ok(Some(file)),
            // Removed or replaced between our open and our lock: not a claim.
            Ok(()) => Ok(None),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(io_err(path, e)),
        }
    }
}

impl ClaimStore for FileStore {
    fn url(&self) -> String {
        format!("file:{}", self.dir.display())
    }

    fn claim(&self, request: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        let ns_dir = self.dir.join(request.namespace);
        create_dirs(&ns_dir, self.group).map_err(|e| io_err(&ns_dir, e))?;
        let (mut held, mut corrupt) = (0, Vec::new());
        for node in request.pool.clone() {
            let (lock_path, state_path) = self.paths(request.namespace, node);
            let Some(lock) = self.try_lock(&lock_path)? else {
                held += 1;
                continue;
            };
            let lock_id = lock.metadata().map_err(|e| io_err(&lock_path, e))?;
            let lock_id = file_id(&lock_id);
            let dir_lock = lock_dir(&ns_dir)?;
            let previous = match read_state(&state_path, node) {
                Ok(previous) => previous,
                // Skipped, and left as it is: the lock goes with `lock`.
                Err(ClaimError::Corrupt { .. }) => {
                    corrupt.push(node);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let not_before = previous.as_ref().map_or(0, |s| s.reserved_until_ns);
            let generation = previous.map_or(0, |s| s.generation).wrapping_add(1);
            let token = self.next_token.fetch_add(1, Ordering::Relaxed);
            let state = State {
                node,
                reserved_until_ns: not_before,
                holder: request.instance.into(),
                released: false,
                generation,
            };
            write_state(&state_path, &state, self.group)?;
            drop(dir_lock);
            self.held().insert(
                token,
                Held {
                    _lock: lock,
                    lock_id,
                    lock_path,
                    state_path,
                    holder: request.instance.into(),
                    generation,
                },
            );
            return Ok(Claimed {
                namespace: request.namespace.into(),
                node,
                not_before_unix_ns: not_before,
                fenced: true,
                token,
            });
        }
        Err(ClaimError::PoolFull {
            namespace: request.namespace.into(),
            pool: request.pool.clone(),
            held,
            waited: Duration::ZERO,
            corrupt,
        })
    }

    fn renew(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError> {
        let owned = self.owned(claimed)?;
        Self::write_owned(&owned, claimed, reserved_until_unix_ns, false, self.group)
    }

    fn release(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError> {
        let owned = self.owned(claimed)?;
        let result = Self::write_owned(&owned, claimed, reserved_until_unix_ns, true, self.group);
        // The state is durable before the lock goes (with the entry).
        self.held().remove(&claimed.token);
        result
    }

    /// The store's directory and its namespaces' directories that users other than the
    /// owner may write to: whoever can write there can replace a state file, and so make
    /// two holders mint the same IDs.
    fn warnings(&self) -> Vec<String> {
        let mut dirs = vec![self.dir.clone()];
        if let Ok(entries) = fs::read_dir(&self.dir) {
            dirs.extend(
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path()),
            );
        }
        dirs.into_iter()
            .filter_map(|dir| {
                let mode = writable_by_others(&dir, self.group)?;
                Some(format!(
                    "{} is writable by other users (mode {mode:o}): they could rewrite a reservation and make two holders mint the same IDs; chmod go-w it",
                    dir.display()
                ))
            })
            .collect()
    }

    fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        let ns_dir = self.dir.join(namespace);
        if !self.dir.is_dir() {
            return Err(io_err(
                &self.dir,
                "the store's directory does not exist (a claim creates it)",
            ));
        }
        let entries = match fs::read_dir(&ns_dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err(&ns_dir, e)),
        };
        let mut nodes: Vec<u64> = entries
            .filter_map(|e| {
                let name = e.ok()?.file_name();
                let name = name.to_str()?;
                name.strip_prefix("node-")?
                    .strip_suffix(".lock")?
                    .parse()
                    .ok()
            })
            .collect();
        nodes.sort_unstable();
        let mut infos = Vec::with_capacity(nodes.len());
        for node in nodes {
            let (lock_path, state_path) = self.paths(namespace, node);
            // Held by this process (a second lock on another handle would conflict too,
            // but needs no probe), else probe the lock: taken and let go at once.
            let mine = self.held().values().any(|h| h.lock_path == lock_path);
            let held = mine || self.try_lock(&lock_path)?.is_none();
            let (state, problem) = match read_state(&state_path, node) {
                Ok(state) => (state, None),
                Err(e @ ClaimError::Corrupt { .. }) => (None, Some(e.to_string())),
                Err(e) => return Err(e),
            };
            infos.push(ClaimInfo {
                node,
                state: match &state {
                    _ if problem.is_some() => NodeState::Corrupt,
                    _ if held => NodeState::Held,
                    Some(s) if s.released => NodeState::Released,
                    _ => NodeState::Expired,
                },
                holder: state.as_ref().map(|s| s.holder.clone()),
                reserved_until_unix_ns: state.map_or(0, |s| s.reserved_until_ns),
                problem,
            });
        }
        Ok(infos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_text_round_trips_and_bad_text_is_corrupt() {
        let s = State {
            node: 7,
            reserved_until_ns: 1_800_000_000_123_456_789,
            holder: "host:1\nnode 9".into(),
            released: true,
            generation: 12,
        };
        let p = Path::new("x.state");
        let back = State::parse(&s.to_text(), p, 7).unwrap();
        assert_eq!(back.generation, 12);
        assert!(matches!(
            State::parse(&s.to_text(), p, 8),
            Err(ClaimError::Corrupt { .. })
        ));
        assert_eq!(back.node, 7);
        assert_eq!(back.reserved_until_ns, s.reserved_until_ns);
        assert_eq!(back.holder, "host:1?node 9");
        assert!(back.released);
        assert!(matches!(
            State::parse("hello\n", p, 3),
            Err(ClaimError::Corrupt { .. })
        ));
        assert!(matches!(
            State::parse("flakeid-claim v1\nnode 3\n", p, 3),
            Err(ClaimError::Corrupt { .. })
        ));
    }
}
