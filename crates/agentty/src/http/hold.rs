//! One write for a reply that is ready soon.
//!
//! rmcp answers a `POST` with an event stream: hyper writes the head (and the priming event) at
//! once, then the result when the tool returns, then the stream's end. On loopback each write is
//! a trip through the TCP stack for the server and a wake-up for the client, and a trivial call
//! paid two of each. So the head is held until the body has ended or [`HOLD`] has passed: a
//! reply that ends by then goes out whole, in one write with a `Content-Length`; a longer one
//! goes out with what it has so far and streams on as before. Nothing is dropped or reordered;
//! a progress notification is at most [`HOLD`] late.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::Response;
use hyper::body::{Body as HttpBody, Frame, SizeHint};

use super::body::Body;

/// How long a reply's head may wait for the rest of it.
pub const HOLD: Duration = Duration::from_millis(20);

/// `response`, its head held until its body ends or `hold` passes (see the module doc). Only
/// event streams are held; other replies are whole already.
pub async fn hold(response: Response<Body>, hold: Duration) -> Response<Body> {
    let streams = response
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !streams {
        return response;
    }
    let (mut parts, mut body) = response.into_parts();
    let mut ready = VecDeque::new();
    let deadline = tokio::time::sleep(hold);
    tokio::pin!(deadline);
    let ended = loop {
        tokio::select! {
            biased;
            // `frame()` only polls the body: dropping it for the deadline loses nothing.
            frame = body.frame() => match frame {
                Some(Ok(frame)) => ready.push_back(frame),
                Some(Err(never)) => match never {},
                None => break true,
            },
            () = &mut deadline => break false,
        }
    };
    if ended && ready.iter().all(Frame::is_data) {
        let mut whole = BytesMut::new();
        for frame in ready {
            if let Ok(data) = frame.into_data() {
                whole.extend_from_slice(&data);
            }
        }
        parts.headers.remove(hyper::header::TRANSFER_ENCODING);
        return Response::from_parts(parts, Full::new(whole.freeze()).boxed());
    }
    let rest = if ended { None } else { Some(body) };
    Response::from_parts(parts, Prepended { ready, rest }.boxed())
}

/// Frames read already, then the rest of the body.
struct Prepended {
    ready: VecDeque<Frame<Bytes>>,
    rest: Option<Body>,
}

impl HttpBody for Prepended {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(frame) = self.ready.pop_front() {
            return Poll::Ready(Some(Ok(frame)));
        }
        match self.rest.as_mut() {
            Some(rest) => Pin::new(rest).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ready.is_empty() && self.rest.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::channel::{Channel, Sender};

    fn event_stream() -> (Sender<Bytes>, Response<Body>) {
        let (tx, body) = Channel::<Bytes, Infallible>::new(4);
        let response = Response::builder()
            .header(hyper::header::CONTENT_TYPE, "text/event-stream")
            .header(hyper::header::TRANSFER_ENCODING, "chunked")
            .body(body.boxed())
            .unwrap();
        (tx, response)
    }

    async fn text(body: Body) -> String {
        String::from_utf8(body.collect().await.unwrap().to_bytes().to_vec()).unwrap()
    }

    #[tokio::test]
    async fn a_reply_that_ends_in_time_is_one_body_with_its_length() {
        let (mut tx, response) = event_stream();
        tx.send_data(Bytes::from("data: \n\n")).await.unwrap();
        tx.send_data(Bytes::from("data: {}\n\n")).await.unwrap();
        drop(tx);
        // The hold is long: the reply ends long before it, and is not kept waiting.
        let held = hold(response, Duration::from_secs(3600)).await;
        assert!(
            held.headers()
                .get(hyper::header::TRANSFER_ENCODING)
                .is_none()
        );
        assert_eq!(held.body().size_hint().exact(), Some(18));
        assert_eq!(text(held.into_body()).await, "data: \n\ndata: {}\n\n");
    }

    #[tokio::test]
    async fn a_reply_still_running_after_the_hold_streams_on_in_order() {
        let (mut tx, response) = event_stream();
        tx.send_data(Bytes::from("a")).await.unwrap();
        tx.send_data(Bytes::from("b")).await.unwrap();
        // Nothing ends the body: the hold must give up and hand over what it has.
        let held = hold(response, Duration::from_millis(10)).await;
        assert!(
            held.headers()
                .get(hyper::header::TRANSFER_ENCODING)
                .is_some()
        );
        let reader = tokio::spawn(text(held.into_body()));
        tx.send_data(Bytes::from("c")).await.unwrap();
        drop(tx);
        assert_eq!(reader.await.unwrap(), "abc");
    }

    #[tokio::test]
    async fn other_replies_are_not_held() {
        let (_tx, body) = Channel::<Bytes, Infallible>::new(1);
        let response = Response::new(body.boxed());
        // A body that never ends, and a hold that never passes: only not holding returns.
        let held = hold(response, Duration::from_secs(3600)).await;
        assert!(!held.body().is_end_stream());
    }
}
