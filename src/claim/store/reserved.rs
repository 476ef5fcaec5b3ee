//! The text of a reservation on a coordinator (`RESERVED_UNIX_NS STATE HOLDER`), a node
//! id's listing built from what a coordinator stores for it, and the error of a store that
//! could not be reached.

use std::string::String;
use std::string::ToString;

use crate::claim::{ClaimError, ClaimInfo, NodeState, Reason};

/// The store could not be reached: `reason` (words, or a [`Reason`] that keeps the
/// client's error as the claim error's source), for the store at `url`.
pub fn unreachable(url: &str, reason: impl Into<Reason>) -> ClaimError {
    ClaimError::Unreachable {
        store: url.into(),
        reason: reason.into(),
    }
}

/// A stored reservation, `RESERVED_UNIX_NS STATE HOLDER` (`held` or `released`; a bare
/// number is read too): the reservation, whether it was released, the holder. Anything
/// else is [`ClaimError::Corrupt`] naming `key`: never read as 0.
pub fn parse_reserved(value: &[u8], key: &str) -> Result<(u64, bool, Option<String>), ClaimError> {
    let corrupt = |reason: &str| ClaimError::Corrupt {
        path: key.into(),
        reason: reason.into(),
    };
    let text = core::str::from_utf8(value).map_err(|_| corrupt("it is not UTF-8 text"))?;
    let mut parts = text.splitn(3, ' ');
    let reserved = parts
        .next()
        .filter(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|r| r.parse().ok())
        .ok_or_else(|| corrupt("it does not start with a reservation in Unix nanoseconds"))?;
    let released = match parts.next() {
        None | Some("held") => false,
        Some("released") => true,
        Some(_) => return Err(corrupt("its state is neither 'held' nor 'released'")),
    };
    let holder = parts.next().map(str::to_string);
    Ok((reserved, released, holder))
}

/// A fresh claim's own identity: a random, non-zero token that no other claim of this
/// process (or, but for a 2^-64 chance, of any other) is given. A store writes it with
/// the claim ([`claim_record`]) and checks it in every renewal, release and read-back,
/// so nothing done with a lost claim can touch a later claim of the same process,
/// session or instance name.
pub fn claim_token() -> u64 {
    use core::hash::{BuildHasher, Hasher};
    use core::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // Each `RandomState` is seeded from the OS's randomness (once per thread, then
    // stepped); the counter and the clock make two calls differ even on one seed.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    h.finish().max(1)
}

/// The text of a claim key (`nodes/N`): the holder's name, then the claim's token
/// ([`claim_token`]) on a line of its own, `HOLDER\nclaim TOKEN_HEX`.
pub fn claim_record(holder: &str, token: u64) -> String {
    format!("{holder}\nclaim {token:016x}")
}

/// A claim key's text: the holder's name and the claim's token (`None` for a key written
/// by a version before tokens, or by hand: no claim of this process then matches it).
pub fn parse_claim_record(value: &[u8]) -> (String, Option<u64>) {
    let text = String::from_utf8_lossy(value);
    match text.rsplit_once("\nclaim ") {
        Some((holder, token))
            if token.len() == 16 && token.bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            (holder.into(), u64::from_str_radix(token, 16).ok())
        }
        _ => (text.into_owned(), None),
    }
}

/// A node id's listing, built from what a coordinator stores for it, in either order: the
/// claim key (`nodes/N`: the holder's name) and the reservation (`reserved/N`).
pub struct Listing(
    /// The listing so far.
    pub ClaimInfo,
);

impl Listing {
    /// Node `node`, expired with no reservation until its keys are read.
    pub fn new(node: u64) -> Listing {
        Listing(ClaimInfo {
            node,
            state: NodeState::Expired,
            holder: None,
            reserved_until_unix_ns: 0,
            problem: None,
        })
    }

    /// `nodes/N` exists: held by `holder` (unless its reservation is unreadable).
    pub fn held_by(&mut self, holder: &[u8]) {
        let info = &mut self.0;
        if info.state != NodeState::Corrupt {
            info.state = NodeState::Held;
        }
        info.holder = Some(parse_claim_record(holder).0);
    }

    /// `reserved/N` (at `key`) holds `value`.
    pub fn reserved(&mut self, value: &[u8], key: &str) {
        let info = &mut self.0;
        match parse_reserved(value, key) {
            Ok((reserved, released, holder)) => {
                info.reserved_until_unix_ns = reserved;
                if info.state != NodeState::Held {
                    if released {
                        info.state = NodeState::Released;
                    }
                    info.holder = info.holder.take().or(holder);
                }
            }
            Err(err) => {
                info.state = NodeState::Corrupt;
                info.problem = Some(err.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claim_records_round_trip_and_tokens_differ() {
        let (a, b) = (claim_token(), claim_token());
        assert_ne!(a, b);
        assert_ne!(a, 0);
        for holder in ["host:1", "a b\nc", ""] {
            let record = claim_record(holder, a);
            assert_eq!(
                parse_claim_record(record.as_bytes()),
                (holder.into(), Some(a))
            );
        }
        assert_eq!(parse_claim_record(b"host:1"), ("host:1".into(), None));
        assert_eq!(
            parse_claim_record(b"h\nclaim 12"),
            ("h\nclaim 12".into(), None)
        );
    }

    #[test]
    fn reservations_parse_or_are_corrupt() {
        assert_eq!(
            parse_reserved(b"17 held a:1", "k").unwrap(),
            (17, false, Some("a:1".into()))
        );
        assert_eq!(parse_reserved(b"17", "k").unwrap(), (17, false, None));
        assert_eq!(
            parse_reserved(b"5 released h h", "k").unwrap(),
            (5, true, Some("h h".into()))
        );
        for bad in [&b""[..], b"x held a", b"-1 held a", b"17 gone a", b"\xff"] {
            assert!(
                matches!(parse_reserved(bad, "k"), Err(ClaimError::Corrupt { .. })),
                "{bad:?}"
            );
        }
    }
}
