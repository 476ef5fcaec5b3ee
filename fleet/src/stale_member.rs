//! An etcd member that has not caught up, as the tests play it: an HTTP/2 proxy of the
//! tests' own in front of a real member, forwarding every gRPC call, except that while it is
//! made stale it answers lease keep-alives itself, as a member whose lessor does not know the
//! lease answers them (a leader elected a moment ago, still applying its log; a stale leader
//! resumed from a pause): with a TTL of 0, or by ending the stream without an answer.
//! Everything else (the transactions) still reaches the cluster and says the lease lives.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use bytes::{Buf, Bytes, BytesMut};
use http_body_util::{BodyExt, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};

/// What the member answers to a keep-alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// Forwarded to the real member.
    Forward = 0,
    /// A TTL of 0: "no such lease".
    TtlZero = 1,
    /// The stream ends at once (status OK) without an answer.
    Silent = 2,
}

struct State {
    mode: AtomicU8,
    /// Keep-alives the member answered itself.
    answered: AtomicU64,
}

/// The member: listening on [`StaleMember::port`], forwarding to the real member's port;
/// stopped with its runtime on drop.
pub struct StaleMember {
    pub port: u16,
    state: Arc<State>,
    _runtime: tokio::runtime::Runtime,
}

impl StaleMember {
    pub fn start(upstream: u16) -> StaleMember {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(State {
            mode: AtomicU8::new(Mode::Forward as u8),
            answered: AtomicU64::new(0),
        });
        let s = Arc::clone(&state);
        runtime.spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let s = Arc::clone(&s);
                tokio::spawn(async move {
                    let _ = client.set_nodelay(true);
                    let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await
                    else {
                        return;
                    };
                    let Ok((sender, connection)) = hyper::client::conn::http2::handshake(
                        TokioExecutor::new(),
                        TokioIo::new(server),
                    )
                    .await
                    else {
                        return;
                    };
                    tokio::spawn(connection);
                    let service = hyper::service::service_fn(move |request| {
                        let (s, mut sender) = (Arc::clone(&s), sender.clone());
                        async move { Ok::<_, Infallible>(answer(&s, &mut sender, request).await) }
                    });
                    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(client), service)
                        .await;
                });
            }
        });
        StaleMember {
            port,
            state,
            _runtime: runtime,
        }
    }

    /// From now on, keep-alives are answered as `mode` says.
    pub fn set_mode(&self, mode: Mode) {
        self.state.mode.store(mode as u8, Ordering::SeqCst);
    }

    /// How many keep-alives the member answered itself (not forwarded).
    pub fn answered(&self) -> u64 {
        self.state.answered.load(Ordering::SeqCst)
    }
}

type Body = BoxBody<Bytes, hyper::Error>;

async fn answer(
    s: &State,
    sender: &mut hyper::client::conn::http2::SendRequest<Incoming>,
    request: hyper::Request<Incoming>,
) -> hyper::Response<Body> {
    let mode = s.mode.load(Ordering::SeqCst);
    if request.uri().path() == "/etcdserverpb.Lease/LeaseKeepAlive" && mode != Mode::Forward as u8 {
        s.answered.fetch_add(1, Ordering::SeqCst);
        return keep_alive_answer(request.into_body(), mode == Mode::TtlZero as u8);
    }
    match sender.send_request(request).await {
        Ok(response) => response.map(BodyExt::boxed),
        Err(_) => hyper::Response::builder()
            .status(502)
            .body(http_body_util::Empty::new().map_err(|e| match e {}).boxed())
            .unwrap(),
    }
}

/// A keep-alive stream answered by the member itself: for each request, a response with
/// the lease's id and a TTL of 0 (`ttl_zero`), the stream ending with status OK when the
/// client's requests end; or (not `ttl_zero`) no answer, the stream ending with status OK
/// at once.
fn keep_alive_answer(mut requests: Incoming, ttl_zero: bool) -> hyper::Response<Body> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, hyper::Error>>(8);
    tokio::spawn(async move {
        let mut pending = BytesMut::new();
        while let Some(Ok(frame)) = requests.frame().await {
            if !ttl_zero {
                break;
            }
            let Ok(data) = frame.into_data() else {
                continue;
            };
            pending.extend_from_slice(&data);
            // gRPC frames: a compressed flag, a 4-byte length, the message.
            while pending.len() >= 5 {
                let len =
                    u32::from_be_bytes([pending[1], pending[2], pending[3], pending[4]]) as usize;
                if pending.len() < 5 + len {
                    break;
                }
                pending.advance(5);
                let message = pending.split_to(len);
                // LeaseKeepAliveRequest { int64 ID = 1 } -> LeaseKeepAliveResponse { int64 ID = 2 }
                // (TTL = 3 is 0, so absent).
                let id = lease_id(&message);
                let mut body = vec![0x10];
                varint(id, &mut body);
                let mut frame = vec![0u8];
                frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
                frame.extend_from_slice(&body);
                let _ = tx.send(Ok(Frame::data(Bytes::from(frame)))).await;
            }
        }
        let mut trailers = hyper::HeaderMap::new();
        trailers.insert("grpc-status", "0".parse().unwrap());
        let _ = tx.send(Ok(Frame::trailers(trailers))).await;
    });
    let body = StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx));
    hyper::Response::builder()
        .header("content-type", "application/grpc")
        .body(BodyExt::boxed(body))
        .unwrap()
}

/// Field 1 (a varint) of a message: the lease id of a keep-alive request.
fn lease_id(message: &[u8]) -> u64 {
    let mut rest = message;
    while let Some((&key, tail)) = rest.split_first() {
        let (value, tail) = read_varint(tail);
        if key == 0x08 {
            return value;
        }
        rest = tail;
    }
    0
}

fn read_varint(bytes: &[u8]) -> (u64, &[u8]) {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate() {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return (value, &bytes[i + 1..]);
        }
    }
    (value, &[])
}

fn varint(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}
