//! A gRPC load client for `flakeid serve --grpc-listen`: `concurrency` tasks call
//! `Next(count)` (or `Stream`) back to back for `seconds` on one HTTP/2 connection each,
//! then print requests/s, IDs/s and latency percentiles. Used for BENCHMARKS.md:
//!
//! ```sh
//! cargo run --release -p flakeid-serve --example grpc_load -- http://127.0.0.1:9090 next 1 64 10
//! cargo run --release -p flakeid-serve --example grpc_load -- http://127.0.0.1:9090 stream 4096 4 10
//! cargo run --release -p flakeid-serve --example grpc_load -- http://127.0.0.1:50051 ferroid 4096 4 10
//! ```
//!
//! Arguments: URL, `next`, `stream` or `ferroid`, IDs per call (per message for `stream`),
//! concurrency, seconds. `ferroid` calls `ferroid-tonic-server`'s `StreamIds` for as many
//! IDs a call as `stream` asks for (256 messages' worth), and counts its packed IDs.

use std::time::{Duration, Instant};

use flakeid_serve::grpc::v1::id_service_client::IdServiceClient;
use flakeid_serve::grpc::v1::{NextRequest, StreamRequest};

/// `ferroid.StreamIdsRequest` of ferroid-tonic-server's `ferroid.proto`.
#[derive(Clone, PartialEq, prost::Message)]
struct StreamIdsRequest {
    #[prost(uint64, tag = "1")]
    count: u64,
}

/// `ferroid.IdChunk`: IDs packed as 8 bytes each.
#[derive(Clone, PartialEq, prost::Message)]
struct IdChunk {
    #[prost(bytes = "vec", tag = "1")]
    packed_ids: Vec<u8>,
}

/// One `ferroid.IdGenerator/StreamIds` call for `count` IDs: how many came.
async fn ferroid_stream(
    grpc: &mut tonic::client::Grpc<tonic::transport::Channel>,
    count: u64,
) -> Result<u64, tonic::Status> {
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let path = http::uri::PathAndQuery::from_static("/ferroid.IdGenerator/StreamIds");
    let codec = tonic_prost::ProstCodec::<StreamIdsRequest, IdChunk>::default();
    let mut s = grpc
        .server_streaming(tonic::Request::new(StreamIdsRequest { count }), path, codec)
        .await?
        .into_inner();
    let mut ids = 0;
    while let Some(chunk) = s.message().await? {
        ids += chunk.packed_ids.len() as u64 / 8;
    }
    Ok(ids)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = args
        .first()
        .cloned()
        .unwrap_or("http://127.0.0.1:9090".into());
    let mode = args.get(1).cloned().unwrap_or("next".into());
    let per_call: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let concurrency: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(64);
    let seconds: u64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(10);
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let mut client = IdServiceClient::connect(url.clone()).await?;
        let channel = tonic::transport::Endpoint::new(url.clone())?
            .connect()
            .await?;
        let mut ferroid = tonic::client::Grpc::new(channel);
        let mode = mode.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut ids = 0u64;
            while Instant::now() < end {
                let t = Instant::now();
                if mode == "ferroid" {
                    ids += ferroid_stream(&mut ferroid, u64::from(per_call) * 256)
                        .await
                        .expect("StreamIds");
                } else if mode == "stream" {
                    let mut s = client
                        .stream(StreamRequest {
                            count: u64::from(per_call) * 256,
                            batch: per_call,
                        })
                        .await
                        .expect("stream")
                        .into_inner();
                    while let Some(m) = s.message().await.expect("message") {
                        ids += m.ids.len() as u64;
                    }
                } else {
                    let r = client
                        .next(NextRequest { count: per_call })
                        .await
                        .expect("next");
                    ids += r.into_inner().ids.len() as u64;
                }
                latencies.push(t.elapsed());
            }
            (latencies, ids)
        }));
    }
    let started = Instant::now();
    let mut all = Vec::new();
    let mut ids = 0;
    for t in tasks {
        let (l, n) = t.await?;
        all.extend(l);
        ids += n;
    }
    let elapsed = started.elapsed().as_secs_f64().max(seconds as f64);
    all.sort();
    let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
    println!(
        "{mode} x{per_call}, {concurrency} concurrent: {:.0} calls/s, {:.0} IDs/s, p50 {:?}, p99 {:?}, p99.9 {:?}",
        all.len() as f64 / elapsed,
        ids as f64 / elapsed,
        pct(0.5),
        pct(0.99),
        pct(0.999)
    );
    Ok(())
}
