//! Middleware: a request whose body was not read to its end gets its connection
//! closed after the answer.
//!
//! actix-http drains a dropped *chunked* body before it reads the next request,
//! with no deadline: a client that sends one chunk and stalls would hold the
//! connection for good, whatever the handler answered (a 408 from
//! [`crate::http::body`], a 403 from a route that never reads bodies). It closes the
//! connection instead when the body is still referenced as the answer is sent, so
//! this middleware hands the handler a tracked view of the body and, when the
//! handler left it unfinished, keeps the request body alive inside the answer's
//! body (the answer's head is dropped before its body has been written; the body
//! lives until then). The server then closes after the answer (after
//! `startup::LINGER` for the client to close first).

use std::cell::{Cell, RefCell};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::error::PayloadError;
use actix_web::middleware::Next;
use actix_web::web::Bytes;
use actix_web::HttpMessage as _;
use futures_util::Stream;

struct Shared {
    payload: RefCell<Payload>,
    finished: Cell<bool>,
}

impl Shared {
    fn poll(&self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, PayloadError>>> {
        let mut payload = self.payload.borrow_mut();
        let poll = Pin::new(&mut *payload).poll_next(cx);
        if matches!(poll, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            self.finished.set(true);
        }
        poll
    }

    /// Reads what already arrived without waiting; true when that was the end.
    fn drain_ready(&self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        while !self.finished.get() {
            if self.poll(&mut cx).is_pending() {
                break;
            }
        }
        self.finished.get()
    }
}

/// The body as the handler sees it.
struct Tracked(Rc<Shared>);

impl Stream for Tracked {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll(cx)
    }
}

/// An answer's body that also holds the request body the handler left unread, so
/// the server sees it as still wanted until the answer is written.
pub struct HoldingBody {
    body: BoxBody,
    _unread: Option<Rc<Shared>>,
}

impl MessageBody for HoldingBody {
    type Error = Box<dyn std::error::Error>;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        Pin::new(&mut self.body).poll_next(cx)
    }
}

/// See the module documentation.
pub async fn close_after_unread_body(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<HoldingBody>, actix_web::Error> {
    let payload = req.take_payload();
    let shared = (!matches!(payload, Payload::None)).then(|| {
        Rc::new(Shared {
            payload: RefCell::new(payload),
            finished: Cell::new(false),
        })
    });
    if let Some(shared) = &shared {
        req.set_payload(Payload::Stream {
            payload: Box::pin(Tracked(shared.clone())),
        });
    }
    let res = next.call(req).await?;
    let unread = shared.filter(|s| !s.drain_ready());
    Ok(res.map_body(|_, body| HoldingBody {
        body: body.boxed(),
        _unread: unread,
    }))
}
