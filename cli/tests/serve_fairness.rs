//! `flakeid serve` shared fairly: four greedy gRPC streams (each asking for 2^64-1 IDs,
//! read as fast as the client can) take what single-ID requests leave, and no ordinary
//! request fails beside them; every stream stays strictly increasing across its messages
//! on a two-shard server; a fifth stream on the same connection is refused.

use flakeid_fleet::service;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use flakeid_serve::grpc::v1::id_service_client::IdServiceClient;
use flakeid_serve::grpc::v1::{NextRequest, StreamRequest};
use service::serve;
use tokio_stream::StreamExt;

const START: Duration = Duration::from_secs(20);

#[test]
fn greedy_streams_leave_room_for_single_ids() {
    let s = serve(
        &[
            "--node",
            "1",
            "--shards",
            "2",
            "--grpc-listen",
            "127.0.0.1:0",
            // 64 IDs a millisecond a shard: four streams could take every tick.
            "--layout",
            "seq=6,node=4,time=53,epoch=2025-01-01T00:00:00Z",
        ],
        START,
    );
    let grpc = s.grpc.clone().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let streamed = Arc::new(AtomicU64::new(0));
    // The greedy client: four endless streams on one connection, each checked for order.
    let greedy = {
        let (grpc, done, streamed) = (grpc.clone(), Arc::clone(&done), Arc::clone(&streamed));
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let c = IdServiceClient::connect(grpc).await.unwrap();
                let mut streams = Vec::new();
                for k in 0..4 {
                    let mut c = c.clone();
                    let (done, streamed) = (Arc::clone(&done), Arc::clone(&streamed));
                    let mut stream = c
                        .stream(StreamRequest {
                            count: u64::MAX,
                            batch: 4096,
                        })
                        .await
                        .unwrap()
                        .into_inner();
                    streams.push(tokio::spawn(async move {
                        let mut last = 0u64;
                        let mut messages = 0u64;
                        while !done.load(Ordering::Relaxed) {
                            let m = stream.next().await.expect("the stream ended").unwrap();
                            assert!(
                                m.ids[0] > last,
                                "stream {k} stepped down at message {messages}"
                            );
                            assert!(m.ids.windows(2).all(|w| w[0] < w[1]));
                            last = *m.ids.last().unwrap();
                            messages += 1;
                            streamed.fetch_add(m.ids.len() as u64, Ordering::Relaxed);
                        }
                        messages
                    }));
                }
                // A fifth on the same connection is one too many.
                let mut c5 = c.clone();
                let e = c5
                    .stream(StreamRequest {
                        count: 10,
                        batch: 1,
                    })
                    .await
                    .expect_err("a fifth stream was opened");
                assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e}");
                let mut messages = Vec::new();
                for t in streams {
                    messages.push(t.await.unwrap());
                }
                messages
            })
        })
    };
    // Wait until the streams flow.
    assert!(service::until(Duration::from_secs(20), || streamed
        .load(Ordering::Relaxed)
        > 20_000));
    // Ordinary clients: two over HTTP, one over gRPC, one ID a request, for 5 s.
    let failures = Arc::new(AtomicU64::new(0));
    let answered = Arc::new(AtomicU64::new(0));
    let ordinary: Vec<_> = (0..3)
        .map(|k| {
            let (failures, answered) = (Arc::clone(&failures), Arc::clone(&answered));
            let (url, grpc) = (s.url("/v1/id"), grpc.clone());
            std::thread::spawn(move || {
                let end = Instant::now() + Duration::from_secs(5);
                if k < 2 {
                    let c = service::client();
                    while Instant::now() < end {
                        match c.get(&url).send() {
                            Ok(r) if r.status() == 200 => answered.fetch_add(1, Ordering::Relaxed),
                            other => {
                                eprintln!("HTTP: {other:?}");
                                failures.fetch_add(1, Ordering::Relaxed)
                            }
                        };
                    }
                } else {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap();
                    rt.block_on(async {
                        let mut c = IdServiceClient::connect(grpc).await.unwrap();
                        while Instant::now() < end {
                            match c.next(NextRequest { count: 1 }).await {
                                Ok(_) => answered.fetch_add(1, Ordering::Relaxed),
                                Err(e) => {
                                    eprintln!("gRPC: {e}");
                                    failures.fetch_add(1, Ordering::Relaxed)
                                }
                            };
                        }
                    });
                }
            })
        })
        .collect();
    for t in ordinary {
        t.join().unwrap();
    }
    let before = streamed.load(Ordering::Relaxed);
    done.store(true, Ordering::Relaxed);
    let messages = greedy.join().unwrap();
    let (failures, answered) = (
        failures.load(Ordering::Relaxed),
        answered.load(Ordering::Relaxed),
    );
    eprintln!(
        "{answered} single IDs answered beside {before} streamed IDs; messages per stream {messages:?}"
    );
    assert_eq!(
        failures, 0,
        "{failures} ordinary requests failed beside the greedy streams"
    );
    assert!(
        answered > 100,
        "only {answered} ordinary requests were answered"
    );
    assert!(
        messages.iter().all(|&m| m > 10),
        "a stream starved: {messages:?}"
    );
}
