//! [`FileStore`]: claims of one host, held with exclusive OS file locks, reservations
//! written and fsynced to a state file per (namespace, node id).

use core::time::Duration;
use std::collections::HashMap;
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::string::String;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::vec::Vec;

use super::store::{ClaimRequest, Claimed, Repaired, Ticket, Waiter};
use super::{ClaimError, ClaimInfo, ClaimStore, NamespaceInfo, NodeState, check_namespace};
mod dir;
mod line;
pub(super) mod os;
mod records;
mod state;
use dir::{Dir, FileId, Trust};
use os::io_error as io_err;
use state::{State, read_state, write_state};

/// Claims on one host, with no coordinator: `DIR/NAMESPACE/node-N.lock`, held with an
/// exclusive OS lock (`flock`) while a process owns node N, and `DIR/NAMESPACE/node-N.state`,
/// which holds the last reservation and the holder's name; `DIR/NAMESPACE/layout` records
/// the layout of the namespace's IDs.
///
/// - Two processes (or two generators in one process) cannot hold one id: the second
///   takes the next free one, or fails with [`ClaimError::PoolFull`].
/// - A reservation is written to a temporary file, fsynced, renamed over the state file
///   and the directory fsynced, all before the fence lets the generator mint in it.
/// - Every write (a claim's, a renewal's, a release's) reads the state file, checks it and
///   writes it under an exclusive lock on the namespace's directory, so the check that
///   the claim is still this holder's and the write are one step for any other claimer.
///   The state carries a generation that each claim raises; a holder whose directory or
///   lock file was moved, removed or replaced, or whose generation is no longer the stored
///   one, gets [`ClaimError::NotOwner`] and writes nothing. A renewal stores the larger of
///   the stored reservation and its own (and writes the state again if it was removed
///   while the holder kept its lock).
/// - A state or lock file that cannot be read, or that is not a regular file (a FIFO, a
///   socket, a device, a link), is [`ClaimError::Corrupt`]: its id is skipped by claims
///   (the next free one is taken), listed as corrupt, and never overwritten except by
///   [`ClaimStore::repair`]. Nothing is opened in a way that can block.
/// - The OS drops the lock when the holder dies (`kill -9` included); the next holder reads
///   the state file and starts after its reservation, also on a clock set back across a
///   reboot (it waits, bounded, or fails with [`ClaimError::ClockBehind`]).
///
/// Who can touch the store: its files are its owner's alone (0600, directories 0700), or
/// its group's too with [`FileStore::shared_with_group`]. Every directory on the way to the
/// store must belong to root or to this process's user (with the group shared: to a
/// group of the process) and be writable by nobody else unless sticky (as `/tmp` is); the
/// store's and the namespaces' directories must be writable by nobody else at all, and are
/// never reached through a symbolic link. Anything else is refused
/// ([`ClaimError::Refused`]): whoever can move the store's files can make two holders mint
/// the same IDs. The directories are opened once per operation and everything under them is
/// reached through their descriptors, so a path swapped after the check changes nothing.
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
    held: Mutex<HashMap<u64, Arc<Held>>>,
    next_token: AtomicU64,
    /// This store's places in lines, by name.
    waiting: Mutex<HashMap<String, line::Waiting>>,
}

#[derive(Debug)]
struct Held {
    /// The open, locked lock file: the claim lives as long as this handle.
    _lock: File,
    /// What identifies the lock file locked.
    lock_id: FileId,
    /// The store's directory and the namespace's, as the claim found them.
    store: Dir,
    ns: Dir,
    node: u64,
    holder: String,
    /// The state's generation this claim wrote.
    generation: u64,
}

/// The longest a write waits for the namespace's directory lock.
const DIR_LOCK_BOUND: Duration = Duration::from_secs(5);

fn lock_name(node: u64) -> String {
    format!("node-{node}.lock")
}

fn state_name(node: u64) -> String {
    format!("node-{node}.state")
}

/// Tries to take the lock of `file`: whether this call now holds it.
fn try_lock(file: &File, path: &Path) -> Result<bool, ClaimError> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(TryLockError::WouldBlock) => Ok(false),
        Err(TryLockError::Error(e)) => Err(io_err(path, e)),
    }
}

impl FileStore {
    /// A store in `dir`, which is created (with the namespace's directory) at the first
    /// claim. Fails if `dir` exists and is not a directory; nothing is written here. A
    /// symbolic link is followed (at the claim) only if root or this process's user made
    /// it, in a directory nobody else may write to, as systemd's `DynamicUser` makes
    /// `/var/lib/NAME`; any other link is refused then.
    pub fn open(dir: impl AsRef<Path>) -> Result<FileStore, ClaimError> {
        let dir = dir.as_ref().to_path_buf();
        if let Ok(meta) = std::fs::symlink_metadata(&dir) {
            let meta = match meta.file_type().is_symlink() {
                true => std::fs::metadata(&dir).unwrap_or(meta),
                false => meta,
            };
            if !meta.is_dir() && !meta.file_type().is_symlink() {
                return Err(io_err(
                    &dir,
                    "it is not a directory: give the path of a directory (or of one to be made)",
                ));
            }
        }
        Ok(FileStore {
            dir,
            group: false,
            held: Mutex::default(),
            next_token: AtomicU64::new(1),
            waiting: Mutex::default(),
        })
    }

    /// Shares the store with the owner's group, told so explicitly (`file:DIR?share=group`):
    /// files created 0660 and directories 0770 (less the umask: a group that must write
    /// needs a umask such as 002), for holders that run as different users of one group.
    /// Directories that belong to, or may be written by, a group of this process are then
    /// accepted; one that others outside it may write to is still refused.
    pub fn shared_with_group(mut self) -> Self {
        self.group = true;
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn trust(&self) -> Trust {
        Trust::of_this_process(self.group)
    }

    /// The store's directory, checked (made, with `create`); `None` if it is missing.
    fn store_dir(&self, trust: &Trust, create: bool) -> Result<Option<Dir>, ClaimError> {
        Dir::open_store(&self.dir, trust, create)
    }

    /// The store's and `namespace`'s directories, checked and made if missing.
    fn namespace_dir(&self, namespace: &str, trust: &Trust) -> Result<(Dir, Dir), ClaimError> {
        check_namespace(namespace)?;
        let missing = || io_err(&self.dir, "the directory vanished while it was being made");
        let store = self.store_dir(trust, true)?.ok_or_else(missing)?;
        let ns = store.child(namespace, trust, true)?.ok_or_else(missing)?;
        Ok((store, ns))
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Held>>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn not_owner(claimed: &Claimed) -> ClaimError {
        ClaimError::NotOwner {
            namespace: claimed.namespace.clone(),
            node: claimed.node,
        }
    }

    /// Whether `h` is still the owner: its directories are where it found them and its
    /// lock file is still the one it locked.
    fn still_owns(h: &Held, namespace: &str) -> bool {
        h.store.still_there()
            && h.store.holds(namespace, &h.ns)
            && h.ns.id_of(&lock_name(h.node)) == Some(h.lock_id)
    }

    /// Writes the state of a claim this store holds, under the directory's lock, if it is
    /// still the owner ([`FileStore::still_owns`]) and the stored generation is its own
    /// (else [`ClaimError::NotOwner`], nothing written). A renewal (`released` false)
    /// stores the larger of the stored reservation and `reserved_until_ns`; a release
    /// stores `reserved_until_ns` (its caller minted nothing at or past it). A state file
    /// removed under a holder that kept its lock is written again: nobody else can have
    /// claimed the id.
    fn write_owned(
        &self,
        h: &Held,
        claimed: &Claimed,
        reserved_until_ns: u64,
        released: bool,
    ) -> Result<(), ClaimError> {
        let trust = self.trust();
        let _dir_lock = h.ns.lock(DIR_LOCK_BOUND)?;
        if !Self::still_owns(h, &claimed.namespace) {
            return Err(Self::not_owner(claimed));
        }
        let stored = match read_state(&h.ns, claimed.node, &trust)? {
            Some(s) if s.generation == h.generation && !s.released => s.reserved_until_ns,
            None => 0,
            Some(_) => return Err(Self::not_owner(claimed)),
        };
        let state = State {
            node: claimed.node,
            reserved_until_ns: if released {
                reserved_until_ns
            } else {
                reserved_until_ns.max(stored)
            },
            holder: h.holder.clone(),
            released,
            generation: h.generation,
        };
        write_state(&h.ns, &state, &trust)
    }

    /// A release by a holder that is no longer the owner leaves its final reservation
    /// where there is none (the state file was removed along with its lock), and writes
    /// nothing where there is one.
    fn leave_reservation(&self, h: &Held, claimed: &Claimed, reserved_until_ns: u64) {
        let trust = self.trust();
        let Ok(_dir_lock) = h.ns.lock(DIR_LOCK_BOUND) else {
            return;
        };
        if h.ns.id_of(&state_name(claimed.node)).is_none() {
            let state = State {
                node: claimed.node,
                reserved_until_ns,
                holder: h.holder.clone(),
                released: true,
                generation: h.generation,
            };
            let _ = write_state(&h.ns, &state, &trust);
        }
    }

    /// Node `node`'s lock file in `ns`, opened (made if missing) and locked by this call;
    /// `None` if another holds it. A lock file that is not a regular file is
    /// [`ClaimError::Corrupt`].
    fn lock_node(ns: &Dir, node: u64, trust: &Trust) -> Result<Option<(File, FileId)>, ClaimError> {
        let name = lock_name(node);
        let Some((file, id)) = ns.lock_file(&name, trust, true)? else {
            return Ok(None);
        };
        // Removed or replaced between our open and our lock: not a claim.
        if try_lock(&file, &ns.path_of(&name))? && ns.id_of(&name) == Some(id) {
            Ok(Some((file, id)))
        } else {
            Ok(None)
        }
    }

    /// Whether node `node` of `ns` is held now (probed: its lock taken and let go at once).
    /// `Err` for a lock file that is not a regular file.
    fn is_held(ns: &Dir, node: u64, trust: &Trust) -> Result<bool, ClaimError> {
        // A lock this process holds conflicts too: each open of a file locks on its own.
        let name = lock_name(node);
        match ns.lock_file(&name, trust, false)? {
            None => Ok(false),
            Some((file, _)) => Ok(!try_lock(&file, &ns.path_of(&name))?),
        }
    }
}

impl ClaimStore for FileStore {
    /// `NS/wait-SEQ.lock` per waiter, locked while it waits: served in the order they
    /// joined; a dead waiter's place is passed over at once.
    fn join_line(&self, namespace: &str, instance: &str) -> Result<Option<Ticket>, ClaimError> {
        self.join(namespace, instance).map(Some)
    }

    fn line(&self, namespace: &str) -> Result<Vec<Waiter>, ClaimError> {
        self.waiters(namespace)
    }

    fn stay_in_line(&self, ticket: &Ticket) -> Result<(), ClaimError> {
        self.still_waiting(ticket)
    }

    fn leave_line(&self, ticket: &Ticket) {
        self.leave(ticket);
    }

    fn url(&self) -> String {
        format!("file:{}", self.dir.display())
    }

    fn claim(&self, request: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        let trust = self.trust();
        let (store, ns) = self.namespace_dir(request.namespace, &trust)?;
        let (mut held, mut corrupt) = (0, Vec::new());
        for node in request.pool.clone() {
            let lock = match Self::lock_node(&ns, node, &trust) {
                Ok(Some(lock)) => lock,
                Ok(None) => {
                    held += 1;
                    continue;
                }
                // Skipped, and left as it is.
                Err(ClaimError::Corrupt { .. }) => {
                    corrupt.push(node);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let dir_lock = ns.lock(DIR_LOCK_BOUND)?;
            let previous = match read_state(&ns, node, &trust) {
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
            write_state(&ns, &state, &trust)?;
            drop(dir_lock);
            let (lock, lock_id) = lock;
            self.held().insert(
                token,
                Arc::new(Held {
                    _lock: lock,
                    lock_id,
                    store,
                    ns,
                    node,
                    holder: request.instance.into(),
                    generation,
                }),
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
            wanted: 1,
        })
    }

    fn renew(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError> {
        let h = self
            .held()
            .get(&claimed.token)
            .cloned()
            .ok_or_else(|| Self::not_owner(claimed))?;
        self.write_owned(&h, claimed, reserved_until_unix_ns, false)
    }

    fn release(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError> {
        let h = self
            .held()
            .get(&claimed.token)
            .cloned()
            .ok_or_else(|| Self::not_owner(claimed))?;
        let result = self.write_owned(&h, claimed, reserved_until_unix_ns, true);
        if matches!(result, Err(ClaimError::NotOwner { .. })) {
            self.leave_reservation(&h, claimed, reserved_until_unix_ns);
        }
        // The state is durable before the lock goes (with the last handle on the entry).
        self.held().remove(&claimed.token);
        result
    }

    fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        check_namespace(namespace)?;
        let trust = self.trust();
        let Some(store) = self.store_dir(&trust, false)? else {
            return Err(io_err(
                &self.dir,
                "the store's directory does not exist (a claim creates it)",
            ));
        };
        let Some(ns) = store.child(namespace, &trust, false)? else {
            return Ok(Vec::new());
        };
        let mut nodes: Vec<u64> = ns
            .entries()?
            .into_iter()
            .filter_map(|(name, _)| {
                let rest = name.strip_prefix("node-")?;
                let number = rest
                    .strip_suffix(".lock")
                    .or_else(|| rest.strip_suffix(".state"))?;
                number.parse().ok()
            })
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        let mut infos = Vec::with_capacity(nodes.len());
        for node in nodes {
            // A damaged entry is listed as such, with what is wrong, and the rest go on.
            let held = Self::is_held(&ns, node, &trust);
            let state = read_state(&ns, node, &trust);
            let problem = match (&held, &state) {
                (Err(e), _) | (_, Err(e)) => Some(e.to_string()),
                _ => None,
            };
            let state = state.ok().flatten();
            infos.push(ClaimInfo {
                node,
                state: match &state {
                    _ if problem.is_some() => NodeState::Corrupt,
                    _ if held.unwrap_or(false) => NodeState::Held,
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

    fn bind_layout(&self, namespace: &str, layout: &str) -> Result<(), ClaimError> {
        self.bind(namespace, layout)
    }

    fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
        self.all_namespaces()
    }

    fn repair(
        &self,
        namespace: &str,
        node: u64,
        reserved_until_unix_ns: u64,
    ) -> Result<Repaired, ClaimError> {
        self.repair_node(namespace, node, reserved_until_unix_ns)
    }
}
