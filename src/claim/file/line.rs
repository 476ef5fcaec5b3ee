//! The line of claimants waiting for a free id of a namespace: `NS/wait-SEQ.lock` per
//! waiter, holding its instance name and locked (`flock`) by it while it waits; numbered
//! under the namespace's directory lock, so served in the order the waiters joined. The
//! OS drops a dead waiter's lock at once, and its place is passed over (and removed by
//! the next to join). A waiter touches its place each time it looks at the line; one not
//! touched for [`STALE_PLACE`] (a waiter stopped by `SIGSTOP`, which keeps its lock) is
//! passed over too, and its waiter, once it runs again, joins at the back.

use std::io::Write;

use super::*;

/// How long a place in the line lasts without its waiter looking at the line.
const STALE_PLACE: Duration = Duration::from_secs(5);

/// Whether `file` was touched within [`STALE_PLACE`] (a clock set back counts as fresh).
fn fresh(file: &File) -> bool {
    file.metadata()
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().map_or(true, |age| age < STALE_PLACE))
}

fn wait_name(seq: u64) -> String {
    format!("wait-{seq:020}.lock")
}

fn wait_seq(name: &str) -> Option<u64> {
    name.strip_prefix("wait-")?
        .strip_suffix(".lock")?
        .parse()
        .ok()
}

/// This store's place in a line: the open, locked file (the place lives as long as it
/// does), what identifies it, and the namespace's directory it is in.
#[derive(Debug)]
pub(super) struct Waiting {
    file: File,
    id: FileId,
    ns: Dir,
}

impl FileStore {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// [`ClaimStore::join_line`]: under the namespace's directory lock, the places of
    /// dead waiters removed and a new one made after the last, locked, the instance name
    /// written in it.
    pub(super) fn join(&self, namespace: &str, instance: &str) -> Result<Ticket, ClaimError> {
        let trust = self.trust();
        let (_store, ns) = self.namespace_dir(namespace, &trust)?;
        let dir_lock = ns.lock(DIR_LOCK_BOUND)?;
        let mut last = 0;
        for (name, _) in ns.entries()? {
            let Some(seq) = wait_seq(&name) else { continue };
            match ns.lock_file(&name, &trust, false) {
                Ok(Some((file, _))) if try_lock(&file, &ns.path_of(&name))? => {
                    let _ = ns.remove(&name);
                }
                _ => last = last.max(seq),
            }
        }
        let name = wait_name(last + 1);
        let path = ns.path_of(&name);
        let (mut file, id) = ns
            .lock_file(&name, &trust, true)?
            .ok_or_else(|| io_err(&path, "the file vanished as it was made"))?;
        if !try_lock(&file, &path)? {
            return Err(io_err(
                &path,
                "another process locked the file as it was made",
            ));
        }
        file.write_all(instance.as_bytes())
            .map_err(|e| io_err(&path, e))?;
        drop(dir_lock);
        self.waiting()
            .insert(name.clone(), Waiting { file, id, ns });
        Ok(Ticket {
            namespace: namespace.into(),
            key: name,
        })
    }

    /// [`ClaimStore::line`]: the places whose lock is held (a live waiter's), in order.
    /// Anything else there (a place whose waiter died, a file that is not regular) is no
    /// waiter.
    pub(super) fn waiters(&self, namespace: &str) -> Result<Vec<Waiter>, ClaimError> {
        check_namespace(namespace)?;
        let trust = self.trust();
        let Some(store) = self.store_dir(&trust, false)? else {
            return Ok(Vec::new());
        };
        let Some(ns) = store.child(namespace, &trust, false)? else {
            return Ok(Vec::new());
        };
        let mut places: Vec<(u64, String)> = ns
            .entries()?
            .into_iter()
            .filter_map(|(name, _)| Some((wait_seq(&name)?, name)))
            .collect();
        places.sort_unstable();
        let mut line = Vec::new();
        for (_, name) in places {
            let live = match ns.lock_file(&name, &trust, false) {
                Ok(Some((file, _))) => !try_lock(&file, &ns.path_of(&name))? && fresh(&file),
                Ok(None) | Err(ClaimError::Corrupt { .. }) => false,
                Err(e) => return Err(e),
            };
            if !live {
                continue;
            }
            let instance = match ns.read(&name, &trust) {
                Ok(Some(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
                Ok(None) | Err(ClaimError::Corrupt { .. }) => continue,
                Err(e) => return Err(e),
            };
            line.push(Waiter {
                key: name,
                instance,
            });
        }
        Ok(line)
    }

    /// [`ClaimStore::stay_in_line`]: the place is still the file this store made, in the
    /// directory it made it in, and not stale: then it is touched. [`ClaimError::NotOwner`]
    /// if it was moved or removed, or went stale while this waiter did not run.
    pub(super) fn still_waiting(&self, ticket: &Ticket) -> Result<(), ClaimError> {
        let kept = {
            let waiting = self.waiting();
            match waiting.get(&ticket.key) {
                Some(w) if w.ns.still_there() && w.ns.id_of(&ticket.key) == Some(w.id) => {
                    fresh(&w.file) && w.file.set_modified(std::time::SystemTime::now()).is_ok()
                }
                _ => false,
            }
        };
        if kept {
            return Ok(());
        }
        self.leave(ticket);
        Err(ClaimError::NotOwner {
            namespace: ticket.namespace.clone(),
            node: 0,
        })
    }

    /// [`ClaimStore::leave_line`]: removes the place and lets go of its lock.
    pub(super) fn leave(&self, ticket: &Ticket) {
        let left = self.waiting().remove(&ticket.key);
        if let Some(w) = left
            && w.ns.id_of(&ticket.key) == Some(w.id)
        {
            let _ = w.ns.remove(&ticket.key);
        }
    }
}
