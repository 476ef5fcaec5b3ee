//! hyper's own answers to HTTP/1 requests it cannot read, as JSON: a request line or
//! header it cannot parse (400), a request target past its buffer (414), more header
//! fields than it reads (431). hyper writes these itself, with no body, before any
//! service sees a request; the connection's writer ([`JsonErrors`]) recognises each such
//! head (a status of these three, then `connection: close` and `content-length: 0`,
//! which no response of the service starts with) and sends in its place the same status
//! with `{"error": ...}`, as every other error of the service has. Everything else passes
//! through untouched.
//!
//! The heads are hyper's exact bytes: `cli/tests/serve_limits.rs`
//! (`requests_hyper_cannot_read_get_json_errors`) sends each kind of request to the built
//! server and fails unless the answer is the JSON one, so a hyper upgrade that changes
//! them fails that test instead of passing bodiless errors through.

use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The heads hyper writes for a request it cannot read, and what the body says instead.
const HYPER_ERRORS: [(&[u8], &str); 3] = [
    (
        b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n",
        "the request could not be read as HTTP/1.1: send a request line METHOD /PATH HTTP/1.1, then headers of the form Name: value, each line ending in CRLF, then an empty line",
    ),
    (
        b"HTTP/1.1 414 URI Too Long\r\nconnection: close\r\ncontent-length: 0\r\n",
        "the request target is longer than the server reads: send a shorter path and query",
    ),
    (
        b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\n",
        "the request has more header fields than the server reads (100): send fewer headers",
    ),
];

/// The JSON response that replaces `head` if it is one of hyper's own bodiless error
/// heads (the whole head, up to its empty line, and nothing after it); `None` otherwise.
pub(crate) fn rewrite(head: &[u8]) -> Option<Vec<u8>> {
    let (prefix, message) = HYPER_ERRORS
        .iter()
        .find(|(prefix, _)| head.starts_with(prefix))?;
    // The rest of the head: hyper's `date` line and the empty line, nothing more.
    let rest = &head[prefix.len()..];
    let end = rest.windows(4).position(|w| w == b"\r\n\r\n");
    let whole = rest == b"\r\n" || end.is_some_and(|at| at + 4 == rest.len());
    if !whole {
        return None;
    }
    let status_line_end = prefix.iter().position(|&b| b == b'\r')? + 2;
    let body = crate::error::error_body(message);
    let mut out = Vec::with_capacity(head.len() + body.len() + 64);
    out.extend_from_slice(&prefix[..status_line_end]);
    out.extend_from_slice(b"content-type: application/json\r\nconnection: close\r\n");
    out.extend_from_slice(format!("content-length: {}\r\n", body.len()).as_bytes());
    out.extend_from_slice(rest);
    out.extend_from_slice(body.as_bytes());
    Some(out)
}

pin_project_lite::pin_project! {
    /// A connection's I/O whose writes of hyper's own bodiless error heads become JSON
    /// responses ([`rewrite`]); reads and every other write pass through.
    pub(crate) struct JsonErrors<I> {
        #[pin]
        io: I,
        // A replacement not yet all written, and how much of it was.
        pending: Option<(Vec<u8>, usize)>,
    }
}

impl<I> JsonErrors<I> {
    pub(crate) fn new(io: I) -> JsonErrors<I> {
        JsonErrors { io, pending: None }
    }
}

impl<I: AsyncWrite> JsonErrors<I> {
    /// Writes what is left of a replacement; ready once none is.
    fn poll_pending(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let mut this = self.project();
        while let Some((bytes, written)) = this.pending.as_mut() {
            let n = ready!(this.io.as_mut().poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            *written += n;
            if *written == bytes.len() {
                *this.pending = None;
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Takes `buf` as a replacement if it is one of hyper's error heads.
    fn replace(self: Pin<&mut Self>, buf: &[u8]) -> bool {
        match rewrite(buf) {
            Some(json) => {
                tracing::debug!(target: "flakeid_serve", status = %String::from_utf8_lossy(&buf[9..12]), "a request hyper could not read, answered in JSON");
                *self.project().pending = Some((json, 0));
                true
            }
            None => false,
        }
    }
}

impl<I: AsyncRead> AsyncRead for JsonErrors<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        self.project().io.poll_read(cx, buf)
    }
}

impl<I: AsyncWrite> AsyncWrite for JsonErrors<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        ready!(self.as_mut().poll_pending(cx))?;
        if self.as_mut().replace(buf) {
            // Written as far as hyper knows; the replacement goes out on the next calls.
            let _ = self.as_mut().poll_pending(cx)?;
            return Poll::Ready(Ok(buf.len()));
        }
        self.project().io.poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        ready!(self.as_mut().poll_pending(cx))?;
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if let Some(first) = bufs.iter().find(|b| !b.is_empty())
            && first.len() == total
            && self.as_mut().replace(first)
        {
            let _ = self.as_mut().poll_pending(cx)?;
            return Poll::Ready(Ok(total));
        }
        self.project().io.poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        ready!(self.as_mut().poll_pending(cx))?;
        self.project().io.poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        ready!(self.as_mut().poll_pending(cx))?;
        self.project().io.poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each of hyper's error heads becomes its status with a JSON body of the right
    /// length; a head with anything after it, and a response of the service's own, stay.
    #[test]
    fn only_hyper_s_own_bodiless_error_heads_are_rewritten() {
        let date = b"date: Fri, 04 Dec 2026 03:24:12 GMT\r\n\r\n";
        for (prefix, message) in HYPER_ERRORS {
            let head = [prefix, &date[..]].concat();
            let out = String::from_utf8(rewrite(&head).unwrap()).unwrap();
            let (head_out, body) = out.split_once("\r\n\r\n").unwrap();
            let status = std::str::from_utf8(&prefix[..12]).unwrap();
            assert!(head_out.starts_with(status), "{head_out}");
            assert!(head_out.contains("content-type: application/json"));
            assert!(head_out.contains("connection: close"));
            assert!(head_out.contains(&format!("content-length: {}", body.len())));
            assert!(head_out.ends_with("date: Fri, 04 Dec 2026 03:24:12 GMT"));
            let v: serde_json::Value = serde_json::from_str(body).unwrap();
            assert_eq!(v["error"], message);
            let more = [&head[..], b"HTTP/1.1 200 OK\r\n"].concat();
            assert_eq!(rewrite(&more), None);
        }
        let own = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(rewrite(own), None);
        assert_eq!(
            rewrite(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"),
            None
        );
    }
}
