//! The error envelope for requests hyper refuses before the router sees them. A request head over
//! hyper's own bounds (a target over 64 KiB, more than its header count, a head over its read
//! buffer) or one that does not parse is answered by hyper itself with a bare status and an empty
//! body (`400`, `414`, `431`), then the connection is closed. hyper offers no hook for that
//! answer, so the connection's writes are watched for it: a response head of one of those
//! statuses with `content-length: 0` (every answer of the gateway's own has a body) is replaced,
//! whole, by the same status with the documented JSON body.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::errors::{ApiError, Family};
use super::request_id;

/// A connection's stream whose bodiless parse-error answers gain the JSON envelope.
pub struct WithErrorBodies<S> {
    inner: S,
    /// A replacement being written, and how much of it is out; the original's length is what
    /// the writer is told was written once all of it is.
    replacing: Option<(Vec<u8>, usize, usize)>,
}

impl<S> WithErrorBodies<S> {
    pub fn new(inner: S) -> WithErrorBodies<S> {
        WithErrorBodies {
            inner,
            replacing: None,
        }
    }
}

/// The envelope answer standing in for hyper's bare `head`, if `head` is one.
fn replacement(head: &[u8]) -> Option<Vec<u8>> {
    let family = match head.get(..13)? {
        b"HTTP/1.1 400 " => Family::BadRequest,
        b"HTTP/1.1 414 " => Family::UriTooLong,
        b"HTTP/1.1 431 " => Family::HeadersTooLarge,
        _ => return None,
    };
    let text = std::str::from_utf8(head).ok()?;
    if !text.ends_with("\r\n\r\n")
        || !text
            .to_ascii_lowercase()
            .contains("\r\ncontent-length: 0\r\n")
    {
        return None;
    }
    let (status, message) = match family {
        Family::UriTooLong => ("414 URI Too Long", "the request target is too long"),
        Family::HeadersTooLarge => (
            "431 Request Header Fields Too Large",
            "the request's headers are too large or too many",
        ),
        _ => ("400 Bad Request", "the request does not parse as HTTP/1.1"),
    };
    let request_id = request_id::new_id();
    let body = ApiError::new(family, message).body(&request_id);
    Some(
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json; charset=utf-8\r\n\
             cache-control: max-age=0, private, must-revalidate\r\nx-request-id: {request_id}\r\n\
             x-content-type-options: nosniff\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

impl<S: AsyncWrite + Unpin> WithErrorBodies<S> {
    /// Writes out the replacement under way; `Ready(n)`: all of it is out, `n` the original's
    /// length.
    fn drain(&mut self, context: &mut Context<'_>) -> Poll<io::Result<usize>> {
        while let Some((bytes, written, original)) = &mut self.replacing {
            if *written == bytes.len() {
                let original = *original;
                self.replacing = None;
                return Poll::Ready(Ok(original));
            }
            let more = ready!(Pin::new(&mut self.inner).poll_write(context, &bytes[*written..]))?;
            if more == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += more;
        }
        Poll::Ready(Ok(0))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WithErrorBodies<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(context, buffer)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WithErrorBodies<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.replacing.is_none() {
            match replacement(bytes) {
                Some(envelope) => self.replacing = Some((envelope, 0, bytes.len())),
                None => return Pin::new(&mut self.inner).poll_write(context, bytes),
            }
        }
        self.drain(context)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffers: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        // A bare head is one buffer; anything else goes through as it is.
        let single = buffers.iter().filter(|buffer| !buffer.is_empty()).count() == 1;
        if self.replacing.is_some() || single {
            if let Some(first) = buffers.iter().find(|buffer| !buffer.is_empty()) {
                return self.poll_write(context, first);
            }
        }
        Pin::new(&mut self.inner).poll_write_vectored(context, buffers)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(context))?;
        Pin::new(&mut self.inner).poll_flush(context)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(context))?;
        Pin::new(&mut self.inner).poll_shutdown(context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bare_parse_error_heads_are_replaced() {
        let bare =
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let replaced = String::from_utf8(replacement(bare).unwrap()).unwrap();
        assert!(replaced.starts_with("HTTP/1.1 431 "), "{replaced}");
        let body: serde_json::Value =
            serde_json::from_str(replaced.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(body["error"]["family"], "headers_too_large");
        let ours = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\ncontent-length: 90\r\n\r\n";
        assert!(replacement(ours).is_none());
        assert!(replacement(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").is_none());
    }
}
