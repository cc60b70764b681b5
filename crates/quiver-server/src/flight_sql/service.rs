//! The Flight SQL service: arrow-flight's `FlightSqlService`, each command handed to the file that
//! owns it (`statements.rs`, `transactions.rs`, `sql_info.rs`), DuckDB's work on blocking threads
//! so no gRPC worker waits on a statement, and every error mapped to a gRPC status in one place
//! (`status.rs`). Credentials are checked before any of this (`auth.rs`).

use std::pin::Pin;
use std::sync::Arc;

use arrow_flight::flight_service_server::FlightService;
use arrow_flight::sql::metadata::{SqlInfoData, XdbcTypeInfoData};
use arrow_flight::sql::server::{FlightSqlService, PeekableFlightDataStream};
use arrow_flight::sql::{
    ActionBeginTransactionRequest, ActionBeginTransactionResult, ActionCancelQueryRequest,
    ActionCancelQueryResult, ActionClosePreparedStatementRequest,
    ActionCreatePreparedStatementRequest, ActionCreatePreparedStatementResult,
    ActionEndTransactionRequest, CommandGetCatalogs, CommandGetDbSchemas, CommandGetPrimaryKeys,
    CommandGetSqlInfo, CommandGetTableTypes, CommandGetTables, CommandGetXdbcTypeInfo,
    CommandPreparedStatementQuery, CommandPreparedStatementUpdate, CommandStatementIngest,
    CommandStatementQuery, CommandStatementUpdate, DoPutPreparedStatementResult, EndTransaction,
    ProstMessageExt, SqlInfo, TicketStatementQuery,
};
use arrow_flight::{
    Action, ActionType, FlightDescriptor, FlightInfo, HandshakeRequest, HandshakeResponse, Ticket,
};
use futures::Stream;
use prost::bytes::Bytes;
use prost::Message;
use tonic::metadata::MetadataValue;
use tonic::{Request, Response, Status, Streaming};

use super::auth;
use super::call_guards::{AbandonOnDrop, InterruptOnDrop};
use super::cancel;
use super::catalog::{self, metadata_info, one_batch};
use super::ingest;
use super::lease::{Lease, OwnedSession};
use super::prepared::{self, PreparedStatements};
use super::result_types::ResultTypes;
use super::running::{Registered, Running};
use super::statements::{self, MessageStream, StatementTicket, BATCH_ROWS};
use super::status::blocking;
use super::transactions::Transactions;
use crate::auth::Token;
use crate::server::Shared;

/// The service of one server.
#[derive(Clone)]
pub struct FlightSql {
    shared: Arc<Shared>,
    transactions: Arc<Transactions>,
    prepared: Arc<PreparedStatements>,
    running: Arc<Running>,
    sql_info: Arc<SqlInfoData>,
    type_info: Arc<XdbcTypeInfoData>,
}

type Answer<T> = Result<Response<T>, Status>;
type DoGetStream = <FlightSql as FlightService>::DoGetStream;

impl FlightSql {
    /// The service over `shared`'s database, with its transactions and prepared statements.
    pub fn new(
        shared: Arc<Shared>,
        transactions: Arc<Transactions>,
        prepared: Arc<PreparedStatements>,
    ) -> FlightSql {
        FlightSql {
            shared,
            transactions,
            prepared,
            running: Arc::new(Running::default()),
            sql_info: Arc::new(super::sql_info::sql_info()),
            type_info: Arc::new(super::type_info::type_info()),
        }
    }

    /// `DoGet(TicketStatementQuery)`'s messages: the statement's result. `raw` is the ticket's
    /// bytes, what `CancelFlightInfo` names the read by.
    pub async fn statement_messages(
        &self,
        ticket: TicketStatementQuery,
        raw: Bytes,
        types: ResultTypes,
    ) -> Result<MessageStream, Status> {
        let ticket = StatementTicket::decode(&ticket.statement_handle)?;
        if ticket.executed {
            return Ok(statements::empty_result());
        }
        self.read_result(ticket.transaction_id.clone(), raw, move |lease, read| {
            lease.session().note_statement(&ticket.sql);
            statements::stream(lease, Some(read), types, |open| {
                open.duck.query(&ticket.sql, None, BATCH_ROWS)
            })
        })
        .await
    }

    /// The prepared statement `handle`, with the transaction it runs in now (see
    /// [`Transactions::current`]) for a call from `peer`.
    fn prepared_for_call(
        &self,
        handle: &[u8],
        peer: Option<std::net::SocketAddr>,
    ) -> Result<prepared::Statement, Status> {
        let mut statement = self.prepared.get(handle)?;
        if let Some(id) = &statement.transaction_id {
            statement.transaction_id = Some(self.transactions.current(id, peer));
        }
        Ok(statement)
    }

    /// `DoGet(CommandPreparedStatementQuery)`'s messages: the prepared statement's result with
    /// its bound parameters.
    pub async fn prepared_messages(
        &self,
        query: CommandPreparedStatementQuery,
        raw: Bytes,
        types: ResultTypes,
        peer: Option<std::net::SocketAddr>,
    ) -> Result<MessageStream, Status> {
        let statement = self.prepared_for_call(&query.prepared_statement_handle, peer)?;
        prepared::check_query_rows(statement.parameters.as_ref())?;
        self.read_result(statement.transaction_id.clone(), raw, move |lease, read| {
            let parameters = statement
                .parameters
                .as_ref()
                .map(prepared::Parameters::stream);
            lease.session().note_statement(&statement.sql);
            statements::stream(lease, Some(read), types, |open| {
                open.duck.query(&statement.sql, parameters, BATCH_ROWS)
            })
        })
        .await
    }

    fn token(&self) -> Option<&Token> {
        self.shared.token.as_ref()
    }

    /// Runs `work` on a blocking thread on the call's session: the transaction's, or one of its
    /// own. A call on a session of its own dropped before `work` ends (the client cancelled, timed
    /// out or went away) interrupts its statement, so DuckDB does not finish work nobody waits
    /// for. A transaction's session is not interrupted: the interrupt could land on another call's
    /// statement there, and an interrupted statement aborts the whole transaction, which the
    /// client goes on using (ADBC drops a result it did not read and runs the next statement).
    async fn on_session<T: Send + 'static>(
        &self,
        transaction_id: Option<Vec<u8>>,
        work: impl FnOnce(Lease) -> Result<T, Status> + Send + 'static,
    ) -> Result<T, Status> {
        let shared = Arc::clone(&self.shared);
        let transactions = Arc::clone(&self.transactions);
        let mut running = InterruptOnDrop::default();
        let session = Arc::clone(&running.session);
        let outcome = blocking(move || {
            let lease = match transaction_id {
                Some(id) => transactions.lease(&shared, &id)?,
                None => {
                    let lease = Arc::new(OwnedSession::open(&shared)?);
                    *session.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some(Arc::clone(lease.session()));
                    lease
                }
            };
            work(lease)
        })
        .await;
        running.finished = true;
        outcome
    }

    /// A `DoGet`'s result on its session, `read` registered for `CancelFlightInfo`. A call the
    /// client drops before its stream starts abandons the read, so its query does not start late
    /// on a transaction's session and end the result of a statement that came after it.
    async fn read_result(
        &self,
        transaction_id: Option<Vec<u8>>,
        raw: Bytes,
        start: impl FnOnce(Lease, Registered) -> Result<MessageStream, Status> + Send + 'static,
    ) -> Result<MessageStream, Status> {
        let read = self.running.register(raw);
        let abandoned = AbandonOnDrop(Some(Arc::clone(read.read())));
        let messages = self
            .on_session(transaction_id, move |lease| start(lease, read))
            .await;
        abandoned.finish();
        messages
    }
}

#[tonic::async_trait]
impl FlightSqlService for FlightSql {
    type FlightService = FlightSql;

    async fn do_handshake(
        &self,
        request: Request<Streaming<HandshakeRequest>>,
    ) -> Answer<Pin<Box<dyn Stream<Item = Result<HandshakeResponse, Status>> + Send>>> {
        let answer = auth::handshake(self.token(), request.metadata())?;
        let stream: Pin<Box<dyn Stream<Item = _> + Send>> =
            Box::pin(futures::stream::iter(vec![Ok(HandshakeResponse {
                protocol_version: 0,
                payload: Default::default(),
            })]));
        let mut response = Response::new(stream);
        if let Some(header) = answer {
            let value = MetadataValue::try_from(header.as_str()).map_err(|_| auth::refused())?;
            response.metadata_mut().insert(auth::AUTHORIZATION, value);
        }
        Ok(response)
    }

    async fn get_flight_info_statement(
        &self,
        query: CommandStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Answer<FlightInfo> {
        let sql = statements::check_sql(&query.query)?.to_string();
        let transaction_id =
            statements::transaction_id(query.transaction_id.as_ref())?.map(<[u8]>::to_vec);
        let mut ticket = StatementTicket {
            sql,
            transaction_id,
            executed: false,
        };
        let types = ResultTypes::of(request.metadata())?;
        let descriptor = request.into_inner();
        let info = self
            .on_session(ticket.transaction_id.clone(), move |lease| {
                let schema = types.schema(&statements::plan(&lease, &mut ticket)?);
                statements::flight_info(&schema, statements::statement_ticket(&ticket), descriptor)
            })
            .await?;
        Ok(Response::new(info))
    }

    async fn do_get_statement(
        &self,
        ticket: TicketStatementQuery,
        request: Request<Ticket>,
    ) -> Answer<DoGetStream> {
        let types = ResultTypes::of(request.metadata())?;
        let raw = request.into_inner().ticket;
        let messages = self.statement_messages(ticket, raw, types).await?;
        Ok(Response::new(statements::flight_data(messages)))
    }

    async fn do_put_statement_update(
        &self,
        command: CommandStatementUpdate,
        _request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        let sql = statements::check_sql(&command.query)?.to_string();
        let transaction_id =
            statements::transaction_id(command.transaction_id.as_ref())?.map(<[u8]>::to_vec);
        self.on_session(transaction_id, move |lease| {
            statements::execute(&lease, &sql, None)
        })
        .await
    }

    async fn get_flight_info_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<FlightDescriptor>,
    ) -> Answer<FlightInfo> {
        let schema = query.clone().into_builder(&self.sql_info).schema();
        metadata_info(&schema, &query, request)
    }

    async fn do_get_sql_info(
        &self,
        query: CommandGetSqlInfo,
        _request: Request<Ticket>,
    ) -> Answer<DoGetStream> {
        let batch = query
            .into_builder(&self.sql_info)
            .build()
            .map_err(|e| Status::internal(format!("sql info: {e}")))?;
        Ok(Response::new(one_batch(batch)))
    }

    async fn do_action_begin_transaction(
        &self,
        _query: ActionBeginTransactionRequest,
        request: Request<arrow_flight::Action>,
    ) -> Result<ActionBeginTransactionResult, Status> {
        let id = self
            .transactions
            .begin(&self.shared, request.remote_addr())?;
        Ok(ActionBeginTransactionResult {
            transaction_id: id.into(),
        })
    }

    async fn do_action_end_transaction(
        &self,
        query: ActionEndTransactionRequest,
        _request: Request<arrow_flight::Action>,
    ) -> Result<(), Status> {
        let commit = match EndTransaction::try_from(query.action) {
            Ok(EndTransaction::Commit) => true,
            Ok(EndTransaction::Rollback) => false,
            _ => {
                return Err(Status::invalid_argument(
                    "EndTransaction: the action is neither commit nor rollback",
                ))
            }
        };
        let transactions = Arc::clone(&self.transactions);
        let id = query.transaction_id.to_vec();
        blocking(move || transactions.end(&id, commit)).await
    }

    async fn do_action_create_prepared_statement(
        &self,
        query: ActionCreatePreparedStatementRequest,
        request: Request<arrow_flight::Action>,
    ) -> Result<ActionCreatePreparedStatementResult, Status> {
        let types = ResultTypes::of(request.metadata())?;
        let sql = statements::check_sql(&query.query)?.to_string();
        let transaction_id =
            statements::transaction_id(query.transaction_id.as_ref())?.map(<[u8]>::to_vec);
        let store = Arc::clone(&self.prepared);
        let created = self
            .on_session(transaction_id.clone(), move |lease| {
                store.create(&lease, sql, transaction_id, types)
            })
            .await?;
        Ok(ActionCreatePreparedStatementResult {
            prepared_statement_handle: created.handle,
            dataset_schema: created.dataset_schema,
            parameter_schema: created.parameter_schema,
        })
    }

    async fn do_action_close_prepared_statement(
        &self,
        query: ActionClosePreparedStatementRequest,
        _request: Request<arrow_flight::Action>,
    ) -> Result<(), Status> {
        self.prepared.close(&query.prepared_statement_handle)
    }

    async fn do_put_prepared_statement_query(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<DoPutPreparedStatementResult, Status> {
        let handle = query.prepared_statement_handle;
        self.prepared.get(&handle)?;
        let parameters =
            prepared::read_parameters(request.into_inner(), self.shared.message_bytes_max).await?;
        if let Some(parameters) = parameters {
            self.prepared.bind(&handle, parameters)?;
        }
        Ok(DoPutPreparedStatementResult {
            prepared_statement_handle: Some(handle),
        })
    }

    async fn get_flight_info_prepared_statement(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Answer<FlightInfo> {
        let statement =
            self.prepared_for_call(&query.prepared_statement_handle, request.remote_addr())?;
        let types = ResultTypes::of(request.metadata())?;
        let descriptor = request.into_inner();
        if let Some(schema) = &statement.result_schema {
            prepared::check_query_rows(statement.parameters.as_ref())?;
            let ticket = query.as_any().encode_to_vec().into();
            return Ok(Response::new(statements::flight_info(
                &types.schema(schema),
                ticket,
                descriptor,
            )?));
        }
        // No result set: it runs now (see statements.rs), once per parameter row.
        let info = self
            .on_session(statement.transaction_id.clone(), move |lease| {
                statements::execute(&lease, &statement.sql, statement.parameters.as_ref())?;
                let ticket = StatementTicket {
                    sql: statement.sql,
                    transaction_id: statement.transaction_id,
                    executed: true,
                };
                let schema = arrow_schema::Schema::empty();
                statements::flight_info(&schema, statements::statement_ticket(&ticket), descriptor)
            })
            .await?;
        Ok(Response::new(info))
    }

    async fn do_get_prepared_statement(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<Ticket>,
    ) -> Answer<DoGetStream> {
        let types = ResultTypes::of(request.metadata())?;
        let peer = request.remote_addr();
        let raw = request.into_inner().ticket;
        let messages = self.prepared_messages(query, raw, types, peer).await?;
        Ok(Response::new(statements::flight_data(messages)))
    }

    async fn do_put_prepared_statement_update(
        &self,
        query: CommandPreparedStatementUpdate,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        let statement =
            self.prepared_for_call(&query.prepared_statement_handle, request.remote_addr())?;
        let sent =
            prepared::read_parameters(request.into_inner(), self.shared.message_bytes_max).await?;
        let parameters = sent.or(statement.parameters);
        self.on_session(statement.transaction_id.clone(), move |lease| {
            statements::execute(&lease, &statement.sql, parameters.as_ref())
        })
        .await
    }

    async fn do_put_statement_ingest(
        &self,
        command: CommandStatementIngest,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        let plan = ingest::plan(command.table_definition_options.as_ref())?;
        let transaction_id =
            statements::transaction_id(command.transaction_id.as_ref())?.map(<[u8]>::to_vec);
        let name = ingest::target(&command, transaction_id.is_some())?;
        let runtime = tokio::runtime::Handle::current();
        let stream = request.into_inner();
        self.on_session(transaction_id.clone(), move |lease| {
            ingest::ingest(&runtime, &lease, &name, &plan, stream)
        })
        .await
    }

    async fn get_flight_info_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<FlightDescriptor>,
    ) -> Answer<FlightInfo> {
        let schema = query.into_builder().schema();
        metadata_info(&schema, &query, request)
    }

    async fn do_get_catalogs(
        &self,
        query: CommandGetCatalogs,
        _request: Request<Ticket>,
    ) -> Answer<DoGetStream> {
        let batch = self
            .on_session(None, move |lease| catalog::catalogs(&lease, query))
            .await?;
        Ok(Response::new(one_batch(batch)))
    }

    async fn get_flight_info_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<FlightDescriptor>,
    ) -> Answer<FlightInfo> {
        let schema = query.clone().into_builder().schema();
        metadata_info(&schema, &query, request)
    }

    async fn do_get_schemas(
        &self,
        query: CommandGetDbSchemas,
        _request: Request<Ticket>,
    ) -> Answer<DoGetStream> {
        let batch = self
            .on_session(None, move |lease| catalog::db_schemas(&lease, query))
            .await?;
        Ok(Response::new(one_batch(batch)))
    }

    async fn get_flight_info_tables(
        &self,
        query: CommandGetTables,
        request: Request<FlightDescriptor>,
    ) -> Answer<FlightInfo> {
        let schema = query.clone().into_builder().schema();
        metadata_info(&schema, &query, request)
    }

    async fn do_get_tables(
        &self,
        query: CommandGetTables,
        request: Request<Ticket>,
    ) -> Answer<DoGetStream> {
        let types = ResultTypes::of(request.metadata())?;
        let batch = self
            .on_session(None, move |lease| catalog::tables(&lease, query, types))
            .await?;
        Ok(Response::new(one_batch(batch)))
    }

    async fn get_flight_info_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<FlightDescriptor>,
    ) -> Answer<FlightInfo> {
        let schema = query.into_builder().schema();
        metadata_info(&schema, &query, request)
    }

    async fn do_get_table_types(
        &self,
        query: CommandGetTableTypes,
        _request: Request<Ticket>,
    ) -> Answer<DoGetStream> {
        Ok(Response::new(one_batch(catalog::table_types(query)?)))
    }

    async fn get_flight_info_primary_keys(
        &self,
        query: CommandGetPrimaryKeys,
        request: Request<FlightDescriptor>,
    ) -> Answer<FlightInfo> {
        metadata_info(&catalog::primary_keys_schema(), &query, request)
    }

    async fn do_get_primary_keys(
        &self,
        query: CommandGetPrimaryKeys,
        _request: Request<Ticket>,
    ) -> Answer<DoGetStream> {
        let batch = self
            .on_session(None, move |lease| catalog::primary_keys(&lease, query))
            .await?;
        Ok(Response::new(one_batch(batch)))
    }

    async fn get_flight_info_xdbc_type_info(
        &self,
        query: CommandGetXdbcTypeInfo,
        request: Request<FlightDescriptor>,
    ) -> Answer<FlightInfo> {
        let schema = query.into_builder(&self.type_info).schema();
        metadata_info(&schema, &query, request)
    }

    async fn do_get_xdbc_type_info(
        &self,
        query: CommandGetXdbcTypeInfo,
        _request: Request<Ticket>,
    ) -> Answer<DoGetStream> {
        let batch = query
            .into_builder(&self.type_info)
            .build()
            .map_err(|e| Status::internal(format!("type info: {e}")))?;
        Ok(Response::new(one_batch(batch)))
    }

    /// Flight's own `CancelFlightInfo` action (arrow-flight's Flight SQL dispatch leaves it to
    /// this fallback).
    async fn do_action_fallback(
        &self,
        request: Request<Action>,
    ) -> Answer<<FlightSql as FlightService>::DoActionStream> {
        let action = request.into_inner();
        if action.r#type != cancel::CANCEL_FLIGHT_INFO {
            return Err(Status::invalid_argument(format!(
                "unknown action {:?}",
                action.r#type
            )));
        }
        let body = cancel::cancel_flight_info(&self.running, &action.body)?;
        let result = arrow_flight::Result { body };
        Ok(Response::new(Box::pin(futures::stream::iter([Ok(result)]))))
    }

    async fn list_custom_actions(&self) -> Option<Vec<Result<ActionType, Status>>> {
        Some(vec![Ok(ActionType {
            r#type: cancel::CANCEL_FLIGHT_INFO.into(),
            description: "Cancel the statements reading a FlightInfo's tickets".into(),
        })])
    }

    /// Flight SQL's older `CancelQuery` action, the same cancel.
    async fn do_action_cancel_query(
        &self,
        query: ActionCancelQueryRequest,
        _request: Request<Action>,
    ) -> Result<ActionCancelQueryResult, Status> {
        cancel::cancel_query(&self.running, &query.info)
    }

    async fn register_sql_info(&self, _id: i32, _result: &SqlInfo) {}
}
