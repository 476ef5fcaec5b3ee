//! A namespace's layout file, the list of namespaces, and the repair of a node id's state.

use super::*;

const LAYOUT_MAGIC: &str = "flakeid-namespace v1";
/// The file of a namespace's directory that records its layout.
const LAYOUT_FILE: &str = "layout";

/// What a namespace's layout file says, or why it cannot be read.
fn parse_layout(bytes: &[u8], path: &Path) -> Result<String, ClaimError> {
    let corrupt = |reason: &str| ClaimError::Corrupt {
        path: path.display().to_string(),
        reason: reason.into(),
    };
    let text = core::str::from_utf8(bytes).map_err(|_| corrupt("it is not UTF-8 text"))?;
    let mut lines = text.lines();
    if lines.next() != Some(LAYOUT_MAGIC) {
        return Err(corrupt("its first line is not 'flakeid-namespace v1'"));
    }
    lines
        .find_map(|l| l.strip_prefix("layout "))
        .filter(|l| !l.is_empty())
        .map(String::from)
        .ok_or_else(|| corrupt("it has no layout line"))
}

impl FileStore {
    /// [`ClaimStore::bind_layout`]: `NS/layout`, written under the namespace's lock if it
    /// is missing.
    pub(super) fn bind(&self, namespace: &str, layout: &str) -> Result<(), ClaimError> {
        let trust = self.trust();
        let (_, ns) = self.namespace_dir(namespace, &trust)?;
        let _dir_lock = ns.lock(DIR_LOCK_BOUND)?;
        let path = ns.path_of(LAYOUT_FILE);
        match ns.read(LAYOUT_FILE, &trust)? {
            Some(bytes) => {
                let recorded = parse_layout(&bytes, &path)?;
                crate::claim::store::same_layout(namespace, &recorded, layout)
            }
            None => ns.replace(
                LAYOUT_FILE,
                format!("{LAYOUT_MAGIC}\nlayout {layout}\n").as_bytes(),
                &trust,
            ),
        }
    }

    /// [`ClaimStore::namespaces`]: the directories of the store that name a namespace.
    pub(super) fn all_namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
        let trust = self.trust();
        let Some(store) = self.store_dir(&trust, false)? else {
            return Err(io_err(
                &self.dir,
                "the store's directory does not exist (a claim creates it)",
            ));
        };
        let mut names: Vec<String> = store
            .entries()?
            .into_iter()
            .filter(|(name, is_dir)| *is_dir && check_namespace(name).is_ok())
            .map(|(name, _)| name)
            .collect();
        names.sort_unstable();
        Ok(names
            .into_iter()
            .map(|namespace| {
                let layout = store.child(&namespace, &trust, false).and_then(|ns| {
                    let Some(ns) = ns else { return Ok(None) };
                    let path = ns.path_of(LAYOUT_FILE);
                    ns.read(LAYOUT_FILE, &trust)?
                        .map(|bytes| parse_layout(&bytes, &path))
                        .transpose()
                });
                match layout {
                    Ok(layout) => NamespaceInfo {
                        namespace,
                        layout,
                        problem: None,
                    },
                    Err(e) => NamespaceInfo {
                        namespace,
                        layout: None,
                        problem: Some(e.to_string()),
                    },
                }
            })
            .collect())
    }

    /// [`ClaimStore::repair`]: under the namespace's lock and the node's (which a live
    /// holder would hold), the state replaced by a released one past what it held.
    pub(super) fn repair_node(
        &self,
        namespace: &str,
        node: u64,
        reserved_until_unix_ns: u64,
    ) -> Result<Repaired, ClaimError> {
        let trust = self.trust();
        let (_, ns) = self.namespace_dir(namespace, &trust)?;
        let _dir_lock = ns.lock(DIR_LOCK_BOUND)?;
        // A lock file that is not a regular file can be held by nobody: it goes.
        let lock = match Self::lock_node(&ns, node, &trust) {
            Err(ClaimError::Corrupt { .. }) => {
                ns.remove(&lock_name(node))?;
                Self::lock_node(&ns, node, &trust)?
            }
            other => other?,
        };
        // Held while the repair writes: no claim of the id comes between. (A lock this
        // process holds conflicts too: each open of a file locks on its own.)
        let Some(_lock) = lock else {
            return Err(ClaimError::NodeHeld {
                namespace: namespace.into(),
                node,
            });
        };
        let stored = read_state(&ns, node, &trust).ok().flatten();
        let repaired = Repaired {
            previous_unix_ns: stored.as_ref().map(|s| s.reserved_until_ns),
            reserved_until_unix_ns: stored
                .as_ref()
                .map_or(0, |s| s.reserved_until_ns)
                .max(reserved_until_unix_ns),
        };
        // The rename replaces whatever is there: damaged text, a FIFO, a link.
        let state = State {
            node,
            reserved_until_ns: repaired.reserved_until_unix_ns,
            holder: "repaired".into(),
            released: true,
            generation: stored.map_or(0, |s| s.generation).wrapping_add(1),
        };
        write_state(&ns, &state, &trust)?;
        Ok(repaired)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_records_parse_or_are_corrupt() {
        let p = Path::new("layout");
        assert_eq!(
            parse_layout(b"flakeid-namespace v1\nlayout time=41,seq=12\n", p).unwrap(),
            "time=41,seq=12"
        );
        for bad in [
            &b""[..],
            b"flakeid-namespace v1\n",
            b"x\nlayout a\n",
            b"\xff",
        ] {
            assert!(
                matches!(parse_layout(bad, p), Err(ClaimError::Corrupt { .. })),
                "{bad:?}"
            );
        }
    }
}
