//! The attacks of issue 41 on a running `flakeid serve`, with a legitimate client beside
//! them, for BENCHMARKS.md: `zero-window` opens HTTP/2 connections that announce a
//! flow-control window of zero, ask `/healthz` once and answer pings (the answer can
//! never go out); `silent` opens TCP connections that send nothing. Meanwhile one
//! legitimate HTTP/1 client asks `/v1/id` on a kept-alive connection, pausing `pause_ms`
//! between requests (reconnecting when closed). Prints the legitimate client's success
//! rate and p99, the attack connections opened, and the server's resident memory at the
//! start, at the peak, and 15 s after the attack stopped.
//!
//! ```sh
//! flakeid serve --node 1 --listen 127.0.0.1:8080 &
//! cargo run --release -p flakeid-serve --example hold_attack -- 127.0.0.1:8080 $! zero-window 560 18 50 fresh
//! cargo run --release -p flakeid-serve --example hold_attack -- 127.0.0.1:8080 $! silent 500 20 1000 kept
//! ```
//!
//! Arguments: ADDR, the server's PID, `zero-window` or `silent`, new connections a
//! second, seconds, the legitimate client's pause between requests (ms), and `fresh`
//! (a new connection for each request) or `kept` (one kept alive; each time it was
//! closed under it is one more connection).

use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};

fn rss_kib(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

async fn zero_window(addr: String) {
    let Ok(tcp) = tokio::net::TcpStream::connect(&addr).await else {
        return;
    };
    let Ok((mut send, conn)) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .initial_stream_window_size(0)
        .adaptive_window(false)
        .handshake::<_, Empty<Bytes>>(TokioIo::new(tcp))
        .await
    else {
        return;
    };
    tokio::spawn(conn);
    let request = hyper::Request::get(format!("http://{addr}/healthz"))
        .body(Empty::new())
        .unwrap();
    if let Ok(response) = send.send_request(request).await {
        let _keep = (send, response);
        std::future::pending::<()>().await;
    }
}

async fn silent(addr: String) {
    if let Ok(tcp) = tokio::net::TcpStream::connect(&addr).await {
        let _keep = tcp;
        std::future::pending::<()>().await;
    }
}

/// One request on `sender` (a new connection if it is gone, or if `fresh`; counted in
/// `connects`): its latency if it got 200.
async fn ask(
    addr: &str,
    sender: &mut Option<hyper::client::conn::http1::SendRequest<Empty<Bytes>>>,
    fresh: bool,
    connects: &mut u64,
) -> Option<Duration> {
    let t = Instant::now();
    if fresh {
        *sender = None;
    }
    let attempt = async {
        if sender.as_ref().is_none_or(|s| s.is_closed()) {
            *connects += 1;
            let tcp = tokio::net::TcpStream::connect(addr).await.ok()?;
            let (s, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
                .await
                .ok()?;
            tokio::spawn(conn);
            *sender = Some(s);
        }
        let s = sender.as_mut()?;
        s.ready().await.ok()?;
        let request = hyper::Request::get(format!("http://{addr}/v1/id"))
            .header("host", addr)
            .body(Empty::new())
            .ok()?;
        let response = s.send_request(request).await.ok()?;
        let ok = response.status() == 200;
        response.into_body().collect().await.ok()?;
        ok.then_some(())
    };
    match tokio::time::timeout(Duration::from_secs(2), attempt).await {
        Ok(Some(())) => Some(t.elapsed()),
        _ => {
            *sender = None;
            None
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr = args.first().cloned().unwrap_or("127.0.0.1:8080".into());
    let pid = args.get(1).cloned().unwrap_or_default();
    let mode = args.get(2).cloned().unwrap_or("zero-window".into());
    let rate: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(500);
    let seconds: u64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(18);
    let pause = Duration::from_millis(args.get(5).and_then(|s| s.parse().ok()).unwrap_or(0));
    // `fresh`: a new connection for every request (a new client); `kept`: one kept alive.
    let fresh = args.get(6).is_some_and(|s| s == "fresh");
    let mut connects = 0u64;
    let start_rss = rss_kib(&pid);
    let end = Instant::now() + Duration::from_secs(seconds);
    let attack = {
        let (addr, mode) = (addr.clone(), mode.clone());
        tokio::spawn(async move {
            let mut opened = 0u64;
            let mut tasks = tokio::task::JoinSet::new();
            let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate.max(1)));
            while Instant::now() < end {
                tick.tick().await;
                opened += 1;
                let addr = addr.clone();
                if mode == "silent" {
                    tasks.spawn(silent(addr));
                } else {
                    tasks.spawn(zero_window(addr));
                }
            }
            (opened, tasks)
        })
    };
    let (mut ok, mut failed, mut latencies, mut peak) = (0u64, 0u64, Vec::new(), start_rss);
    let mut sender = None;
    while Instant::now() < end {
        match ask(&addr, &mut sender, fresh, &mut connects).await {
            Some(l) => {
                ok += 1;
                latencies.push(l);
            }
            None => failed += 1,
        }
        peak = peak.max(rss_kib(&pid));
        tokio::time::sleep(pause).await;
    }
    let (opened, tasks) = attack.await.unwrap();
    drop(tasks);
    tokio::time::sleep(Duration::from_secs(15)).await;
    let after = rss_kib(&pid);
    latencies.sort();
    let p99 = latencies
        .get((latencies.len() * 99 / 100).min(latencies.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default();
    println!(
        "{mode} {rate}/s for {seconds}s: {opened} opened; legitimate ({}) {ok}/{} ({:.1}%), p99 {:.1} ms, {connects} connections; RSS {} MiB at start, {} MiB peak, {} MiB 15 s after",
        if fresh {
            "a new connection each"
        } else {
            "kept alive"
        },
        ok + failed,
        100.0 * ok as f64 / (ok + failed).max(1) as f64,
        p99.as_secs_f64() * 1e3,
        start_rss / 1024,
        peak / 1024,
        after / 1024
    );
}
