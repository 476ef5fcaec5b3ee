//! `flakeid_serve::run` embedded in a caller's own runtime: when it returns (asked to
//! stop), every claim is already released, before the runtime ends.

use std::time::Duration;

use flakeid::Layout;
use flakeid::claim::{ClaimStore, Claims, MemoryStore, NodeState};
use flakeid_serve::{Config, NodeSource, Outcome};

#[test]
fn run_releases_every_claim_when_it_returns() {
    let store = MemoryStore::new();
    let claims = Claims::new(store.clone()).namespace("embed").nodes(0..2);
    let config = Config {
        layout: Layout::snowflake(),
        nodes: NodeSource::Claims(claims),
        shards: 2,
        listen: "127.0.0.1:0".parse().unwrap(),
        grpc_listen: Some("127.0.0.1:0".parse().unwrap()),
        max_wait: Duration::from_millis(100),
        drain: Duration::from_secs(2),
        window: Duration::from_secs(5),
        metrics: None,
        token: None,
        tls: None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&held);
    let outcome = runtime.block_on(async move {
        let stop = tokio::time::sleep(Duration::from_millis(500));
        flakeid_serve::run(config, stop, move |service, _, _| {
            let nodes: Vec<u64> = service.minter().nodes().iter().map(|n| n.node).collect();
            *seen.lock().unwrap() = nodes;
        })
        .await
    });
    assert_eq!(outcome.unwrap(), Outcome::Stopped);
    assert_eq!(*held.lock().unwrap(), vec![0, 1]);
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
