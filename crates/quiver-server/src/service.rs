//! The `quiver.server` service of one session: every method of the protocol's table
//! (`quiver_server_protocol::methods`), bound to that session. Before a successful `connect` every
//! method answers `unauthenticated()`; the streaming methods live in `query.rs` and `insert.rs`.

use std::sync::Arc;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{ArrayRef, BinaryArray, Int64Array, StructArray};
use arrow_schema::DataType;
use quiver_rpc::{reply, CallContext, Method, Params, Service, StreamKind, StreamSetup};
use quiver_server_protocol::limits::{
    BATCH_ROWS_DEFAULT, BATCH_ROWS_MAX, IDENTIFIER_BYTES_MAX, SQL_BYTES_MAX,
};
use quiver_server_protocol::methods::{self, param};
use quiver_server_protocol::parameters::{decode_parameters, encode_schema};
use quiver_server_protocol::{errors, session, SessionInfo, PROTOCOL_NAME, PROTOCOL_VERSION};
use quiver_wire::ErrorReport;

use crate::auth::verify;
use crate::duck::batch_stream;
use crate::events::Field;
use crate::query::QueryStream;
use crate::session::Session;

/// The service one connection is served with.
pub fn session_service(session: Arc<Session>) -> Service {
    let mut service = Service::new(PROTOCOL_NAME, PROTOCOL_VERSION);
    let unary = |name: &str, params, result, body: UnaryFn| {
        let session = Arc::clone(&session);
        Method::unary(
            name,
            params,
            result,
            move |p: &Params, _: &mut CallContext<'_>| body(&session, p),
        )
    };
    service.add(unary(
        methods::CONNECT,
        methods::connect_params(),
        Some(session::connect_result()),
        connect,
    ));
    service.add(unary(
        methods::EXECUTE,
        methods::execute_params(),
        Some(methods::rows_changed_result()),
        execute,
    ));
    service.add(unary(
        methods::PREPARE,
        methods::prepare_params(),
        Some(methods::prepare_result()),
        prepare,
    ));
    service.add(unary(
        methods::EXECUTE_PREPARED,
        methods::execute_prepared_params(),
        Some(methods::rows_changed_result()),
        execute_prepared,
    ));
    service.add(unary(
        methods::CLOSE_PREPARED,
        methods::close_prepared_params(),
        None,
        close_prepared,
    ));
    service.add(unary(
        methods::TABLE_SCHEMA,
        methods::table_schema_params(),
        Some(methods::table_schema_result()),
        table_schema,
    ));
    service.add(unary(
        methods::CANCEL,
        methods::cancel_params(),
        Some(methods::cancel_result()),
        cancel,
    ));
    let stream = |name: &str, params, kind, body: StreamFn| {
        let session = Arc::clone(&session);
        Method::stream(
            name,
            params,
            None,
            move |p: &Params, _: &mut CallContext<'_>| body(&session, p),
        )
        .with_stream_kind(kind)
    };
    service.add(stream(
        methods::QUERY,
        methods::query_params(),
        StreamKind::Producer,
        query,
    ));
    service.add(stream(
        methods::QUERY_PREPARED,
        methods::query_prepared_params(),
        StreamKind::Producer,
        query_prepared,
    ));
    service.add(stream(
        methods::TABLES,
        methods::tables_params(),
        StreamKind::Producer,
        crate::catalog::tables,
    ));
    service.add(stream(
        methods::INSERT,
        methods::insert_params(),
        StreamKind::Exchange,
        crate::insert::insert,
    ));
    service
}

type UnaryFn = fn(&Arc<Session>, &Params) -> Result<Option<ArrayRef>, ErrorReport>;
type StreamFn = fn(&Arc<Session>, &Params) -> Result<StreamSetup, ErrorReport>;

/// A text parameter no longer than `max` bytes.
pub(crate) fn bounded_str<'p>(
    params: &'p Params,
    name: &str,
    max: usize,
) -> Result<Option<&'p str>, ErrorReport> {
    let value = params.opt_str(name)?;
    if let Some(text) = value {
        if text.len() > max {
            return Err(errors::limit(name, text.len() as u64, max as u64));
        }
    }
    Ok(value)
}

fn sql<'p>(session: &Session, params: &'p Params) -> Result<&'p str, ErrorReport> {
    let sql = bounded_str(params, param::SQL, SQL_BYTES_MAX)?
        .ok_or_else(|| errors::protocol("sql must not be null"))?;
    session.note_statement(sql);
    Ok(sql)
}

/// The nested parameters stream, as DuckDB's input.
fn parameters(params: &Params) -> Result<Option<FFI_ArrowArrayStream>, ErrorReport> {
    let Some(bytes) = params.opt_bytes(param::PARAMETERS)? else {
        return Ok(None);
    };
    let (schema, batches) = decode_parameters(bytes)?;
    Ok(Some(batch_stream(schema, batches)))
}

fn batch_rows(params: &Params) -> Result<i64, ErrorReport> {
    let rows = params
        .opt_i64(param::BATCH_ROWS)?
        .unwrap_or(BATCH_ROWS_DEFAULT);
    if !(1..=BATCH_ROWS_MAX).contains(&rows) {
        return Err(errors::limit(
            "batch_rows",
            rows.max(0) as u64,
            BATCH_ROWS_MAX as u64,
        ));
    }
    Ok(rows)
}

fn rows_changed(rows: Option<i64>) -> Option<ArrayRef> {
    Some(Arc::new(Int64Array::from(vec![rows])))
}

fn connect(session: &Arc<Session>, params: &Params) -> Result<Option<ArrayRef>, ErrorReport> {
    if session.is_hung_up() {
        return Err(errors::unauthenticated());
    }
    if session.shared.is_stopping() {
        session.hang_up();
        return Err(errors::stopping());
    }
    bounded_str(params, param::CLIENT_NAME, IDENTIFIER_BYTES_MAX)?;
    if session.token_required {
        let origin = &session.origin;
        let presented = params.opt_str(param::TOKEN)?;
        if !verify(
            &session.shared,
            origin.door,
            &origin.peer,
            origin.ip,
            presented,
        ) {
            // One answer, then the connection closes: nothing more to learn here.
            session.hang_up();
            return Err(errors::unauthenticated());
        }
    }
    if let Err(report) = session.open() {
        // A connection that cannot open (busy, stopping) is told once and closed; one already
        // open keeps serving.
        if !session.is_open() {
            session.hang_up();
        }
        return Err(report);
    }
    session.shared.events.emit(
        "session_opened",
        &[
            ("door", Field::Text(session.origin.door.as_str())),
            ("peer", Field::Text(&session.origin.peer)),
            ("session", Field::Text(&session.id)),
        ],
    );
    let info = SessionInfo {
        server_version: env!("CARGO_PKG_VERSION").to_string(),
        duckdb_version: session.shared.duckdb_version.clone(),
        session_id: session.id.clone(),
        database: session.shared.database.clone(),
    };
    Ok(Some(info.to_array()))
}

fn execute(session: &Arc<Session>, params: &Params) -> Result<Option<ArrayRef>, ErrorReport> {
    let sql = sql(session, params)?;
    let parameters = parameters(params)?;
    let rows = session.with(|open| open.duck.execute(sql, parameters, None))?;
    Ok(rows_changed(rows))
}

fn prepare(session: &Arc<Session>, params: &Params) -> Result<Option<ArrayRef>, ErrorReport> {
    let sql = sql(session, params)?;
    let (prepared, parameter_count, schema) = session.with(|open| open.duck.prepare(sql))?;
    let statement_id = session.with(|open| Ok(open.keep_prepared(prepared)))??;
    let schema_bytes = schema.map(|schema| encode_schema(&schema));
    let fields = match methods::prepare_result().data_type() {
        DataType::Struct(fields) => fields.clone(),
        _ => unreachable!("prepare's result is a struct"),
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![statement_id])),
        Arc::new(Int64Array::from(vec![parameter_count])),
        Arc::new(BinaryArray::from(vec![schema_bytes.as_deref()])),
    ];
    Ok(Some(Arc::new(StructArray::new(fields, columns, None))))
}

fn statement_id(params: &Params) -> Result<i64, ErrorReport> {
    params.i64(param::STATEMENT_ID)
}

fn execute_prepared(
    session: &Arc<Session>,
    params: &Params,
) -> Result<Option<ArrayRef>, ErrorReport> {
    let id = statement_id(params)?;
    let parameters = parameters(params)?;
    let rows = session.with(|open| match open.prepared.get_mut(&id) {
        Some(prepared) => Ok(prepared.execute(parameters).map_err(Some)),
        None => Ok(Err(None)),
    });
    Ok(rows_changed(flatten_prepared(rows, id)?))
}

/// `with` over a lookup: the DuckDB error, or the lookup's miss as `unknown_statement`.
fn flatten_prepared<T>(
    outcome: Result<Result<T, Option<crate::duck::DuckError>>, ErrorReport>,
    id: i64,
) -> Result<T, ErrorReport> {
    match outcome? {
        Ok(value) => Ok(value),
        Err(None) => Err(errors::unknown_statement(id)),
        Err(Some(error)) => Err(error.report()),
    }
}

fn close_prepared(
    session: &Arc<Session>,
    params: &Params,
) -> Result<Option<ArrayRef>, ErrorReport> {
    let id = statement_id(params)?;
    let removed = session.with(|open| Ok(open.prepared.remove(&id)))?;
    match removed {
        Some(_) => Ok(reply::void()),
        None => Err(errors::unknown_statement(id)),
    }
}

fn table_schema(session: &Arc<Session>, params: &Params) -> Result<Option<ArrayRef>, ErrorReport> {
    let name = crate::insert::TableName::from_params(params)?;
    let schema = crate::insert::table_schema(session, &name)?;
    Ok(reply::bytes(&encode_schema(&schema)))
}

/// `cancel`, from an open session or as the one call of a connection that never authenticated:
/// there the session id (128 random bits, known only to the client that opened the session) is
/// the credential, as a cancel key is in PostgreSQL, so a client can stop its statement while
/// every `max_connections` place is taken. That connection closes after the answer.
fn cancel(session: &Arc<Session>, params: &Params) -> Result<Option<ArrayRef>, ErrorReport> {
    if session.is_open() {
        let id = params.str(param::SESSION_ID)?;
        if !quiver_server_protocol::session::is_session_id(id) {
            return Err(errors::protocol("session_id is not a session id"));
        }
        return Ok(reply::bool(
            session.shared.registry.cancel(id).unwrap_or(false),
        ));
    }
    let refused = session.is_hung_up() || session.shared.is_stopping();
    session.hang_up();
    if refused {
        return Err(errors::unauthenticated());
    }
    let origin = &session.origin;
    let id = params.opt_str(param::SESSION_ID).ok().flatten();
    match crate::auth::cancel_by_id(&session.shared, origin.door, &origin.peer, origin.ip, id) {
        Some(running) => Ok(reply::bool(running)),
        None => Err(errors::unauthenticated()),
    }
}

fn query(session: &Arc<Session>, params: &Params) -> Result<StreamSetup, ErrorReport> {
    let sql = sql(session, params)?;
    let parameters = parameters(params)?;
    let batch_rows = batch_rows(params)?;
    let cursor = session.with(|open| open.duck.query(sql, parameters, batch_rows))?;
    Ok(QueryStream::setup(Arc::clone(session), cursor))
}

fn query_prepared(session: &Arc<Session>, params: &Params) -> Result<StreamSetup, ErrorReport> {
    let id = statement_id(params)?;
    let parameters = parameters(params)?;
    let batch_rows = batch_rows(params)?;
    let cursor = session.with(|open| match open.prepared.get_mut(&id) {
        Some(prepared) => Ok(prepared.query(parameters, batch_rows).map_err(Some)),
        None => Ok(Err(None)),
    });
    let cursor = flatten_prepared(cursor, id)?;
    Ok(QueryStream::setup(Arc::clone(session), cursor))
}
