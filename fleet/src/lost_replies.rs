//! Replies lost after the store applied a request, written once over any store a TCP
//! proxy can sit in front of: the proxy resets the connection right after forwarding a
//! request that carries the store's marker, so the write lands and its answer does not.

use std::sync::Arc;

use crate::proxy::Proxy;
use crate::server::Open;

use flakeid::claim::store::ClaimRequest;
use flakeid::claim::{ClaimErrorKind, ClaimStore, NodeState, OpenOptions};

/// 2027-01-15T08:00:00Z.
const T: u64 = 1_800_000_000_000_000_000;

/// A proxy to the server on `port`, and the store at `url` opened through it.
fn behind_proxy(open: Open, url: &str, port: u16) -> (Proxy, Arc<dyn ClaimStore>) {
    let proxy = Proxy::start(port);
    let through = url.replacen(&format!(":{port}"), &format!(":{}", proxy.port), 1);
    let store = open(&through, &OpenOptions::default()).unwrap();
    (proxy, store)
}

/// A claim whose reply was lost (the connection reset right after the store applied it,
/// `marker` being in the claim's request) is recognised as this claim's when read back:
/// taken, not left as an id held by nobody (or by the process's own session) while it
/// claims another.
pub fn a_lost_reply_to_a_claim_takes_the_claim_it_made(
    open: Open,
    url: &str,
    port: u16,
    marker: &[u8],
) {
    let (proxy, store) = behind_proxy(open, url, port);
    let request = ClaimRequest {
        namespace: "lostclaim",
        pool: 0..4,
        instance: "a",
    };
    proxy.cut_after_request_containing(marker);
    let mut taken = Vec::new();
    // As `Claims` does: an unreachable store is asked again.
    for _ in 0..4 {
        match store.claim(&request) {
            Ok(c) => {
                taken.push(c);
                break;
            }
            Err(e) => assert_eq!(e.kind(), ClaimErrorKind::Unavailable, "{e}"),
        }
    }
    assert!(proxy.cuts() >= 1, "the proxy never cut");
    let claimed = taken.pop().expect("the claim after a lost reply");
    assert_eq!(claimed.node, 0, "the claim that landed was not taken");
    let held: Vec<u64> = store
        .list("lostclaim")
        .unwrap()
        .into_iter()
        .filter(|i| i.state == NodeState::Held)
        .map(|i| i.node)
        .collect();
    assert_eq!(held, [0], "ids held besides the claim");
    store.renew(&claimed, T).unwrap();
    store.release(&claimed, T).unwrap();
}

/// A renewal whose reply was lost (`marker` being in the renewal's request) is not a lost
/// claim: the next renewal finds the claim still its own, stores the larger reservation
/// and goes on; four rounds.
pub fn a_lost_reply_to_a_renewal_does_not_lose_the_claim(
    open: Open,
    url: &str,
    port: u16,
    marker: &[u8],
) {
    let (proxy, store) = behind_proxy(open, url, port);
    let request = ClaimRequest {
        namespace: "lost",
        pool: 0..1,
        instance: "a",
    };
    let c = store.claim(&request).unwrap();
    store.renew(&c, T).unwrap();
    let mut last = T;
    for round in 1..=4u64 {
        proxy.cut_after_request_containing(marker);
        // Its reply is lost (the outcome may be either, as a client would see it).
        let _ = store.renew(&c, T + round * 1_000_000_000);
        last = T + round * 1_000_000_000 + 500_000_000;
        store
            .renew(&c, last)
            .unwrap_or_else(|e| panic!("round {round}: the renewal after a lost reply: {e}"));
    }
    assert!(proxy.cuts() >= 4, "the proxy cut {} times", proxy.cuts());
    let listed = store.list("lost").unwrap();
    assert_eq!(
        (listed[0].state, listed[0].reserved_until_unix_ns),
        (NodeState::Held, last)
    );
    store.release(&c, last).unwrap();
}
