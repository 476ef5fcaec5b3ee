//! The line of claimants waiting for a free id of a namespace: a key per waiter under
//! `NS/line/`, bound to a lease of its own, served in the order etcd created the keys.

use super::*;

impl EtcdStore {
    fn line_prefix(&self, namespace: &str) -> String {
        format!("{}/", self.keys(namespace).line())
    }

    /// [`ClaimStore::join_line`]: `NS/line/TOKEN` = the instance name, bound to a new
    /// lease of the TTL that the waiter keeps alive while it waits. A retry after a lost
    /// reply writes the same key with the same lease, which keeps its creation revision.
    pub(super) fn join_line(&self, namespace: &str, instance: &str) -> Result<Ticket, ClaimError> {
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
                Ok(Ticket {
                    namespace: namespace.into(),
                    key: token,
                })
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

    /// [`ClaimStore::line`]: the waiters' keys in creation order (a key whose lease
    /// lapsed is gone already). A key bound to no lease, which no claimant writes, is no
    /// waiter: nobody can block the line with one.
    pub(super) fn line(&self, namespace: &str) -> Result<Vec<Waiter>, ClaimError> {
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

    /// [`ClaimStore::stay_in_line`]: one keep-alive of the waiter's lease;
    /// [`ClaimError::NotOwner`] once etcd no longer knows it.
    pub(super) fn stay_in_line(&self, ticket: &Ticket) -> Result<(), ClaimError> {
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

    /// [`ClaimStore::leave_line`]: revokes the waiter's lease, which deletes its key.
    pub(super) fn leave_line(&self, ticket: &Ticket) {
        let lease = self
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&ticket.key);
        if let Some(lease) = lease {
            self.revoke(lease);
        }
    }

    fn revoke(&self, lease: i64) {
        let _ = self.run(move |mut client| async move {
            let _ = client.lease_revoke(lease).await;
            Ok(())
        });
    }
}
