//! A plain-text connection that never hands the password to a server that asks for it in
//! clear text or by MD5 (unless the URL's `require_auth=` lists them): the server's
//! messages are read as they arrive, up to `AuthenticationOk`, and such a request ends the
//! connection before the client can answer it. Over TLS the same scan reads the session's
//! plain text ([`crate::tls`]).

use core::pin::Pin;
use core::task::{Context, Poll};
use std::io;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::settings::AuthMethods;

/// What the refusal says, and how [`crate::errors`] knows it.
pub(crate) const REFUSED: &str = "flakeid sends a password only by SCRAM-SHA-256";

/// Reads the server's authentication requests out of its first messages.
#[derive(Debug, Clone)]
pub(crate) struct AuthScan {
    allowed: AuthMethods,
    /// The current message's first 9 bytes: type, length, and (for `R`) the request.
    head: [u8; 9],
    have: usize,
    /// Bytes of the current message still to pass over.
    skip: usize,
    /// Past `AuthenticationOk`, or past a message that is not a request: nothing more to
    /// read.
    done: bool,
}

impl AuthScan {
    pub(crate) fn new(allowed: AuthMethods) -> AuthScan {
        AuthScan {
            allowed,
            head: [0; 9],
            have: 0,
            skip: 0,
            done: false,
        }
    }

    /// Reads `bytes`, the next the server sent: `Err` with why, at a request the store
    /// does not answer.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<(), String> {
        for &b in bytes {
            if self.done {
                return Ok(());
            }
            if self.skip > 0 {
                self.skip -= 1;
                continue;
            }
            self.head[self.have] = b;
            self.have += 1;
            if self.have == 1 && b != b'R' {
                // An error or the session's first message: no request comes after it.
                self.done = true;
                return Ok(());
            }
            if self.have < 9 {
                continue;
            }
            let length =
                u32::from_be_bytes([self.head[1], self.head[2], self.head[3], self.head[4]]);
            let request =
                u32::from_be_bytes([self.head[5], self.head[6], self.head[7], self.head[8]]);
            self.have = 0;
            self.skip = (length as usize).saturating_sub(8);
            match request {
                0 => self.done = true,
                3 if !self.allowed.cleartext => {
                    return Err(format!(
                        "the server asked for the password in clear text, and {REFUSED}: make pg_hba.conf's method scram-sha-256 (and the role's password SCRAM), or list the method in the URL: require_auth=scram-sha-256,password"
                    ));
                }
                5 if !self.allowed.md5 => {
                    return Err(format!(
                        "the server asked for the password by MD5 (an answer a listener can replay and crack), and {REFUSED}: set password_encryption = scram-sha-256 and the role's password again, or list the method in the URL: require_auth=scram-sha-256,md5"
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// A stream whose incoming bytes pass through an [`AuthScan`].
pub(crate) struct Guarded<S> {
    inner: S,
    scan: AuthScan,
}

impl<S> Guarded<S> {
    pub(crate) fn new(inner: S, allowed: AuthMethods) -> Guarded<S> {
        Guarded {
            inner,
            scan: AuthScan::new(allowed),
        }
    }

    /// The stream read through.
    pub(crate) fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {}
            other => return other,
        }
        if let Err(why) = this.scan.feed(&buf.filled()[before..]) {
            // The request is not handed on: the client never answers it.
            buf.set_filled(before);
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::PermissionDenied, why)));
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(code: u32, rest: &[u8]) -> Vec<u8> {
        let mut m = vec![b'R'];
        m.extend_from_slice(&(8 + rest.len() as u32).to_be_bytes());
        m.extend_from_slice(&code.to_be_bytes());
        m.extend_from_slice(rest);
        m
    }

    /// Cleartext and MD5 requests are refused unless allowed, however the bytes are cut;
    /// SCRAM's messages pass, and nothing after `AuthenticationOk` is read.
    #[test]
    fn only_the_allowed_requests_pass_in_any_cut() {
        let scram = [
            request(10, b"SCRAM-SHA-256\0\0"),
            request(11, b"r=abc,s=def,i=4096"),
            request(12, b"v=xyz"),
            request(0, b""),
            request(3, b""),
        ]
        .concat();
        let cleartext = request(3, b"");
        let md5 = request(5, b"salt");
        for cut in 1..=scram.len() {
            let mut scan = AuthScan::new(AuthMethods::default());
            for part in scram.chunks(cut) {
                scan.feed(part).unwrap();
            }
            for (bytes, says) in [(&cleartext, "clear text"), (&md5, "MD5")] {
                let mut scan = AuthScan::new(AuthMethods::default());
                let refused = bytes
                    .chunks(cut)
                    .map(|part| scan.feed(part))
                    .find_map(Result::err);
                assert!(
                    refused.is_some_and(|r| r.contains(says)),
                    "{says} cut {cut}"
                );
            }
        }
        let mut scan = AuthScan::new(AuthMethods {
            md5: true,
            cleartext: true,
        });
        scan.feed(&[cleartext.clone(), md5.clone()].concat())
            .unwrap();
        let mut after_error = AuthScan::new(AuthMethods::default());
        after_error.feed(b"E\0\0\0\x05x").unwrap();
        after_error.feed(&cleartext).unwrap();
    }
}
