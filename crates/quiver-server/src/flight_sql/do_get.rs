//! `DoGet` served with no copy of the result's data on the gRPC side: arrow-flight's generated
//! server, and tonic's encoder under any service, copy every message into tonic's frame buffer
//! before the transport copies it again into the socket. Here a statement's and a prepared
//! statement's batches travel as their own buffers (`statements::DataMessage::Batch`) and the
//! response body ([`DataBody`], `data_body.rs`) hands those buffers to the transport as they are.
//!
//! [`Routed`] sends the `DoGet` path here and every other path to the generated server. tonic still
//! reads the request (limits, errors and response headers are its own); the handler's messages are
//! taken from it ([`Captured`]) and become the response's body. Other tickets (catalog listings,
//! SqlInfo) take the generated service's `do_get`, credentials included; the two data tickets check
//! the credentials here, through the same gate.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::sql::{Any, CommandPreparedStatementQuery, TicketStatementQuery};
use arrow_flight::Ticket;
use std::sync::Mutex;

use futures::StreamExt;
use prost::Message;
use tonic::body::Body;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::{http, BoxFuture, Service};
use tonic::server::{Grpc, NamedService, ServerStreamingService};
use tonic::{Request, Response, Status};

use super::auth::{Authenticated, Gate};
use super::data_body::DataBody;
use super::result_types::ResultTypes;
use super::service::FlightSql;
use super::statements::{DataMessage, MessageStream};

const DO_GET_PATH: &str = "/arrow.flight.protocol.FlightService/DoGet";

/// The Flight service with `DoGet` served by [`DoGet`].
#[derive(Clone)]
pub struct Routed {
    flight: FlightServiceServer<Authenticated<FlightSql>>,
    do_get: DoGet,
    message_bytes_max: usize,
}

impl Routed {
    /// `service` behind `gate`, no message over `message_bytes_max` bytes either way.
    pub fn new(service: FlightSql, gate: Gate, message_bytes_max: usize) -> Routed {
        let authenticated = Arc::new(Authenticated::new(service.clone(), gate));
        let flight = FlightServiceServer::from_arc(Arc::clone(&authenticated))
            .max_decoding_message_size(message_bytes_max)
            .max_encoding_message_size(message_bytes_max);
        Routed {
            flight,
            do_get: DoGet {
                service,
                authenticated,
            },
            message_bytes_max,
        }
    }
}

impl Service<http::Request<Body>> for Routed {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        if request.uri().path() != DO_GET_PATH {
            return self.flight.call(request);
        }
        let bytes_max = self.message_bytes_max;
        let captured = Captured {
            do_get: self.do_get.clone(),
            messages: Arc::new(Mutex::new(None)),
        };
        Box::pin(async move {
            let mut grpc = Grpc::new(TicketCodec)
                .apply_max_message_size_config(Some(bytes_max), Some(bytes_max));
            let response = grpc.server_streaming(captured.clone(), request).await;
            // An answered call left its messages here; a refused one answered with its status.
            let Some(messages) = captured.take() else {
                return Ok(response);
            };
            let (parts, _nothing) = response.into_parts();
            let body = Body::new(DataBody::new(messages, bytes_max));
            Ok(http::Response::from_parts(parts, body))
        })
    }
}

impl NamedService for Routed {
    const NAME: &'static str =
        <FlightServiceServer<Authenticated<FlightSql>> as NamedService>::NAME;
}

/// `DoGet`'s handler: the data tickets' messages, or the generated service's answer.
#[derive(Clone)]
pub struct DoGet {
    service: FlightSql,
    authenticated: Arc<Authenticated<FlightSql>>,
}

impl ServerStreamingService<Ticket> for DoGet {
    type Response = DataMessage;
    type ResponseStream = MessageStream;
    type Future = BoxFuture<Response<MessageStream>, Status>;

    fn call(&mut self, request: Request<Ticket>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let raw = request.get_ref().ticket.clone();
            let command = Any::decode(&*raw).ok();
            if let Some(command) = &command {
                if command.is::<TicketStatementQuery>() {
                    this.authenticated.check(&request)?;
                    let ticket = command
                        .unpack::<TicketStatementQuery>()
                        .map_err(|e| Status::invalid_argument(e.to_string()))?
                        .expect("is() said so");
                    let types = ResultTypes::of(request.metadata())?;
                    let messages = this.service.statement_messages(ticket, raw, types).await?;
                    return Ok(Response::new(messages));
                }
                if command.is::<CommandPreparedStatementQuery>() {
                    this.authenticated.check(&request)?;
                    let query = command
                        .unpack::<CommandPreparedStatementQuery>()
                        .map_err(|e| Status::invalid_argument(e.to_string()))?
                        .expect("is() said so");
                    let types = ResultTypes::of(request.metadata())?;
                    let peer = request.remote_addr();
                    let messages = this
                        .service
                        .prepared_messages(query, raw, types, peer)
                        .await?;
                    return Ok(Response::new(messages));
                }
            }
            let answer = FlightService::do_get(&*this.authenticated, request).await?;
            let messages: MessageStream = Box::pin(
                answer
                    .into_inner()
                    .map(|data| data.map(DataMessage::Encoded)),
            );
            Ok(Response::new(messages))
        })
    }
}

/// `DoGet` as tonic calls it: [`DoGet`]'s messages kept aside for the response body, and no
/// message for tonic to encode.
#[derive(Clone)]
struct Captured {
    do_get: DoGet,
    messages: Arc<Mutex<Option<MessageStream>>>,
}

impl Captured {
    fn take(&self) -> Option<MessageStream> {
        self.messages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}

/// What tonic is given to encode: nothing (the messages go out through [`DataBody`]).
enum Nothing {}

type NoMessages = futures::stream::Empty<Result<Nothing, Status>>;

impl ServerStreamingService<Ticket> for Captured {
    type Response = Nothing;
    type ResponseStream = NoMessages;
    type Future = BoxFuture<Response<NoMessages>, Status>;

    fn call(&mut self, request: Request<Ticket>) -> Self::Future {
        let mut do_get = self.do_get.clone();
        let slot = Arc::clone(&self.messages);
        Box::pin(async move {
            let response = do_get.call(request).await?;
            let (metadata, messages, extensions) = response.into_parts();
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(messages);
            Ok(Response::from_parts(
                metadata,
                futures::stream::empty(),
                extensions,
            ))
        })
    }
}

/// `DoGet`'s codec for tonic: a `Ticket` in, nothing out.
struct TicketCodec;

impl Codec for TicketCodec {
    type Encode = Nothing;
    type Decode = Ticket;
    type Encoder = NothingEncoder;
    type Decoder = TicketDecoder;

    fn encoder(&mut self) -> NothingEncoder {
        NothingEncoder
    }

    fn decoder(&mut self) -> TicketDecoder {
        TicketDecoder
    }
}

/// The encoder of no message.
struct NothingEncoder;

impl Encoder for NothingEncoder {
    type Item = Nothing;
    type Error = Status;

    fn encode(&mut self, item: Nothing, _dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        match item {}
    }
}

/// Reads the `Ticket`.
pub struct TicketDecoder;

impl Decoder for TicketDecoder {
    type Item = Ticket;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Ticket>, Status> {
        Ticket::decode(src)
            .map(Some)
            .map_err(|e| Status::invalid_argument(format!("not a Flight ticket: {e}")))
    }
}
