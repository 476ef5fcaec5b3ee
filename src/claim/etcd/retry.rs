//! Retrying a request across the endpoints of an etcd cluster: one attempt bounded, the next endpoint after a failure, and the helpers of a transaction's answer.

use super::*;

/// The key-values the gets of a transaction read, one `Option` per get, in order.
pub(super) fn gets(resp: &TxnResponse) -> Vec<Option<KeyValue>> {
    resp.op_responses()
        .into_iter()
        .filter_map(|op| match op {
            TxnOpResponse::Get(get) => Some(get.kvs().first().cloned()),
            _ => None,
        })
        .collect()
}

/// The bound on one attempt of a request: a third of the request timeout, at least
/// 300 ms. A renewal comes every third of the shorter of the window and the TTL, so a
/// member that hangs costs at most one attempt of it.
pub(super) fn attempt_bound(timeout: Duration) -> Duration {
    (timeout / 3).max(Duration::from_millis(300)).min(timeout)
}

/// The client of the endpoint in use.
pub(super) fn pick(clients: &[Client], current: &AtomicUsize) -> Client {
    clients[current.load(Ordering::Relaxed) % clients.len()].clone()
}

/// Moves on to the next endpoint.
pub(super) fn fail_over(current: &AtomicUsize, endpoints: usize) {
    let _ = current.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |i| {
        Some((i + 1) % endpoints)
    });
}

/// Runs `attempt` (each try bounded by `bound`) until it ends other than unreachable, or
/// `timeout` is spent: then the last error. After a try that failed or hung, `failed`
/// moves on to the next endpoint.
pub(super) async fn retrying<T, F: core::future::Future<Output = Result<T, ClaimError>>>(
    url: &str,
    timeout: Duration,
    bound: Duration,
    attempt: impl Fn() -> F,
    failed: impl Fn(),
) -> Result<T, ClaimError> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let error = match tokio::time::timeout(bound.min(left), attempt()).await {
            Ok(Err(e @ ClaimError::Unreachable { .. })) => e,
            Ok(done) => return done,
            Err(_) => unreachable(url, format!("no answer within {:?}", bound.min(left))),
        };
        failed();
        let pause = Duration::from_millis(50);
        if deadline.saturating_duration_since(tokio::time::Instant::now()) <= pause {
            return Err(error);
        }
        tokio::time::sleep(pause).await;
    }
}

/// How many times a write reads and tries again when another write of the same claim
/// moved the reservation between its read and its compare-and-set (a backstop: each try
/// that loses sees a larger stored value, which ends a renewal's loop).
pub(super) const CAS_TRIES: usize = 64;

/// One keep-alive of `lease`: whether it still lives.
pub(super) async fn keep_alive(
    client: &mut Client,
    lease: i64,
) -> Result<bool, etcd_client::Error> {
    let (mut keeper, mut stream) = client.lease_keep_alive(lease).await?;
    keeper.keep_alive().await?;
    Ok(stream.message().await?.is_some_and(|r| r.ttl() > 0))
}
