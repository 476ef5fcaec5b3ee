//! The accept loop every listener shares, plain and TLS, HTTP and gRPC: `TCP_NODELAY` on
//! each connection (a one-ID answer must not wait on Nagle's algorithm and delayed ACKs),
//! and a back-off when the system refuses a connection for want of resources (`EMFILE`,
//! `ENFILE`, `ENOBUFS`, `ENOMEM`), so that a server out of descriptors waits for one to
//! come free instead of spinning on the error.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// The first pause after a refused accept; it doubles while the refusals go on.
const FIRST_PAUSE: Duration = Duration::from_millis(5);
/// The longest pause between tries.
const LAST_PAUSE: Duration = Duration::from_secs(1);

/// Accepts on `tcp` until the receiver is dropped: each connection with `TCP_NODELAY`
/// set, sent on with its peer's address. `listener` names it in the metrics
/// (`flakeid_accept_errors_total{listener}`).
pub(crate) fn accept_loop(
    tcp: TcpListener,
    listener: &'static str,
) -> mpsc::Receiver<(TcpStream, SocketAddr)> {
    // One connection waits in the channel at most: while the server is at its connection
    // cap, the rest wait in the kernel's backlog, holding no descriptor of ours.
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        let mut pause = FIRST_PAUSE;
        loop {
            let accepted = tokio::select! {
                accepted = tcp.accept() => accepted,
                _ = tx.closed() => return,
            };
            match accepted {
                Ok((stream, addr)) => {
                    pause = FIRST_PAUSE;
                    let _ = stream.set_nodelay(true);
                    if tx.send((stream, addr)).await.is_err() {
                        return;
                    }
                }
                Err(e) => {
                    metrics::counter!("flakeid_accept_errors_total", "listener" => listener)
                        .increment(1);
                    // A connection that went away before it was accepted: take the next.
                    if !out_of_resources(&e) {
                        continue;
                    }
                    if pause == FIRST_PAUSE {
                        tracing::warn!(
                            target: "flakeid_serve",
                            listener,
                            error = %e,
                            pause_ms = pause.as_millis() as u64,
                            "cannot accept a connection: out of descriptors or memory; pausing"
                        );
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => {}
                        _ = tx.closed() => return,
                    }
                    pause = (pause * 2).min(LAST_PAUSE);
                }
            }
        }
    });
    rx
}

/// Whether an accept failed for want of descriptors, buffers or memory: trying again at
/// once would fail the same way.
fn out_of_resources(e: &std::io::Error) -> bool {
    // EMFILE 24, ENFILE 23, ENOBUFS 105, ENOMEM 12 on Linux; the same names elsewhere map
    // to other numbers, so they are compared by kind where std has one.
    matches!(e.raw_os_error(), Some(24 | 23 | 105 | 12))
        || matches!(e.kind(), std::io::ErrorKind::OutOfMemory)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every accepted connection has `TCP_NODELAY` set: a small answer goes out at once,
    /// not after Nagle's algorithm waits for the client's delayed ACK.
    #[tokio::test]
    async fn accepted_connections_have_nodelay() {
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let mut accepted = accept_loop(tcp, "test");
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (stream, _) = accepted.recv().await.unwrap();
        assert!(stream.nodelay().unwrap());
    }

    /// Running out of descriptors (or memory) is told apart from a connection that went
    /// away: only the first makes the loop pause. The numbers are the C library's, not
    /// the code's.
    #[test]
    fn resource_errors_pause_the_loop() {
        for errno in [libc::EMFILE, libc::ENFILE, libc::ENOBUFS, libc::ENOMEM] {
            assert!(out_of_resources(&std::io::Error::from_raw_os_error(errno)));
        }
        for errno in [libc::ECONNABORTED, libc::ECONNRESET, libc::ETIMEDOUT] {
            assert!(!out_of_resources(&std::io::Error::from_raw_os_error(errno)));
        }
    }

    /// The error the kernel gives a process out of descriptors is one that pauses the
    /// loop: in a child process of this test binary (so that no other test is short of
    /// descriptors) limited to 32 of them, connections are opened until one is refused,
    /// and that refusal, the kernel's own, is out of resources.
    #[test]
    fn the_kernels_descriptor_limit_is_out_of_resources() {
        const NAME: &str = "accept::tests::the_kernels_descriptor_limit_is_out_of_resources";
        if std::env::var_os("FLAKEID_EMFILE_CHILD").is_some() {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let mut held = Vec::new();
            for _ in 0..64 {
                let refused = match std::net::TcpStream::connect(addr) {
                    Ok(client) => {
                        held.push(client);
                        match listener.accept() {
                            Ok((server, _)) => {
                                held.push(server);
                                continue;
                            }
                            Err(e) => e,
                        }
                    }
                    Err(e) => e,
                };
                assert!(out_of_resources(&refused), "{refused:?}");
                println!("refused as out of resources: {refused}");
                return;
            }
            panic!("64 connections under a limit of 32 descriptors");
        }
        // util-linux's prlimit starts the child with the lower limit (this crate has no
        // unsafe code to call setrlimit with).
        let out = match std::process::Command::new("prlimit")
            .arg("--nofile=32:32")
            .arg(std::env::current_exe().unwrap())
            .args(["--exact", NAME, "--nocapture", "--test-threads", "1"])
            .env("FLAKEID_EMFILE_CHILD", "1")
            .output()
        {
            Ok(out) => out,
            Err(e) if std::env::var_os("FLAKEID_REQUIRE_SERVERS").is_none() => {
                eprintln!("skipped: prlimit (util-linux) cannot be run: {e}");
                return;
            }
            Err(e) => panic!("prlimit (util-linux) cannot be run: {e}"),
        };
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && said.contains("refused as out of resources"),
            "{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
