//! A TCP proxy of the tests' own, on 127.0.0.1, between a client and a server the test
//! started: it forwards bytes both ways, and on request cuts the client off right after
//! forwarding its next request (the server applies it, the reply is lost), goes down
//! (every connection closed, new ones closed at once) until brought back, or blackholes
//! (bytes held, nothing forwarded either way, connections left open: a member that stopped
//! answering, or a partition) until it heals, or holds each reply a while (a slow link).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
struct Switches {
    /// Cut the client off after forwarding its next chunk of bytes that contains these.
    cut_next: Mutex<Option<Vec<u8>>>,
    /// Close everything, accept nothing.
    down: AtomicBool,
    /// Forward nothing, close nothing.
    blackholed: AtomicBool,
    /// How long each chunk of the server's replies waits before it goes on, in µs.
    reply_delay_us: AtomicU64,
    /// The connections open now.
    active: std::sync::atomic::AtomicUsize,
    /// How many cuts happened.
    cuts: AtomicU64,
    /// The client sides of the open connections, to close when going down.
    open: Mutex<Vec<TcpStream>>,
    stop: AtomicBool,
}

/// The proxy: listening on [`Proxy::port`], forwarding to the upstream port; stopped on
/// drop.
pub struct Proxy {
    pub port: u16,
    switches: Arc<Switches>,
}

impl Proxy {
    /// A proxy to `127.0.0.1:upstream`.
    pub fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let switches = Arc::new(Switches::default());
        let s = Arc::clone(&switches);
        std::thread::spawn(move || {
            while !s.stop.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        if s.down.load(Ordering::SeqCst) {
                            drop(client);
                            continue;
                        }
                        let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                            continue;
                        };
                        s.open.lock().unwrap().push(client.try_clone().unwrap());
                        // Two pumps per connection: it is open until both end.
                        s.active.fetch_add(2, Ordering::SeqCst);
                        pump(
                            client.try_clone().unwrap(),
                            server.try_clone().unwrap(),
                            &s,
                            true,
                        );
                        pump(server, client, &s, false);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Proxy { port, switches }
    }

    /// Cuts the client off right after forwarding its next request that contains
    /// `marker`: the server still gets it (its side stays open a moment), the client never
    /// gets the reply.
    pub fn cut_after_request_containing(&self, marker: &[u8]) {
        *self.switches.cut_next.lock().unwrap() = Some(marker.to_vec());
    }

    /// How many cuts happened.
    pub fn cuts(&self) -> u64 {
        self.switches.cuts.load(Ordering::SeqCst)
    }

    /// Blackholed (nothing forwarded, nothing closed: bytes wait in the proxy) or healed
    /// (what waited goes on).
    pub fn set_blackholed(&self, blackholed: bool) {
        self.switches.blackholed.store(blackholed, Ordering::SeqCst);
    }

    /// Every chunk of the server's replies held `delay` before it goes on (a slow link
    /// or a busy server: each answer late, none lost).
    pub fn set_reply_delay(&self, delay: Duration) {
        let us = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        self.switches.reply_delay_us.store(us, Ordering::SeqCst);
    }

    /// How many connections are open through the proxy now.
    pub fn connections(&self) -> usize {
        self.switches.active.load(Ordering::SeqCst).div_ceil(2)
    }

    /// Down (every connection closed, new ones refused) or back up.
    pub fn set_down(&self, down: bool) {
        self.switches.down.store(down, Ordering::SeqCst);
        if down {
            for c in self.switches.open.lock().unwrap().drain(..) {
                let _ = c.shutdown(Shutdown::Both);
            }
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.switches.stop.store(true, Ordering::SeqCst);
        self.set_down(true);
    }
}

/// Copies `from` to `to` on a thread of its own until either side closes.
fn pump(mut from: TcpStream, mut to: TcpStream, s: &Arc<Switches>, requests: bool) {
    let s = Arc::clone(s);
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            while s.blackholed.load(Ordering::SeqCst) && !s.down.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(2));
            }
            let delay = s.reply_delay_us.load(Ordering::SeqCst);
            if !requests && delay > 0 {
                std::thread::sleep(Duration::from_micros(delay));
            }
            if s.down.load(Ordering::SeqCst) || to.write_all(&buf[..n]).is_err() {
                break;
            }
            let cut = requests && {
                let mut marker = s.cut_next.lock().unwrap();
                let hit = marker
                    .as_ref()
                    .is_some_and(|m| buf[..n].windows(m.len()).any(|w| w == m.as_slice()));
                if hit {
                    *marker = None;
                }
                hit
            };
            if cut {
                s.cuts.fetch_add(1, Ordering::SeqCst);
                // The client goes now; the server's side a moment later, once it has
                // read and applied the request.
                let _ = from.shutdown(Shutdown::Both);
                std::thread::sleep(Duration::from_millis(200));
                break;
            }
        }
        let _ = from.shutdown(Shutdown::Both);
        let _ = to.shutdown(Shutdown::Both);
        s.active.fetch_sub(1, Ordering::SeqCst);
    });
}
