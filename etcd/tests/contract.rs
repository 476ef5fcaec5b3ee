//! The store contract on a real etcd 3.4 (started by the test on 127.0.0.1), through
//! etcd's own client for the faults: a lease revoked under its holder and its reservation
//! rewritten, a reservation key overwritten with garbage or removed.

use flakeid::claim::OpenOptions;
use flakeid::claim::store::{FromUrl, StoreUrl};
use flakeid_fleet::etcd::Etcd;
use flakeid_fleet::scenarios::{self as fleet, Server};
use flakeid_testkit as conformance;

/// The store contract against the real etcd, through etcd's own client for the faults:
/// a lease revoked under its holder, a reservation key overwritten with garbage.
struct EtcdBackend {
    url: String,
    endpoint: String,
    runtime: tokio::runtime::Runtime,
}

impl EtcdBackend {
    fn client(&self) -> etcd_client::Client {
        self.runtime
            .block_on(etcd_client::Client::connect([self.endpoint.as_str()], None))
            .unwrap()
    }
}

impl conformance::Backend for EtcdBackend {
    fn handle(&self) -> std::sync::Arc<dyn flakeid::claim::ClaimStore> {
        let url = StoreUrl::parse(&self.url).unwrap();
        std::sync::Arc::new(
            flakeid_etcd::EtcdStore::from_url(&url, &OpenOptions::default()).unwrap(),
        )
    }
    fn lose(
        &self,
        _: &std::sync::Arc<dyn flakeid::claim::ClaimStore>,
        claimed: &flakeid::claim::store::Claimed,
    ) {
        let mut client = self.client();
        self.runtime
            .block_on(client.lease_revoke(claimed.token as i64))
            .unwrap();
        // A rewrite by hand of the same reservation: the store may not attach the claim
        // again (as it does after a revocation that left the id untouched).
        let key = format!("flakeid/{}/reserved/{}", claimed.namespace, claimed.node);
        let resp = self
            .runtime
            .block_on(client.get(key.as_str(), None))
            .unwrap();
        let value = resp.kvs().first().map(|kv| kv.value().to_vec()).unwrap();
        self.runtime.block_on(client.put(key, value, None)).unwrap();
    }
    fn corrupt(&self, namespace: &str, node: u64) {
        let mut client = self.client();
        let key = format!("flakeid/{namespace}/reserved/{node}");
        self.runtime
            .block_on(client.put(key, "not a reservation", None))
            .unwrap();
    }
    fn raw(&self, namespace: &str, node: u64) -> Option<Vec<u8>> {
        let mut client = self.client();
        let key = format!("flakeid/{namespace}/reserved/{node}");
        let resp = self.runtime.block_on(client.get(key, None)).unwrap();
        resp.kvs().first().map(|kv| kv.value().to_vec())
    }
    fn remove_reservation(&self, namespace: &str, node: u64) -> bool {
        let mut client = self.client();
        let key = format!("flakeid/{namespace}/reserved/{node}");
        let resp = self.runtime.block_on(client.delete(key, None)).unwrap();
        resp.deleted() == 1
    }
}

#[test]
fn the_etcd_store_keeps_the_contract() {
    let _one = fleet::one_at_a_time();
    let Some(server) = Etcd::start("contract") else {
        return;
    };
    let backend = EtcdBackend {
        url: server.url(),
        endpoint: format!("127.0.0.1:{}", server.client_port),
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap(),
    };
    conformance::run_all(&backend, "etcd");
}
