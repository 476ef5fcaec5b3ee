//! `flakeid_serve::run` embedded in a caller's own runtime: it listens before its node ids
//! are claimed, and when it returns (asked to stop), every claim is already released,
//! before the runtime ends.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use flakeid::Layout;
use flakeid::claim::{ClaimStore, Claims, MemoryStore, NodeState};
use flakeid_serve::{Config, NodeSource, Outcome, Readiness, Service};

#[test]
fn run_releases_every_claim_when_it_returns() {
    let store = MemoryStore::new();
    let claims = Claims::new(store.clone()).namespace("embed").nodes(0..2);
    let mut config = Config::new(Layout::snowflake(), NodeSource::Claims(claims));
    config.shards = 2;
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.grpc_listen = Some("127.0.0.1:0".parse().unwrap());
    config.drain = Duration::from_secs(2);
    config.window = Duration::from_secs(5);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let service: Arc<OnceLock<Arc<Service>>> = Arc::default();
    let held = Arc::new(Mutex::new(Vec::new()));
    let (seen, slot) = (Arc::clone(&held), Arc::clone(&service));
    let outcome = runtime.block_on(async move {
        // Stop once the server is ready (bounded), noting the node ids it mints on.
        let stop = async move {
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if let Some(s) = slot.get()
                    && s.readiness() == Readiness::Ready
                {
                    let nodes = s.minter().unwrap().nodes();
                    *seen.lock().unwrap() = nodes.iter().map(|n| n.node).collect();
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        flakeid_serve::run(config, stop, move |s, _, _| {
            // Listening already; the claims are taken after.
            assert!(matches!(s.readiness(), Readiness::NotReady(_)));
            let _ = service.set(Arc::clone(s));
        })
        .await
    });
    assert_eq!(outcome.unwrap(), Outcome::Stopped);
    assert_eq!(*held.lock().unwrap(), vec![0, 1], "never became ready");
    // The runtime is still alive here: the release did not wait for its end.
    let states: Vec<NodeState> = store
        .list("embed")
        .unwrap()
        .into_iter()
        .map(|i| i.state)
        .collect();
    assert_eq!(states, vec![NodeState::Released, NodeState::Released]);
    drop(runtime);
}
