//! The store contract on a real ZooKeeper 3.8 (started by the test on 127.0.0.1), through
//! a client of the test's own for the faults: a holder's ephemeral node deleted, a
//! reservation overwritten with garbage or removed.

use flakeid::claim::OpenOptions;
use flakeid::claim::store::{FromUrl, StoreUrl};
use flakeid_fleet::scenarios::{self as fleet, Server};
use flakeid_fleet::zookeeper::ZooKeeper;
use flakeid_testkit as conformance;

/// The store contract against the real ZooKeeper, through a client of the test's own for
/// the faults: a holder's ephemeral node deleted, a reservation overwritten with garbage.
struct ZkBackend {
    url: String,
    runtime: tokio::runtime::Runtime,
    client: zookeeper_client::Client,
}

impl ZkBackend {
    fn new(zk: &ZooKeeper) -> ZkBackend {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let endpoint = format!("127.0.0.1:{}", zk.port);
        let client = runtime
            .block_on(zookeeper_client::Client::connect(&endpoint))
            .unwrap();
        ZkBackend {
            url: zk.url(),
            runtime,
            client,
        }
    }
}

impl conformance::Backend for ZkBackend {
    fn handle(&self) -> std::sync::Arc<dyn flakeid::claim::ClaimStore> {
        let url = StoreUrl::parse(&self.url).unwrap();
        std::sync::Arc::new(
            flakeid_zookeeper::ZooKeeperStore::from_url(&url, &OpenOptions::default()).unwrap(),
        )
    }
    fn lose(
        &self,
        _: &std::sync::Arc<dyn flakeid::claim::ClaimStore>,
        claimed: &flakeid::claim::store::Claimed,
    ) {
        let path = format!("/flakeid/{}/nodes/{}", claimed.namespace, claimed.node);
        self.runtime
            .block_on(self.client.delete(&path, None))
            .unwrap();
    }
    fn corrupt(&self, namespace: &str, node: u64) {
        let path = format!("/flakeid/{namespace}/reserved/{node}");
        self.runtime
            .block_on(self.client.set_data(&path, b"not a reservation", None))
            .unwrap();
    }
    fn raw(&self, namespace: &str, node: u64) -> Option<Vec<u8>> {
        let path = format!("/flakeid/{namespace}/reserved/{node}");
        self.runtime
            .block_on(self.client.get_data(&path))
            .ok()
            .map(|(data, _)| data)
    }
    fn remove_reservation(&self, namespace: &str, node: u64) -> bool {
        let path = format!("/flakeid/{namespace}/reserved/{node}");
        self.runtime
            .block_on(self.client.delete(&path, None))
            .is_ok()
    }
}

#[test]
fn the_zookeeper_store_keeps_the_contract() {
    let _one = fleet::one_at_a_time();
    let Some(zk) = ZooKeeper::start("contract") else {
        return;
    };
    let backend = ZkBackend::new(&zk);
    conformance::run_all(&backend, "zookeeper");
}
