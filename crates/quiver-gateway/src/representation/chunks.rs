//! A response body sent as the chunks it is made of: a JSON body's cached head, shared with the
//! cache and never copied, then the `meta` tail written for this response. hyper writes both with
//! one vectored write and a `Content-Length` from their exact size.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Bytes;
use http_body::{Frame, SizeHint};

/// Chunks sent in order.
pub struct Chunks {
    chunks: VecDeque<Bytes>,
    remaining: u64,
}

impl Chunks {
    pub fn new(chunks: impl IntoIterator<Item = Bytes>) -> Chunks {
        let chunks: VecDeque<Bytes> = chunks.into_iter().filter(|c| !c.is_empty()).collect();
        let remaining = chunks.iter().map(|chunk| chunk.len() as u64).sum();
        Chunks { chunks, remaining }
    }
}

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let next = self.chunks.pop_front();
        if let Some(chunk) = &next {
            self.remaining -= chunk.len() as u64;
        }
        Poll::Ready(next.map(|chunk| Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn chunks_are_sent_in_order_with_their_exact_length() {
        let body = Chunks::new([
            Bytes::from_static(b"{\"data\":[]"),
            Bytes::new(),
            Bytes::from_static(b"}"),
        ]);
        assert_eq!(http_body::Body::size_hint(&body).exact(), Some(11));
        let collected = body.collect().await.unwrap().to_bytes();
        assert_eq!(&collected[..], b"{\"data\":[]}");
    }
}
