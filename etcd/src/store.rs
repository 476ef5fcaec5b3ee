//! The store as a [`ClaimStore`]: claims, renewals and releases (written in `claim.rs`
//! and `write.rs`), the line of waiters, a namespace's layout key, the list of
//! namespaces and the repair of a reservation.

use super::*;

impl ClaimStore for EtcdStore {
    /// A key per waiter under `NS/line/`, bound to a lease of its own: waiters are served
    /// in the order etcd created their keys; a dead waiter's key goes with its lease (the
    /// TTL).
    ///
    /// `NS/line/TOKEN` = the instance name, bound to a new
    /// lease of the TTL that the waiter keeps alive while it waits. A retry after a lost
    /// reply writes the same key with the same lease, which keeps its creation revision.
    fn join_line(&self, namespace: &str, instance: &str) -> Result<Option<Ticket>, ClaimError> {
        let url = self.remote.url.clone();
        let ttl = self.ttl.as_secs() as i64;
        let token = format!("{:016x}", flakeid::claim::store::claim_token());
        let key = format!("{}{token}", self.line_prefix(namespace));
        let instance = String::from(instance);
        let granted: Arc<std::sync::Mutex<Option<i64>>> = Arc::default();
        let g = Arc::clone(&granted);
        let put = self.run(move |mut client| {
            let (url, key, instance, granted) =
                (url.clone(), key.clone(), instance.clone(), Arc::clone(&g));
            async move {
                let e = |e: etcd_client::Error| etcd_error(&url, e);
                let lease = lease_once(&mut client, &granted, ttl).await.map_err(e)?;
                client
                    .put(key, instance, Some(PutOptions::new().with_lease(lease)))
                    .await
                    .map_err(e)?;
                Ok(lease)
            }
        });
        match put {
            Ok(lease) => {
                self.waiting
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(token.clone(), lease);
                Ok(Some(Ticket {
                    namespace: namespace.into(),
                    key: token,
                }))
            }
            Err(e) => {
                // A key that landed goes with its lease.
                if let Some(lease) = *granted.lock().unwrap_or_else(|p| p.into_inner()) {
                    self.revoke(lease);
                }
                Err(e)
            }
        }
    }

    /// The waiters' keys in creation order (a key whose lease
    /// lapsed is gone already). A key bound to no lease, which no claimant writes, is no
    /// waiter: nobody can block the line with one.
    fn line(&self, namespace: &str) -> Result<Vec<Waiter>, ClaimError> {
        let url = self.remote.url.clone();
        let prefix = self.line_prefix(namespace);
        self.run(move |mut client| {
            let (url, prefix) = (url.clone(), prefix.clone());
            async move {
                let resp = client
                    .get(prefix.as_str(), Some(GetOptions::new().with_prefix()))
                    .await
                    .map_err(|e| etcd_error(&url, e))?;
                let mut kvs: Vec<&KeyValue> =
                    resp.kvs().iter().filter(|kv| kv.lease() != 0).collect();
                kvs.sort_by_key(|kv| kv.create_revision());
                Ok(kvs
                    .into_iter()
                    .map(|kv| Waiter {
                        key: String::from_utf8_lossy(&kv.key()[prefix.len()..]).into_owned(),
                        instance: String::from_utf8_lossy(kv.value()).into_owned(),
                    })
                    .collect())
            }
        })
    }

    /// One keep-alive of the waiter's lease;
    /// [`ClaimError::NotOwner`] once etcd no longer knows it.
    fn stay_in_line(&self, ticket: &Ticket) -> Result<(), ClaimError> {
        let lease = self
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&ticket.key)
            .copied();
        let gone = || ClaimError::NotOwner {
            namespace: ticket.namespace.clone(),
            node: 0,
        };
        let Some(lease) = lease else {
            return Err(gone());
        };
        let url = self.remote.url.clone();
        let alive = self.run(move |mut client| {
            let url = url.clone();
            async move {
                keep_alive(&mut client, lease)
                    .await
                    .map_err(|e| etcd_error(&url, e))
            }
        })?;
        match alive {
            Some(0) => Err(gone()),
            _ => Ok(()),
        }
    }

    /// Revokes the waiter's lease, which deletes its key.
    fn leave_line(&self, ticket: &Ticket) {
        let lease = self
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&ticket.key);
        if let Some(lease) = lease {
            self.revoke(lease);
        }
    }

    fn lease_ttl(&self) -> Option<Duration> {
        Some(self.ttl)
    }

    /// Two attempts (the first, on the member that stopped answering, timed out) and the
    /// pause between them.
    fn failover_bound(&self, ttl: Duration) -> Option<Duration> {
        Some(2 * attempt_bound(self.remote.timeout, ttl) + RETRY_PAUSE)
    }

    fn url(&self) -> String {
        self.remote.url.clone()
    }

    fn claim(&self, request: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        self.claim(request)
    }

    fn renew(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError> {
        self.write(claimed, reserved_until_unix_ns, false)
    }

    fn release(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError> {
        self.write(claimed, reserved_until_unix_ns, true)
    }

    fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        let url = self.remote.url.clone();
        let keys = self.keys(namespace);
        let prefix = format!("{}/", keys.namespace());
        self.run(move |mut client| {
            let url = url.clone();
            let (prefix, keys) = (prefix.clone(), keys.clone());
            async move {
                let resp = client
                    .get(prefix.as_str(), Some(GetOptions::new().with_prefix()))
                    .await
                    .map_err(|e| etcd_error(&url, e))?;
                let mut nodes: BTreeMap<u64, Listing> = BTreeMap::new();
                for kv in resp.kvs() {
                    let key = String::from_utf8_lossy(kv.key());
                    let Some((record, node)) = keys.record(&key) else {
                        continue;
                    };
                    let listing = nodes.entry(node).or_insert_with(|| Listing::new(node));
                    match record {
                        Record::Node => listing.held_by(kv.value()),
                        Record::Reserved => listing.reserved(kv.value(), &key),
                        // A record a later release keeps: not part of this listing.
                        _ => {}
                    }
                }
                Ok(nodes.into_values().map(|l| l.0).collect())
            }
        })
    }

    /// `PREFIX/NS/layout`, put if it has no revision yet, else
    /// read and compared.
    fn bind_layout(&self, namespace: &str, layout: &str) -> Result<(), ClaimError> {
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

    /// The namespaces the keys under the prefix name, with their
    /// layout keys.
    fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
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

    /// "if `nodes/N` has never been created since, and `reserved/N`
    /// is at the revision read, put the larger reservation".
    fn repair(
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

impl EtcdStore {
    /// Where the waiters' keys of `namespace` are.
    fn line_prefix(&self, namespace: &str) -> String {
        format!("{}/", self.keys(namespace).line())
    }

    /// Ends a waiter's lease, and its key with it.
    fn revoke(&self, lease: i64) {
        let _ = self.run(move |mut client| async move {
            let _ = client.lease_revoke(lease).await;
            Ok(())
        });
    }
}
