//! The server side of the stdio transport: look-ahead for early cancellations, and
//! back-pressure.
//!
//! Cancellations that arrive with their request: "a request already cancelled starts nothing".
//! rmcp's service loop hands a request to its handler task before it reads the next message,
//! so a `notifications/cancelled` written right behind its request (often in the same write)
//! reaches the request's cancellation token only after the handler may have started the
//! process. [`LookAhead`] wraps a transport and, each time it receives, decodes every message
//! that is already readable before handing out the first. Cancellations among them are noted
//! in [`EarlyCancels`] at once, so the handler, which checks just before it starts anything,
//! sees a cancellation that was sent before it began.
//!
//! Back-pressure: a client that stops reading its replies must not have every further request
//! run and answered into memory. At most [`MAX_IN_FLIGHT`] requests are between being received
//! and having their reply written (rmcp drops the replies of cancelled requests, so a
//! cancellation ends one too); past that, nothing more is read until a reply goes out, and the
//! client's own writes block.
//!
//! Protocol hygiene ([`LineFilter`], under the transport's line reader): a line that is not JSON
//! (bad syntax, invalid UTF-8, nesting deeper than the parser takes) is answered with a parse
//! error (-32700, id null) as JSON-RPC asks, where rmcp would drop it silently; a `tools/call`
//! whose params are not `{name, arguments}` is answered with invalid params (-32602) and its id,
//! not "method not found". And the end of input is signalled at once ([`LookAhead::input_closed`]),
//! so the server ends even while a client that stopped reading keeps stdout full.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use rmcp::RoleServer;
use rmcp::model::{ClientNotification, ErrorData, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
mod line_filter;

pub use line_filter::{LineFilter, Refused};
use line_filter::{REFUSED_MARK_METHOD, Refusal};

/// Ids of requests cancelled early that no handler has asked about yet. Bounded: a client that
/// cancels ids it never sent cannot grow it.
#[derive(Debug, Default)]
pub struct EarlyCancels {
    ids: Mutex<VecDeque<RequestId>>,
}

/// Requests received whose reply is not written yet, at most.
pub const MAX_IN_FLIGHT: usize = 64;

/// The requests between being received and having their reply written.
#[derive(Debug, Default)]
struct InFlight {
    ids: Mutex<HashSet<RequestId>>,
    /// Woken when one ends.
    ended: tokio::sync::Notify,
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
        self.ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn end(&self, id: &RequestId) {
        if self.lock().remove(id) {
            self.ended.notify_waiters();
        }
    }

    /// Waits until fewer than [`MAX_IN_FLIGHT`] are in flight.
    async fn room(&self) {
        loop {
            let ended = self.ended.notified();
            if self.lock().len() < MAX_IN_FLIGHT {
                return;
            }
            ended.await;
        }
    }
}

/// How many early cancellations are remembered.
const REMEMBERED: usize = 1024;
/// At most this many messages are decoded ahead of the one handed out.
const LOOK_AHEAD: usize = 256;

impl EarlyCancels {
    fn note(&self, id: RequestId) {
        let mut ids = self
            .ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if ids.len() == REMEMBERED {
            ids.pop_front();
        }
        ids.push_back(id);
    }

    /// Whether request `id` was cancelled early (forgets it: each id is asked about once).
    pub fn take(&self, id: &RequestId) -> bool {
        let mut ids = self
            .ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match ids.iter().position(|known| known == id) {
            Some(at) => {
                ids.remove(at);
                true
            }
            None => false,
        }
    }
}

/// A server transport that decodes what is already readable ahead (see the module header).
pub struct LookAhead<T> {
    inner: T,
    queue: VecDeque<RxJsonRpcMessage<RoleServer>>,
    ended: bool,
    cancels: Arc<EarlyCancels>,
    in_flight: Arc<InFlight>,
    /// Lines the filter refused, to be answered.
    refused: Refused,
    /// Set once the input has ended.
    closed: tokio::sync::watch::Sender<bool>,
    /// The filter marked refused lines since they were last answered.
    refusals_pending: bool,
}

impl<T> LookAhead<T> {
    /// `refused`: the same as the [`LineFilter`] under `inner` got, if any.
    pub fn new(inner: T, cancels: Arc<EarlyCancels>, refused: Refused) -> Self {
        Self {
            inner,
            queue: VecDeque::new(),
            ended: false,
            cancels,
            in_flight: Arc::default(),
            refused,
            closed: tokio::sync::watch::channel(false).0,
            refusals_pending: false,
        }
    }

    /// Resolves once the input has ended (the client closed stdin).
    pub fn input_closed(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.closed.subscribe();
        async move {
            let _ = rx.wait_for(|closed| *closed).await;
        }
    }

    fn keep(&mut self, message: RxJsonRpcMessage<RoleServer>) {
        match &message {
            JsonRpcMessage::Notification(n)
                if matches!(&n.notification, ClientNotification::CustomNotification(c)
                    if c.method == REFUSED_MARK_METHOD) =>
            {
                // The filter's mark: answer what it refused; rmcp never sees it.
                self.refusals_pending = true;
                return;
            }
            JsonRpcMessage::Request(r) => {
                self.in_flight.lock().insert(r.id.clone());
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    self.cancels.note(id.clone());
                    // rmcp writes no reply for a cancelled request.
                    self.in_flight.end(id);
                }
            }
            _ => {}
        }
        self.queue.push_back(message);
    }
}

impl<T: Transport<RoleServer>> LookAhead<T> {
    /// Answers the lines the filter refused (they reached no handler).
    async fn answer_refused(&mut self) {
        let refused: Vec<Refusal> = self.refused.lock().drain(..).collect();
        for refusal in refused {
            let message = match refusal {
                Refusal::Parse(why) => TxJsonRpcMessage::<RoleServer>::error(
                    ErrorData::parse_error(format!("Parse error: {why}"), None),
                    None,
                ),
                Refusal::InvalidParams(id, why) => TxJsonRpcMessage::<RoleServer>::error(
                    ErrorData::invalid_params(why, None),
                    Some(id),
                ),
            };
            let _ = self.inner.send(message).await;
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for LookAhead<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let reply_to = match &item {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone(),
            _ => None,
        };
        let written = self.inner.send(item);
        let in_flight = self.in_flight.clone();
        async move {
            let result = written.await;
            if let Some(id) = reply_to {
                in_flight.end(&id);
            }
            result
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if self.queue.is_empty() && !self.ended {
                self.in_flight.room().await;
                match self.inner.receive().await {
                    Some(message) => self.keep(message),
                    None => self.ended = true,
                }
                // Whatever is readable now, decoded now. The inner receive is cancel-safe (a
                // partly read line stays buffered), so a poll that finds nothing is dropped.
                let mut cx = Context::from_waker(Waker::noop());
                while !self.ended
                    && self.queue.len() < LOOK_AHEAD
                    && self.in_flight.lock().len() < MAX_IN_FLIGHT
                {
                    let polled = pin!(self.inner.receive()).poll(&mut cx);
                    match polled {
                        Poll::Ready(Some(message)) => self.keep(message),
                        Poll::Ready(None) => self.ended = true,
                        Poll::Pending => break,
                    }
                }
            }
            if std::mem::take(&mut self.refusals_pending) {
                self.answer_refused().await;
            }
            // Only the filter's marks were read: read on.
            if self.queue.is_empty() && !self.ended {
                continue;
            }
            break;
        }
        if self.ended && self.queue.is_empty() {
            self.closed.send_replace(true);
        }
        self.queue.pop_front()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
