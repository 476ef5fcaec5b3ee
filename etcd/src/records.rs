//! A namespace's layout key, the list of namespaces, and the repair of a reservation.

use super::*;

impl EtcdStore {
    /// [`ClaimStore::bind_layout`]: `PREFIX/NS/layout`, put if it has no revision yet, else
    /// read and compared.
    pub(super) fn bind_layout(&self, namespace: &str, layout: &str) -> Result<(), ClaimError> {
        let key = self.keys(namespace).layout();
        let (url, ns, layout) = (
            self.remote.url.clone(),
            String::from(namespace),
            String::from(layout),
        );
        self.run(move |mut client| {
            let (url, key, ns, layout) = (url.clone(), key.clone(), ns.clone(), layout.clone());
            async move {
                let e = |e: etcd_client::Error| etcd_error(&url, e);
                let txn = Txn::new()
                    .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
                    .and_then([TxnOp::put(key.as_str(), layout.as_str(), None)])
                    .or_else([TxnOp::get(key.as_str(), None)]);
                let resp = client.txn(txn).await.map_err(e)?;
                if resp.succeeded() {
                    return Ok(());
                }
                let recorded = gets(&resp).into_iter().flatten().next();
                let recorded = recorded.map(|kv| kv.value().to_vec()).unwrap_or_default();
                let recorded = String::from_utf8(recorded).map_err(|_| ClaimError::Corrupt {
                    path: key.clone(),
                    reason: "the namespace's layout record is not UTF-8 text".into(),
                })?;
                flakeid::claim::store::same_layout(&ns, &recorded, &layout)
            }
        })
    }

    /// [`ClaimStore::namespaces`]: the namespaces the keys under the prefix name, with their
    /// layout keys.
    pub(super) fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
        let (url, prefix) = (self.remote.url.clone(), self.prefix.clone());
        self.run(move |mut client| {
            let (url, prefix) = (url.clone(), prefix.clone());
            async move {
                let e = |e: etcd_client::Error| etcd_error(&url, e);
                let keys = client
                    .get(
                        prefix.as_str(),
                        Some(GetOptions::new().with_prefix().with_keys_only()),
                    )
                    .await
                    .map_err(e)?;
                let mut names: Vec<String> = keys
                    .kvs()
                    .iter()
                    .filter_map(|kv| {
                        let key = core::str::from_utf8(kv.key()).ok()?;
                        let (ns, _) = key.strip_prefix(prefix.as_str())?.split_once('/')?;
                        check_namespace(ns).ok().map(|()| String::from(ns))
                    })
                    .collect();
                names.sort_unstable();
                names.dedup();
                let mut infos = Vec::with_capacity(names.len());
                for namespace in names {
                    let key = Keys::new(&prefix, &namespace).layout();
                    let found = client.get(key.as_str(), None).await.map_err(e)?;
                    let (layout, problem) = match found.kvs().first().map(|kv| kv.value_str()) {
                        None => (None, None),
                        Some(Ok(layout)) => (Some(String::from(layout)), None),
                        Some(Err(_)) => (None, Some(format!("{key} is not UTF-8 text"))),
                    };
                    infos.push(NamespaceInfo {
                        namespace,
                        layout,
                        problem,
                    });
                }
                Ok(infos)
            }
        })
    }

    /// [`ClaimStore::repair`]: "if `nodes/N` has never been created since, and `reserved/N`
    /// is at the revision read, put the larger reservation".
    pub(super) fn repair(
        &self,
        namespace: &str,
        node: u64,
        reserved_until_unix_ns: u64,
    ) -> Result<Repaired, ClaimError> {
        let url = self.remote.url.clone();
        let node_key = self.keys(namespace).node(node);
        let reserved_key = self.keys(namespace).reserved(node);
        let held = ClaimError::NodeHeld {
            namespace: namespace.into(),
            node,
        };
        self.run(move |mut client| {
            let (url, node_key, reserved_key) =
                (url.clone(), node_key.clone(), reserved_key.clone());
            let held = held.clone();
            async move {
                let e = |e: etcd_client::Error| etcd_error(&url, e);
                for _ in 0..CAS_TRIES {
                    let read = Txn::new().and_then([
                        TxnOp::get(node_key.as_str(), None),
                        TxnOp::get(reserved_key.as_str(), None),
                    ]);
                    let read = gets(&client.txn(read).await.map_err(e)?);
                    let [node_kv, reserved_kv] = [
                        read.first().cloned().flatten(),
                        read.get(1).cloned().flatten(),
                    ];
                    if node_kv.is_some() {
                        return Err(held);
                    }
                    let revision = reserved_kv.as_ref().map_or(0, KeyValue::mod_revision);
                    let previous = reserved_kv
                        .and_then(|kv| parse_reserved(kv.value(), &reserved_key).ok())
                        .map(|(stored, _, _)| stored);
                    let value = previous.unwrap_or(0).max(reserved_until_unix_ns);
                    // Nobody claims the id between the read and the write, nor writes the
                    // reservation.
                    let txn = Txn::new()
                        .when([
                            Compare::create_revision(node_key.as_str(), CompareOp::Equal, 0),
                            Compare::mod_revision(
                                reserved_key.as_str(),
                                CompareOp::Equal,
                                revision,
                            ),
                        ])
                        .and_then([TxnOp::put(
                            reserved_key.as_str(),
                            format!("{value} released repaired"),
                            None,
                        )]);
                    if client.txn(txn).await.map_err(e)?.succeeded() {
                        return Ok(Repaired {
                            previous_unix_ns: previous,
                            reserved_until_unix_ns: value,
                        });
                    }
                }
                Err(unreachable(
                    &url,
                    format!("the reservation kept moving under {CAS_TRIES} compare-and-sets"),
                ))
            }
        })
    }
}
