//! Statements: `GetFlightInfo(CommandStatementQuery)` learns the result schema by preparing the SQL
//! and answers one endpoint whose ticket carries the SQL; `DoGet` runs it and streams the result in
//! constant memory; `DoPut(CommandStatementUpdate)` executes and counts.
//!
//! A statement that returns no result set (DDL, DML without `RETURNING`, `SET`...) runs at
//! `GetFlightInfo`, not at `DoGet`: clients send DDL through the query path and may read its empty
//! result lazily, late or never (ADBC's DB-API prepares the next statement before it reads the
//! previous result), so a `CREATE TABLE` must have happened when `GetFlightInfo` returns. Its ticket
//! says so, and its `DoGet` is the empty result.
//!
//! The stream: a blocking thread pulls DuckDB's batches one at a time (the session's open result,
//! `lease.rs`, read under `Session::with`, so the stop and `cancel` interrupt it), encodes each into
//! its Flight message and puts it in a channel of [`STREAM_MESSAGES_MAX`] messages that the gRPC
//! response drains. A slow client holds the thread at the channel; a client that goes away closes
//! it, and the thread ends, closing the result and (outside a transaction) the session. The next
//! statement on the session ends a result nobody reads to its end.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_flight::encode::{DictionaryHandling, FlightDataEncoderBuilder};
use arrow_flight::error::FlightError;
use arrow_flight::sql::{ProstMessageExt, TicketStatementQuery};
use arrow_flight::{FlightData, FlightDescriptor, FlightEndpoint, FlightInfo, SchemaAsIpc, Ticket};
use arrow_ipc::writer::IpcWriteOptions;
use arrow_schema::{DataType, Schema, SchemaRef};
use futures::{Stream, StreamExt};
use prost::bytes::Bytes;
use prost::Message;
use quiver_server_protocol::limits::{BATCH_ROWS_DEFAULT, SQL_BYTES_MAX};
use quiver_wire::BatchMessage;
use tonic::Status;

use super::lease::{superseded, Lease, Step};
use super::prepared::Parameters;
use super::result_types::ResultTypes;
use super::running::{cancelled, Registered};
use super::status::status;
use crate::duck::{Cursor, DuckError};
use crate::session::Open;

/// Encoded messages (each at most about [`FLIGHT_DATA_BYTES_MAX`]) between DuckDB and the gRPC
/// response of one stream.
pub const STREAM_MESSAGES_MAX: usize = 2;
/// The size the encoder splits a batch's message at (a DuckDB batch of 2^17 rows of a few columns
/// is a few MiB; one message per batch keeps the copy count down).
pub const FLIGHT_DATA_BYTES_MAX: usize = 4 << 20;
const TICKET_VERSION: u8 = 1;
/// Longest transaction id a ticket carries.
const TRANSACTION_ID_BYTES_MAX: usize = 255;

/// A `DoGet` response's message: finished Flight data, or a record batch whose body is still the
/// batch's own buffers (`do_get.rs` writes those straight into the transport's buffer, one copy).
pub enum DataMessage {
    /// Encoded by arrow-flight (the schema, and what the zero-copy layout does not cover).
    Encoded(FlightData),
    /// A record batch's IPC header and body slices.
    Batch(BatchMessage),
}

impl DataMessage {
    /// The message as `FlightData`, the body gathered into one buffer (a copy): for callers that
    /// need arrow-flight's type.
    pub fn into_flight_data(self) -> FlightData {
        match self {
            DataMessage::Encoded(data) => data,
            DataMessage::Batch(message) => {
                let mut body = Vec::with_capacity(message.body_len);
                for part in &message.parts {
                    body.extend_from_slice(part);
                    body.resize(body.len() + padded(part.len()) - part.len(), 0);
                }
                assert_eq!(body.len(), message.body_len, "the layout's length");
                FlightData::new()
                    .with_data_header(message.header)
                    .with_data_body(body)
            }
        }
    }
}

/// `len` rounded up to the IPC body's 8-byte alignment.
pub fn padded(len: usize) -> usize {
    len.next_multiple_of(quiver_wire::ALIGNMENT_BYTES)
}

/// A result's messages, the schema's first.
pub type MessageStream = std::pin::Pin<Box<dyn Stream<Item = Result<DataMessage, Status>> + Send>>;

/// A `DoGet` response of arrow-flight's type.
pub type DataStream = std::pin::Pin<Box<dyn Stream<Item = Result<FlightData, Status>> + Send>>;

/// `messages` as arrow-flight's type.
pub fn flight_data(messages: MessageStream) -> DataStream {
    Box::pin(messages.map(|message| message.map(DataMessage::into_flight_data)))
}

/// What a statement ticket carries: the SQL, the transaction it runs in, and whether it ran
/// already (a statement without a result set). Its bytes: a version byte, a flags byte, the
/// transaction id's length (one byte, 0 for none) and bytes, then the SQL's UTF-8.
#[derive(Debug, PartialEq, Eq)]
pub struct StatementTicket {
    /// The statement.
    pub sql: String,
    /// The transaction it runs in, if any.
    pub transaction_id: Option<Vec<u8>>,
    /// It ran at `GetFlightInfo`; its result is empty.
    pub executed: bool,
}

const FLAG_EXECUTED: u8 = 1;

impl StatementTicket {
    /// The ticket's bytes.
    pub fn encode(&self) -> Bytes {
        let id = self.transaction_id.as_deref().unwrap_or_default();
        assert!(
            id.len() <= TRANSACTION_ID_BYTES_MAX,
            "transaction ids are short"
        );
        let mut bytes = Vec::with_capacity(3 + id.len() + self.sql.len());
        bytes.push(TICKET_VERSION);
        bytes.push(if self.executed { FLAG_EXECUTED } else { 0 });
        bytes.push(id.len() as u8);
        bytes.extend_from_slice(id);
        bytes.extend_from_slice(self.sql.as_bytes());
        Bytes::from(bytes)
    }

    /// A ticket from its bytes; a clear `invalid_argument` for anything this server did not make.
    pub fn decode(bytes: &[u8]) -> Result<StatementTicket, Status> {
        let invalid = || Status::invalid_argument("not a statement ticket of this server");
        let [version, flags, id_len, rest @ ..] = bytes else {
            return Err(invalid());
        };
        if *version != TICKET_VERSION
            || *flags & !FLAG_EXECUTED != 0
            || rest.len() < usize::from(*id_len)
        {
            return Err(invalid());
        }
        let (id, sql) = rest.split_at(usize::from(*id_len));
        let sql = check_sql(std::str::from_utf8(sql).map_err(|_| invalid())?)?;
        Ok(StatementTicket {
            sql: sql.to_string(),
            transaction_id: (!id.is_empty()).then(|| id.to_vec()),
            executed: *flags & FLAG_EXECUTED != 0,
        })
    }
}

/// `sql`, if within [`SQL_BYTES_MAX`].
pub fn check_sql(sql: &str) -> Result<&str, Status> {
    if sql.len() > SQL_BYTES_MAX {
        return Err(Status::resource_exhausted(format!(
            "sql of {} bytes exceeds the limit of {SQL_BYTES_MAX}",
            sql.len()
        )));
    }
    Ok(sql)
}

/// A transaction id from a command: `None` when absent or empty.
pub fn transaction_id(id: Option<&Bytes>) -> Result<Option<&[u8]>, Status> {
    match id {
        Some(id) if id.len() > TRANSACTION_ID_BYTES_MAX => Err(super::transactions::unknown()),
        Some(id) if !id.is_empty() => Ok(Some(id.as_ref())),
        _ => Ok(None),
    }
}

/// Plans `ticket`'s statement on `lease`: the schema its result will have (learnt by preparing
/// it), and whether it ran already — a statement without a result set runs here (see the module's
/// documentation) and has the empty schema. Blocks on DuckDB.
pub fn plan(lease: &Lease, ticket: &mut StatementTicket) -> Result<SchemaRef, Status> {
    let (prepared, _, schema) = lease
        .with(|open| open.duck.prepare(&ticket.sql))
        .map_err(status)?;
    drop(prepared);
    if let Some(schema) = schema {
        return Ok(schema);
    }
    lease.session().note_statement(&ticket.sql);
    lease
        .with(|open| open.duck.execute(&ticket.sql, None, None))
        .map_err(status)?;
    ticket.executed = true;
    Ok(Arc::new(Schema::empty()))
}

/// The `FlightInfo` of a result read with `ticket` (one endpoint, no location: the client reads it
/// on the channel it asked on).
pub fn flight_info(
    schema: &Schema,
    ticket: Bytes,
    descriptor: FlightDescriptor,
) -> Result<FlightInfo, Status> {
    let endpoint = FlightEndpoint::new().with_ticket(Ticket::new(ticket));
    Ok(FlightInfo::new()
        .try_with_schema(schema)
        .map_err(|e| Status::internal(format!("result schema: {e}")))?
        .with_endpoint(endpoint)
        .with_descriptor(descriptor))
}

/// `GetFlightInfo(CommandStatementQuery)`'s ticket: a `TicketStatementQuery` over ours.
pub fn statement_ticket(ticket: &StatementTicket) -> Bytes {
    TicketStatementQuery {
        statement_handle: ticket.encode(),
    }
    .as_any()
    .encode_to_vec()
    .into()
}

/// Starts the query `start` opens on `lease` and streams its result. Blocks on DuckDB until the
/// query has started (so its error is the call's), then streams from a blocking thread. The result
/// is the session's open result (`lease.rs`): a later statement on the session ends it.
///
/// `read` is the read's place among the running ones (`running.rs`): cancelled, it stops the
/// query before it starts or at its next batch. The batches arrive in `types`
/// (`result_types.rs`).
pub fn stream(
    lease: Lease,
    read: Option<Registered>,
    types: ResultTypes,
    start: impl FnOnce(&mut Open) -> Result<Cursor, DuckError>,
) -> Result<MessageStream, Status> {
    if let Some(read) = &read {
        read.read().attach(lease.session())?;
    }
    let cancelled = read.as_ref().map(|r| Arc::clone(r.read()));
    let (number, schema) = lease
        .start_result(|open| {
            // Inside the session's lock, where a cancel's interrupt reaches the statement.
            if cancelled.as_ref().is_some_and(|read| read.is_cancelled()) {
                return Err(DuckError {
                    type_name: "Interrupt".into(),
                    message: cancelled_message(),
                });
            }
            start(open)
        })
        .map_err(status)?;
    let schema = types.schema(&schema);
    let (sender, receiver) = tokio::sync::mpsc::channel(STREAM_MESSAGES_MAX);
    let runtime = tokio::runtime::Handle::current();
    let batches = Batches {
        lease,
        number,
        schema,
        read,
        types,
    };
    tokio::task::spawn_blocking(move || pump(&runtime, batches, sender));
    let messages = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|item| (item, receiver))
    });
    Ok(Box::pin(messages))
}

/// A result's batches, pulled from DuckDB as they are asked for; dropped before its end (the
/// client went away), it closes the result.
struct Batches {
    lease: Lease,
    number: u64,
    schema: SchemaRef,
    read: Option<Registered>,
    types: ResultTypes,
}

impl Iterator for Batches {
    type Item = Result<RecordBatch, FlightError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.read.as_ref().is_some_and(|r| r.read().is_cancelled()) {
            return Some(Err(FlightError::Tonic(Box::new(cancelled()))));
        }
        match self.lease.next_batch(self.number) {
            Ok(Step::Batch(batch)) => Some(
                self.types
                    .batch(batch, &self.schema)
                    .map_err(|e| FlightError::Tonic(Box::new(e))),
            ),
            Ok(Step::End) => None,
            Ok(Step::Superseded) => Some(Err(FlightError::Tonic(Box::new(superseded())))),
            Err(report) => Some(Err(FlightError::Tonic(Box::new(status(report))))),
        }
    }
}

impl Drop for Batches {
    fn drop(&mut self) {
        self.lease.end_result(self.number);
    }
}

type Sender = tokio::sync::mpsc::Sender<Result<DataMessage, Status>>;

/// Makes the Flight messages (the schema's first) on this blocking thread and moves them into the
/// channel until the result ends, fails, or the client goes: the encoding is done here, beside
/// DuckDB, so the runtime's workers only hand finished messages to the transport. A batch whose
/// columns the zero-copy layout covers travels as its own buffers (written once, by the
/// transport's encoder); any other batch, and every result with dictionaries (whose dictionary
/// messages arrow-flight's encoder makes), takes arrow-flight's encoder.
fn pump(runtime: &tokio::runtime::Handle, mut batches: Batches, sender: Sender) {
    let schema = Arc::clone(&batches.schema);
    if schema
        .fields()
        .iter()
        .any(|f| has_dictionary(f.data_type()))
    {
        let encoder = encoder(schema).build(futures::stream::iter(batches));
        drive(runtime, encoder, &sender);
        return; // dropping the encoder dropped its input: the result, then the session
    }
    let options = IpcWriteOptions::default();
    let schema_message = FlightData::from(SchemaAsIpc::new(&schema, &options));
    if sender
        .blocking_send(Ok(DataMessage::Encoded(schema_message)))
        .is_err()
    {
        return;
    }
    for batch in batches.by_ref() {
        let batch = match batch {
            Ok(batch) => batch,
            Err(error) => {
                let _ = sender.blocking_send(Err(Status::from(error)));
                return;
            }
        };
        match BatchMessage::of(&batch) {
            Some(message) if message.body_len <= FLIGHT_DATA_BYTES_MAX => {
                if sender
                    .blocking_send(Ok(DataMessage::Batch(message)))
                    .is_err()
                {
                    return; // the client went away
                }
            }
            // arrow-flight's encoder splits a large batch into messages within the limit; its
            // first message is the schema, sent already.
            _ => {
                let encoder = encoder(Arc::clone(&schema))
                    .build(futures::stream::iter([Ok(batch)]))
                    .skip(1);
                if !drive(runtime, encoder, &sender) {
                    return;
                }
            }
        }
    }
}

/// arrow-flight's encoder for a result of `schema`. Dictionaries are sent, not hydrated: the
/// schema `GetFlightInfo` answered has them (an `ENUM` column is a dictionary), and clients check
/// that the stream's schema is that one.
fn encoder(schema: SchemaRef) -> FlightDataEncoderBuilder {
    FlightDataEncoderBuilder::new()
        .with_schema(schema)
        .with_max_flight_data_size(FLIGHT_DATA_BYTES_MAX)
        .with_dictionary_handling(DictionaryHandling::Resend)
}

/// Moves `encoder`'s messages into the channel; whether the stream goes on (the client is there
/// and nothing failed). The encoder never waits on its input (an iterator), so `block_on` only
/// drives it.
fn drive(
    runtime: &tokio::runtime::Handle,
    mut encoder: impl Stream<Item = Result<FlightData, FlightError>> + Unpin,
    sender: &Sender,
) -> bool {
    while let Some(message) = runtime.block_on(encoder.next()) {
        let failed = message.is_err();
        let message = message.map(DataMessage::Encoded).map_err(Status::from);
        if sender.blocking_send(message).is_err() || failed {
            return false;
        }
    }
    true
}

fn has_dictionary(data_type: &DataType) -> bool {
    match data_type {
        DataType::Dictionary(..) => true,
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => has_dictionary(f.data_type()),
        DataType::Struct(fields) => fields.iter().any(|f| has_dictionary(f.data_type())),
        DataType::Union(fields, _) => fields.iter().any(|(_, f)| has_dictionary(f.data_type())),
        DataType::RunEndEncoded(_, values) => has_dictionary(values.data_type()),
        _ => false,
    }
}

fn cancelled_message() -> String {
    cancelled().message().to_string()
}

/// The result of a statement that ran at `GetFlightInfo`: no rows, no columns.
pub fn empty_result() -> MessageStream {
    let schema = Arc::new(Schema::empty());
    let encoded = FlightDataEncoderBuilder::new()
        .with_schema(schema)
        .build(futures::stream::empty())
        .map(|item| item.map(DataMessage::Encoded).map_err(Status::from));
    Box::pin(encoded)
}

/// Rows a statement reports to a Flight client: DuckDB's count, or 0 when it reports none (DDL).
/// Not Flight SQL's -1 ("unknown"): the JDBC driver takes an update count of -1 for a result set
/// and fetches one with `GetFlightInfo`, which would run the statement a second time
/// (tests/test_flight_sql_jdbc.py); JDBC's own rule is 0 for a statement that returns nothing.
pub fn record_count(rows: Option<i64>) -> i64 {
    rows.unwrap_or(0)
}

/// Runs `sql` on `lease`, once per parameter row when there are parameters; the rows it changed.
/// Blocks on DuckDB.
pub fn execute(lease: &Lease, sql: &str, parameters: Option<&Parameters>) -> Result<i64, Status> {
    let parameters = parameters.map(Parameters::stream);
    lease.session().note_statement(sql);
    let rows = lease
        .with(|open| open.duck.execute(sql, parameters, None))
        .map_err(status)?;
    Ok(record_count(rows))
}

/// Rows per batch DuckDB produces for a Flight result.
pub const BATCH_ROWS: i64 = BATCH_ROWS_DEFAULT;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_round_trip_and_refuse_foreign_bytes() {
        for transaction_id in [None, Some(b"0123abcd".to_vec())] {
            for executed in [false, true] {
                let ticket = StatementTicket {
                    sql: "SELECT 'é'".into(),
                    transaction_id: transaction_id.clone(),
                    executed,
                };
                assert_eq!(StatementTicket::decode(&ticket.encode()).unwrap(), ticket);
            }
        }
        let foreign: [&[u8]; 6] = [
            b"",
            b"\x01\x00",
            b"\x02\x00\x00SELECT 1",
            b"\x01\x02\x00SELECT 1",
            b"\x01\x00\x05abc",
            b"\x01\x00\x00\xff",
        ];
        for bad in foreign {
            let error = StatementTicket::decode(bad).unwrap_err();
            assert_eq!(error.code(), tonic::Code::InvalidArgument);
        }
    }
}
