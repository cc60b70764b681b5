//! `DoGet` served with one copy of the result's data: arrow-flight's generated server encodes a
//! `FlightData` with prost, which copies the body arrow-flight's encoder had already gathered (a
//! copy of every buffer). Here a statement's and a prepared statement's batches travel as their own
//! buffers (`statements::DataMessage::Batch`) and [`DataEncoder`] writes `FlightData`'s fields
//! straight into tonic's frame buffer: the wire bytes are prost's, field for field
//! (`data_header` = 2, `data_body` = 1000, in field order), so every Flight client reads them.
//!
//! [`Routed`] sends the `DoGet` path here and every other path to the generated server. Other
//! tickets (catalog listings, SqlInfo) take the generated service's `do_get`, credentials
//! included; the two data tickets check the credentials here, through the same gate.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::sql::{Any, CommandPreparedStatementQuery, TicketStatementQuery};
use arrow_flight::Ticket;
use futures::StreamExt;
use prost::bytes::BufMut;
use prost::encoding::{encode_key, encode_varint, WireType};
use prost::Message;
use tonic::body::Body;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::{http, BoxFuture, Service};
use tonic::server::{Grpc, NamedService, ServerStreamingService};
use tonic::{Request, Response, Status};

use super::auth::{Authenticated, Gate};
use super::result_types::ResultTypes;
use super::service::FlightSql;
use super::statements::{padded, DataMessage, MessageStream};

const DO_GET_PATH: &str = "/arrow.flight.protocol.FlightService/DoGet";
const DATA_HEADER_FIELD: u32 = 2;
const DATA_BODY_FIELD: u32 = 1000;
/// The two fields' keys (1 and 2 bytes) and lengths (varints of at most 10 bytes).
const FIELD_PREFIXES_BYTES_MAX: usize = 1 + 10 + 2 + 10;

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
        let do_get = self.do_get.clone();
        let bytes_max = self.message_bytes_max;
        Box::pin(async move {
            let mut grpc = Grpc::new(DataCodec)
                .apply_max_message_size_config(Some(bytes_max), Some(bytes_max));
            Ok(grpc.server_streaming(do_get, request).await)
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

/// `DoGet`'s codec: a `Ticket` in, [`DataMessage`]s out.
struct DataCodec;

impl Codec for DataCodec {
    type Encode = DataMessage;
    type Decode = Ticket;
    type Encoder = DataEncoder;
    type Decoder = TicketDecoder;

    fn encoder(&mut self) -> DataEncoder {
        DataEncoder
    }

    fn decoder(&mut self) -> TicketDecoder {
        TicketDecoder
    }
}

/// Writes a [`DataMessage`] as the `FlightData` message prost would write.
pub struct DataEncoder;

impl Encoder for DataEncoder {
    type Item = DataMessage;
    type Error = Status;

    fn encode(&mut self, item: DataMessage, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        // The whole message's room at once: the buffer starts small after every message, and
        // growing it as the bytes come copies them again at every doubling.
        match item {
            DataMessage::Encoded(data) => {
                dst.reserve(data.encoded_len());
                data.encode(dst)
                    .map_err(|e| Status::internal(format!("encoding a Flight message: {e}")))
            }
            DataMessage::Batch(message) => {
                dst.reserve(message.header.len() + message.body_len + FIELD_PREFIXES_BYTES_MAX);
                write_batch(&message, dst);
                Ok(())
            }
        }
    }
}

/// `message` as `FlightData { data_header, data_body }` in prost's encoding: each field its key,
/// its length as a varint, its bytes; the body's slices each padded to 8 bytes, as its header's
/// buffer offsets say.
fn write_batch(message: &quiver_wire::BatchMessage, dst: &mut impl BufMut) {
    encode_key(DATA_HEADER_FIELD, WireType::LengthDelimited, dst);
    encode_varint(message.header.len() as u64, dst);
    dst.put_slice(&message.header);
    encode_key(DATA_BODY_FIELD, WireType::LengthDelimited, dst);
    encode_varint(message.body_len as u64, dst);
    let mut written = 0;
    for part in &message.parts {
        dst.put_slice(part);
        dst.put_bytes(0, padded(part.len()) - part.len());
        written += padded(part.len());
    }
    assert_eq!(written, message.body_len, "the body is its layout's length");
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Float64Array, Int32Array, RecordBatch, StringArray};
    use arrow_flight::FlightData;

    use super::*;

    #[test]
    fn a_batch_written_in_place_is_the_flight_data_prost_writes() {
        let batch = RecordBatch::try_from_iter([
            (
                "id",
                Arc::new(Int32Array::from(vec![Some(1), None, Some(3)])) as _,
            ),
            (
                "value",
                Arc::new(Float64Array::from(vec![0.5, 1.5, 2.5])) as _,
            ),
            (
                "name",
                Arc::new(StringArray::from(vec!["a", "bcd", ""])) as _,
            ),
        ])
        .unwrap();
        let message = quiver_wire::BatchMessage::of(&batch).unwrap();
        let mut written = Vec::new();
        write_batch(&message, &mut written);
        let expected = DataMessage::Batch(message).into_flight_data();
        assert_eq!(written, expected.encode_to_vec());
        let decoded = FlightData::decode(&written[..]).unwrap();
        let batches = arrow_flight::utils::flight_data_to_batches(&[
            FlightData::from(arrow_flight::SchemaAsIpc::new(
                &batch.schema(),
                &Default::default(),
            )),
            decoded,
        ])
        .unwrap();
        assert_eq!(batches, vec![batch]);
    }
}
