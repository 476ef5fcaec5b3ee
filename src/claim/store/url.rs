//! [`StoreUrl`]: the one parse of a store's URL (scheme, hosts, path, query), with the
//! secrets kept out of every message; [`FromUrl`]: how a store opens from one.

use core::fmt;
use std::string::{String, ToString};
use std::vec::Vec;

use crate::claim::{Access, ClaimError, OpenOptions, ReadAccess, Secret};

/// A store's URL, read once: `SCHEME:[//AUTHORITY]PATH[?QUERY]`.
///
/// - `file:/var/lib/flakeid?share=group`: scheme `file`, path `/var/lib/flakeid`, query
///   `share=group`.
/// - `etcds://10.0.0.5:2379,10.0.0.6:2379?ca=/etc/ca.pem`: scheme `etcds`, hosts
///   `10.0.0.5:2379` and `10.0.0.6:2379`, query `ca=/etc/ca.pem`.
/// - `zookeeper://10.0.0.7:2181/apps/ids?user=flakeid&password-file=/run/zk`: hosts
///   `10.0.0.7:2181`, path (the chroot) `/apps/ids`.
/// - `static:7`, `memory:`: a path of `7` and of nothing.
///
/// Its [`Display`](fmt::Display) is [`redacted`](StoreUrl::redacted): the query (paths, a
/// user name) never reaches a message.
///
/// ```
/// use flakeid::claim::store::StoreUrl;
///
/// let url = StoreUrl::parse("zookeeper://a:2181,b:2181/apps/ids?user=u&password-file=/run/p")?;
/// assert_eq!(url.scheme(), "zookeeper");
/// assert_eq!(url.hosts("zookeeper://127.0.0.1:2181")?, ["a:2181", "b:2181"]);
/// assert_eq!(url.path(), "/apps/ids");
/// assert_eq!(url.get("user"), Some("u"));
/// assert_eq!(url.to_string(), "zookeeper://a:2181,b:2181/apps/ids?…");
/// # Ok::<(), flakeid::claim::ClaimError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct StoreUrl {
    scheme: String,
    authority: Option<String>,
    path: String,
    query: Vec<(String, String)>,
    redacted: String,
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("StoreUrl").field(&self.redacted).finish()
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted)
    }
}

impl StoreUrl {
    /// Reads `url`; [`ClaimError::BadUrl`] if it has no scheme or a query pair is not
    /// `NAME=VALUE` (the message names the pair's name, never its value).
    pub fn parse(url: &str) -> Result<StoreUrl, ClaimError> {
        let redacted = redact(url);
        let bad = |reason: String| ClaimError::BadUrl {
            url: redacted.clone(),
            reason,
        };
        let (scheme, rest) = url
            .split_once(':')
            .filter(|(s, _)| !s.is_empty() && !s.contains('/'))
            .ok_or_else(|| bad("no scheme: give file:DIR, memory:, static:N, static:pod, etcd://HOST:PORT, zookeeper://HOST:PORT or postgres://HOST/DB".into()))?;
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = match rest.strip_prefix("//") {
            Some(after) => {
                let end = after.find('/').unwrap_or(after.len());
                (Some(after[..end].to_string()), after[end..].to_string())
            }
            None => (None, rest.to_string()),
        };
        let mut pairs = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair
                .split_once('=')
                .filter(|(n, v)| !n.is_empty() && !v.is_empty())
                .ok_or_else(|| {
                    let name = pair.split_once('=').map_or(pair, |(n, _)| n);
                    bad(format!("{name:?} in the query is not NAME=VALUE"))
                })?;
            // "Last wins" would let an appended `sslmode=disable` undo a `verify-full`
            // before it: a name given twice is refused.
            if pairs.iter().any(|(n, _): &(String, String)| n == name) {
                return Err(bad(format!(
                    "{name}= is given twice: give each parameter once"
                )));
            }
            pairs.push((name.to_string(), value.to_string()));
        }
        Ok(StoreUrl {
            scheme: scheme.into(),
            authority,
            path,
            query: pairs,
            redacted,
        })
    }

    /// The scheme: `file`, `etcd`, `zookeeper`, ...
    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// What follows `//` up to the path, if the URL has it: `a:2181,b:2181`.
    pub fn authority(&self) -> Option<&str> {
        self.authority.as_deref()
    }

    /// The path: after the authority if there is one, else all after the scheme's colon
    /// (without the query).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The whole location without the query, `//` taken off: `/var/lib/flakeid` for
    /// `file:/var/lib/flakeid` and for `file:///var/lib/flakeid`.
    pub fn location(&self) -> String {
        match &self.authority {
            Some(a) => format!("{a}{}", self.path),
            None => self.path.clone(),
        }
    }

    /// The query's pairs, in order.
    pub fn query(&self) -> &[(String, String)] {
        &self.query
    }

    /// The value of the query's last `name=`, if any.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The URL as messages show it: without its query.
    pub fn redacted(&self) -> &str {
        &self.redacted
    }

    /// [`ClaimError::BadUrl`] for this URL, saying `reason`.
    pub fn bad(&self, reason: impl Into<String>) -> ClaimError {
        ClaimError::BadUrl {
            url: self.redacted.clone(),
            reason: reason.into(),
        }
    }

    /// Refuses a query parameter other than `known` (which the message lists).
    pub fn only(&self, known: &[&str]) -> Result<(), ClaimError> {
        match self
            .query
            .iter()
            .find(|(n, _)| !known.contains(&n.as_str()))
        {
            None => Ok(()),
            Some((name, _)) if known.is_empty() => Err(self.bad(format!(
                "unknown query parameter {name:?}: {}: takes none",
                self.scheme
            ))),
            Some((name, _)) => Err(self.bad(format!(
                "unknown query parameter {name:?}: the store reads {}",
                known.join(", ")
            ))),
        }
    }

    /// The authority as a list of `HOST:PORT` endpoints, or why not, with `example`.
    pub fn hosts(&self, example: &str) -> Result<Vec<String>, ClaimError> {
        let bad = || {
            self.bad(format!(
                "give //HOST:PORT[,HOST:PORT...], each endpoint HOST:PORT, as {example}"
            ))
        };
        let list = self.authority.as_deref().ok_or_else(bad)?;
        let endpoints: Vec<String> = list.split(',').map(str::to_string).collect();
        let valid = |e: &String| {
            e.rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
        };
        if list.is_empty() || !endpoints.iter().all(valid) {
            return Err(bad());
        }
        Ok(endpoints)
    }

    /// `access` with the query's read over it (see [`Access`]): `ca`, `cert`, `key`,
    /// `user`, `password-file` and `read`; any other parameter is refused, and so is a
    /// `password=` (a password in a URL ends up in shell history, process lists and logs).
    pub fn access(&self, mut access: Access) -> Result<Access, ClaimError> {
        let bad = |reason: String| self.bad(reason);
        for (name, value) in self.query() {
            let value = value.as_str();
            match name.as_str() {
                "ca" => access.ca = Some(value.into()),
                "cert" => access.cert = Some(value.into()),
                "key" => access.key = Some(value.into()),
                "user" => access.user = Some(value.into()),
                "password-file" | "password_file" => {
                    access.password = Some(Secret::from_file(value)?);
                }
                "password" => {
                    return Err(ClaimError::PasswordInUrl {
                        url: self.redacted().into(),
                    });
                }
                "read" => {
                    access.read = match value {
                        "open" => ReadAccess::Open,
                        "creator" => ReadAccess::Creator,
                        _ => {
                            return Err(bad(format!(
                                "read={value}: give read=open or read=creator"
                            )));
                        }
                    }
                }
                other => {
                    return Err(bad(format!(
                        "unknown query parameter {other:?}: the store reads ca, cert, key, user, password-file and read"
                    )));
                }
            }
        }
        if access.ca.is_some() || access.cert.is_some() {
            access.tls = true;
        }
        if access.cert.is_some() != access.key.is_some() {
            return Err(bad(
                "mutual TLS needs both cert=FILE and key=FILE (the client certificate and its key)"
                    .into(),
            ));
        }
        if access.password.is_some() && access.user.is_none() {
            return Err(bad("a password without user=NAME: give the user too".into()));
        }
        if access.user.is_some() && access.password.is_none() {
            return Err(ClaimError::NoPassword {
                url: self.redacted().into(),
            });
        }
        Ok(access)
    }
}

/// `url` as messages show it: without its query, and without the password of a
/// `//USER:PASSWORD@HOST` (a store refuses it, but its message must not repeat it).
fn redact(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, _)) => (base, "?…"),
        None => (url, ""),
    };
    let Some(start) = base.find("//").map(|i| i + 2) else {
        return format!("{base}{query}");
    };
    let end = base[start..].find('/').map_or(base.len(), |i| start + i);
    let Some(at) = base[start..end].rfind('@').map(|i| start + i) else {
        return format!("{base}{query}");
    };
    match base[start..at].split_once(':') {
        Some((user, _)) => format!("{}{user}:…{}{query}", &base[..start], &base[at..]),
        None => format!("{base}{query}"),
    }
}

/// A store that opens from its URL: the one shape every store's constructor by URL has, so
/// a composition root (the `flakeid` tool) maps schemes to stores in one `match`.
pub trait FromUrl: Sized {
    /// Opens the store `url` names, with the TTL, timeout and access of `options` where
    /// the store has them.
    fn from_url(url: &StoreUrl, options: &OpenOptions) -> Result<Self, ClaimError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Neither a query nor the password of `USER:PASSWORD@` reaches a message; the user
    /// and the hosts do.
    #[test]
    fn the_redacted_url_holds_no_password_and_no_query() {
        for (url, shown) in [
            (
                "postgres://u:hunter2@h:5432/db?x=y",
                "postgres://u:…@h:5432/db?…",
            ),
            ("postgres://u:hunter2@h1,h2/db", "postgres://u:…@h1,h2/db"),
            ("postgres://u:@h/db", "postgres://u:…@h/db"),
            ("postgres://u@h/db", "postgres://u@h/db"),
            ("etcd://a:1,b:2?user=u", "etcd://a:1,b:2?…"),
            ("file:/a@b:c", "file:/a@b:c"),
            ("static:7", "static:7"),
        ] {
            let u = StoreUrl::parse(url).unwrap();
            assert_eq!(u.redacted(), shown, "{url}");
            assert!(!format!("{u} {u:?}").contains("hunter2"));
        }
    }

    #[test]
    fn urls_split_into_their_parts() {
        let u = StoreUrl::parse("file:/var/lib/x?share=group").unwrap();
        assert_eq!(
            (u.scheme(), u.authority(), u.path()),
            ("file", None, "/var/lib/x")
        );
        assert_eq!(u.get("share"), Some("group"));
        assert_eq!(u.location(), "/var/lib/x");
        let u = StoreUrl::parse("file:///var/lib/x").unwrap();
        assert_eq!(u.location(), "/var/lib/x");
        let u = StoreUrl::parse("etcd://a:1,b:2").unwrap();
        assert_eq!(u.hosts("e").unwrap(), ["a:1", "b:2"]);
        assert_eq!(u.path(), "");
        let u = StoreUrl::parse("static:pod+3").unwrap();
        assert_eq!(u.path(), "pod+3");
        for (bad, says) in [
            ("nothing", "no scheme"),
            ("etcd://a:1?ca", "NAME=VALUE"),
            ("etcd://a:1?=x", "NAME=VALUE"),
            ("etcd://a:1?ca=/x&ca=/y", "ca= is given twice"),
            (
                "postgres://u@h/db?sslmode=verify-full&sslmode=disable",
                "sslmode= is given twice",
            ),
        ] {
            let e = StoreUrl::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        for bad in [
            "etcd:a:1",
            "etcd://a",
            "etcd://a:x",
            "etcd://",
            "etcd://a:1,",
        ] {
            let e = StoreUrl::parse(bad).unwrap().hosts("ex").unwrap_err();
            assert!(e.to_string().contains("HOST:PORT"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_secret_in_the_query_never_reaches_a_message() {
        let u = StoreUrl::parse("etcd://h:1?user=u&password=hunter2").unwrap();
        let text = format!("{u} {u:?} {}", u.bad("x"));
        assert!(
            !text.contains("hunter2") && !text.contains("user=u"),
            "{text}"
        );
    }

    #[test]
    fn the_query_is_read_and_a_password_in_it_refused() {
        let url = |q: &str| StoreUrl::parse(&format!("etcd://h:1?{q}"));
        let a = url("ca=/c&cert=/x&key=/y")
            .unwrap()
            .access(Access::default())
            .unwrap();
        assert!(a.tls);
        assert_eq!(a.key.as_deref(), Some(std::path::Path::new("/y")));
        let e = url("user=u&password=hunter2")
            .unwrap()
            .access(Access::default())
            .unwrap_err();
        let text = format!("{e} {e:?}");
        assert!(text.contains("never goes in the URL"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        for (q, says) in [
            ("cert=/x", "both cert"),
            ("user=u", "without a password"),
            ("read=all", "read=open or read=creator"),
            ("cat=1", "unknown query parameter"),
        ] {
            let e = url(q)
                .unwrap()
                .access(Access::default())
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{q}: {e}");
        }
    }
}
