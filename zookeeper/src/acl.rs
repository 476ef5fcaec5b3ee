//! The znodes' ACLs under a user: this identity's digest, the entries that let anyone else
//! change what the store relies on, and their repair (or a refusal that says how to repair).

use super::*;

/// ZooKeeper's digest identity of `user` with `password`, as the server writes it in an
/// ACL: `USER:base64(sha1(USER:PASSWORD))`.
pub(super) fn digest_id(user: &str, password: &str) -> String {
    use base64::Engine as _;
    let digest = sha1_smol::Sha1::from(format!("{user}:{password}")).digest();
    let encoded = base64::engine::general_purpose::STANDARD.encode(digest.bytes());
    format!("{user}:{encoded}")
}

/// Permissions as zkCli writes them (`cdrwa`).
fn letters(p: Permission) -> String {
    [
        (Permission::CREATE, 'c'),
        (Permission::DELETE, 'd'),
        (Permission::READ, 'r'),
        (Permission::WRITE, 'w'),
        (Permission::ADMIN, 'a'),
    ]
    .iter()
    .filter(|(bit, _)| p.has(*bit))
    .map(|(_, c)| *c)
    .collect()
}

/// An ACL as zkCli prints and takes it: `scheme:id:perms`, comma-separated.
pub(super) fn acl_text(acls: &[Acl]) -> String {
    acls.iter()
        .map(|a| {
            format!(
                "{}:{}:{}",
                a.auth_id().scheme(),
                a.auth_id().id(),
                letters(a.permission())
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether `acls` let an identity other than `me` (a digest id) change the znode or its
/// children: create or delete children, write its data, or change its ACL; with
/// `read=creator`, read it too. (ZooKeeper checks a delete against the parent's ACL, so an
/// open parent lets anyone delete a holder's claim and take its id.)
fn lets_others(acls: &[Acl], me: &str, read: ReadAccess) -> bool {
    let changes = Permission::CREATE | Permission::DELETE | Permission::WRITE | Permission::ADMIN;
    let forbidden = match read {
        ReadAccess::Creator => changes | Permission::READ,
        _ => changes,
    };
    acls.iter().any(|a| {
        let mine = a.auth_id().scheme() == "digest" && a.auth_id().id() == me;
        !mine && (a.permission() & forbidden) != Permission::NONE
    })
}

impl Connect {
    /// The ACL a repaired znode gets, as zkCli takes it (this identity's digest written
    /// out, since `auth` names whoever runs the command).
    fn acl_command(&self, me: &str) -> String {
        match self.read {
            ReadAccess::Creator => format!("digest:{me}:cdrwa"),
            _ => format!("digest:{me}:cdrwa,world:anyone:r"),
        }
    }

    /// Checks the ACL of the znode at `path` (if it exists) against this store's identity:
    /// where another identity may change it, repairs it when this identity may (ADMIN),
    /// returning a line for the operator that names the znode and its ACL before, or
    /// refuses the claim with [`ClaimError::Refused`] naming the znode, its ACL and the
    /// `setAcl` that fixes it. Nothing to check without a user.
    pub(super) async fn guard(
        &self,
        client: &Client,
        path: &str,
        url: &str,
    ) -> Result<Option<String>, ClaimError> {
        let Some(me) = &self.me else {
            return Ok(None);
        };
        let e = |e: ZkError| ZooKeeperStore::error(url, None, e);
        for _ in 0..READ_BACK_TRIES {
            let (acls, stat) = match client.get_acl(path).await {
                Ok(found) => found,
                Err(ZkError::NoNode) => return Ok(None),
                Err(err) => return Err(e(err)),
            };
            if !lets_others(&acls, me, self.read) {
                return Ok(None);
            }
            let repaired = self.acls();
            match client.set_acl(path, &repaired, Some(stat.aversion)).await {
                Ok(_) => {
                    return Ok(Some(format!(
                        "{url}: znode {path} let identities other than {user} change it (ACL {}), so they could delete a holder's claim and take its id; it is repaired: only {user} may change it now{}",
                        acl_text(&acls),
                        match self.read {
                            ReadAccess::Creator => ", or read it",
                            _ => "",
                        },
                        user = self.user(),
                    )));
                }
                // Changed between the read and the write: read again.
                Err(ZkError::BadVersion) => continue,
                Err(ZkError::NoAuth) => {
                    return Err(ClaimError::Refused {
                        store: url.into(),
                        reason: format!(
                            "znode {path} lets identities other than {} change it (ACL {}): they could delete a holder's claim and take its id, so two holders would mint the same IDs, and this identity may not change its ACL; as an identity that may (its creator, or the super user), run in zkCli.sh: setAcl {path} {}",
                            self.user(),
                            acl_text(&acls),
                            self.acl_command(me)
                        ).into(),
                    });
                }
                Err(ZkError::NoNode) => return Ok(None),
                Err(err) => return Err(e(err)),
            }
        }
        Err(unreachable(
            url,
            format!("the ACL of {path} kept changing under {READ_BACK_TRIES} repairs"),
        ))
    }

    /// [`Connect::guard`] for each of `paths`, in order (a parent before its children),
    /// the repairs' lines added to `notices`.
    pub(super) async fn guard_all(
        &self,
        client: &Client,
        paths: &[&str],
        url: &str,
        notices: &Mutex<Vec<String>>,
    ) -> Result<(), ClaimError> {
        for path in paths {
            if let Some(notice) = self.guard(client, path, url).await? {
                notices
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(notice);
            }
        }
        Ok(())
    }

    fn user(&self) -> &str {
        self.auth.as_ref().map_or("-", |(user, _)| user.as_str())
    }
}

#[cfg(test)]
mod tests {

    /// A store nobody answers for is unreachable with the ZooKeeper client's own error
    /// as the source, for a caller to downcast.
    #[test]
    fn an_unreachable_store_keeps_the_client_error_as_its_source() {
        use flakeid::claim::store::{FromUrl, StoreUrl};
        let url = StoreUrl::parse("zookeeper://127.0.0.1:9").unwrap();
        let options =
            flakeid::claim::OpenOptions::default().timeout(core::time::Duration::from_millis(500));
        let e = crate::ZooKeeperStore::from_url(&url, &options).unwrap_err();
        assert!(
            matches!(e, flakeid::claim::ClaimError::Unreachable { .. }),
            "{e}"
        );
        let source = std::error::Error::source(&e).expect("a source");
        assert!(
            source.downcast_ref::<zookeeper_client::Error>().is_some(),
            "{source:?}"
        );
    }

    use super::*;

    #[test]
    fn digest_ids_are_zookeepers() {
        // zkCli's own: `DigestAuthenticationProvider.generateDigest("super:test")`.
        assert_eq!(
            digest_id("super", "test"),
            "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
        );
    }

    #[test]
    fn only_this_identity_may_change_a_znode() {
        let me = digest_id("alice", "pw");
        let mine = Acl::new(Permission::ALL, AuthId::new("digest", &me));
        let read = Acl::new(Permission::READ, AuthId::anyone());
        assert!(!lets_others(
            &[mine.clone(), read.clone()],
            &me,
            ReadAccess::Open
        ));
        assert!(lets_others(
            &[mine.clone(), read.clone()],
            &me,
            ReadAccess::Creator
        ));
        for other in [
            Acl::new(Permission::ALL, AuthId::anyone()),
            Acl::new(Permission::DELETE, AuthId::anyone()),
            Acl::new(Permission::ADMIN, AuthId::new("ip", "127.0.0.1")),
            Acl::new(
                Permission::CREATE,
                AuthId::new("digest", &digest_id("alice", "other")),
            ),
        ] {
            assert!(
                lets_others(&[mine.clone(), other.clone()], &me, ReadAccess::Open),
                "{other:?}"
            );
        }
        assert_eq!(
            acl_text(&[mine, read]),
            format!("digest:{me}:cdrwa,world:anyone:r")
        );
    }
}
