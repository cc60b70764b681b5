//! Open HTTP stream calls between their requests, and the tokens that carry them.
//!
//! Over HTTP a stream call is a chain of requests: `/init` opens it and each `/exchange`
//! advances it one turn. Between two turns the call lives in its sealed cursor token (see
//! [`super::token`]), in one of two forms:
//!
//! * **carried**: the state's own bytes ([`StreamState::snapshot`]) and the stream's schemas
//!   are sealed into the token, and any replica holding the key resumes it through the method's
//!   [`Method::with_resume`] hook. Nothing stays behind, so the next turn may land on any replica
//!   behind a load balancer, and a replica may die between turns.
//! * **held**: a state that cannot be serialised stays in this process's [`StreamTable`] and the
//!   token names it and this replica; another replica refuses the turn, naming the holder.
//!
//! Either way every turn mints a new cursor carrying the next turn number, and a held call
//! refuses a cursor of a turn already taken. A carried cursor can be replayed until it expires,
//! as vgi-rpc's can: the state is the client's to keep.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow_schema::SchemaRef;
use quiver_wire::{schema_message, ErrorCode, ErrorReport};

use super::token::{TokenKey, TokenKind};
use crate::method::{Method, StreamState};

/// Most held calls one process keeps; the least recently used is dropped past it.
pub const HELD_STREAMS_MAX: usize = 4096;
const ID_BYTES: usize = 16;
const CARRIED: u8 = 1;
const HELD: u8 = 0;
const SCHEMA_BYTES_MAX: usize = 16 << 20;
const SCHEMA_FIELDS_MAX: usize = 100_000;

/// One stream call between two of its requests.
pub(crate) struct OpenStream {
    pub call_id: [u8; ID_BYTES],
    /// The number of the turn the next cursor names.
    pub turn: u64,
    pub request_id: String,
    pub input_schema: SchemaRef,
    pub output_schema: SchemaRef,
    pub state: Box<dyn StreamState>,
}

impl OpenStream {
    /// Whether the client ticks this stream rather than sending data: the method's declared kind,
    /// else an empty input schema (a zero-column exchange declares itself).
    pub fn is_producer(&self, method: &Method) -> bool {
        match method.stream_kind {
            crate::method::StreamKind::Producer => true,
            crate::method::StreamKind::Exchange => false,
            crate::method::StreamKind::Unknown => self.input_schema.fields().is_empty(),
        }
    }
}

/// What a call token names.
pub(crate) struct CallToken {
    pub call_id: [u8; ID_BYTES],
    pub request_id: String,
}

/// Where held calls wait, and the key and identity tokens are minted with.
pub(crate) struct StreamTable {
    key: TokenKey,
    replica: [u8; ID_BYTES],
    ttl: Duration,
    capacity: usize,
    held: Mutex<HashMap<[u8; ID_BYTES], (OpenStream, Instant)>>,
}

impl StreamTable {
    pub fn new(key: TokenKey, ttl: Duration, capacity: usize) -> Arc<StreamTable> {
        assert!(capacity > 0 && !ttl.is_zero());
        Arc::new(StreamTable {
            key,
            replica: quiver_secret::random::bytes(),
            ttl,
            capacity,
            held: Mutex::new(HashMap::new()),
        })
    }

    /// A fresh call id.
    pub fn new_call_id() -> [u8; ID_BYTES] {
        quiver_secret::random::bytes()
    }

    /// This replica's id as it appears in errors.
    pub fn replica_name(&self) -> String {
        quiver_secret::hex::encode(&self.replica[..6])
    }

    /// The call token of `stream`.
    pub fn call_token(&self, binding: &str, stream: &OpenStream) -> String {
        let mut body = stream.call_id.to_vec();
        body.extend_from_slice(stream.request_id.as_bytes());
        self.key.seal(TokenKind::Call, binding, &body, self.ttl)
    }

    pub fn open_call_token(&self, binding: &str, token: &str) -> Result<CallToken, ErrorReport> {
        let body = self
            .key
            .open(TokenKind::Call, binding, token)
            .map_err(token_error)?;
        if body.len() < ID_BYTES {
            return Err(token_error("malformed stream call token"));
        }
        Ok(CallToken {
            call_id: body[..ID_BYTES].try_into().expect("16 bytes"),
            request_id: String::from_utf8_lossy(&body[ID_BYTES..]).into_owned(),
        })
    }

    /// Parks `stream` for its next turn and returns the cursor naming it: carried in the token
    /// when the state and the method allow it, held here otherwise.
    pub fn park(&self, binding: &str, method: &Method, mut stream: OpenStream) -> String {
        stream.turn += 1;
        let snapshot = method.resume.as_ref().and_then(|_| stream.state.snapshot());
        let mut body = stream.call_id.to_vec();
        body.extend_from_slice(&stream.turn.to_be_bytes());
        match snapshot {
            Some(state) => {
                body.push(CARRIED);
                put_bytes(&mut body, &schema_message::encode(&stream.input_schema));
                put_bytes(&mut body, &schema_message::encode(&stream.output_schema));
                body.extend_from_slice(&state);
            }
            None => {
                body.push(HELD);
                body.extend_from_slice(&self.replica);
                let now = Instant::now();
                let mut held = self.held.lock().expect("stream table lock");
                held.retain(|_, (_, parked)| now.duration_since(*parked) <= self.ttl);
                while held.len() >= self.capacity {
                    let oldest = held
                        .iter()
                        .min_by_key(|(_, (_, parked))| *parked)
                        .map(|(id, _)| *id)
                        .expect("the table is not empty");
                    held.remove(&oldest);
                }
                held.insert(stream.call_id, (stream, now));
            }
        }
        self.key.seal(TokenKind::Cursor, binding, &body, self.ttl)
    }

    /// Drops a held call (its reply broke the response cap, which ends the stream).
    pub fn discard(&self, call_id: &[u8; ID_BYTES]) {
        self.held.lock().expect("stream table lock").remove(call_id);
    }

    /// The call a cursor names, taken for one turn (a held call leaves the table until it is
    /// parked again, so a second request with the same cursor is refused).
    pub fn take(
        &self,
        binding: &str,
        method: &Method,
        cursor: &str,
        call: &CallToken,
    ) -> Result<OpenStream, ErrorReport> {
        let body = self
            .key
            .open(TokenKind::Cursor, binding, cursor)
            .map_err(token_error)?;
        if body.len() < ID_BYTES + 9 {
            return Err(token_error("malformed stream cursor token"));
        }
        let call_id: [u8; ID_BYTES] = body[..ID_BYTES].try_into().expect("16 bytes");
        if call_id != call.call_id {
            return Err(token_error(
                "the stream cursor token does not belong to the supplied call token",
            ));
        }
        let turn = u64::from_be_bytes(body[ID_BYTES..ID_BYTES + 8].try_into().expect("8 bytes"));
        let rest = &body[ID_BYTES + 9..];
        match body[ID_BYTES + 8] {
            CARRIED => self.resume(method, call, turn, rest),
            HELD => self.take_held(call_id, turn, rest),
            _ => Err(token_error("malformed stream cursor token")),
        }
    }

    fn resume(
        &self,
        method: &Method,
        call: &CallToken,
        turn: u64,
        mut rest: &[u8],
    ) -> Result<OpenStream, ErrorReport> {
        let resume = method
            .resume
            .as_ref()
            .ok_or_else(|| token_error("this method cannot resume a carried stream"))?;
        let input = take_bytes(&mut rest)?;
        let output = take_bytes(&mut rest)?;
        let schema = |bytes: &[u8]| {
            schema_message::decode(bytes, SCHEMA_BYTES_MAX, SCHEMA_FIELDS_MAX)
                .map_err(|e| token_error(format!("stream cursor token schema: {e}")))
        };
        Ok(OpenStream {
            call_id: call.call_id,
            turn,
            request_id: call.request_id.clone(),
            input_schema: schema(input)?,
            output_schema: schema(output)?,
            state: resume(rest)?,
        })
    }

    fn take_held(
        &self,
        call_id: [u8; ID_BYTES],
        turn: u64,
        replica: &[u8],
    ) -> Result<OpenStream, ErrorReport> {
        if replica != self.replica {
            return Err(token_error(format!(
                "this stream's state is held by replica {} (this is replica {}); \
                 its method cannot carry its state in the token",
                quiver_secret::hex::encode(&replica[..replica.len().min(6)]),
                self.replica_name()
            )));
        }
        let mut held = self.held.lock().expect("stream table lock");
        match held.remove(&call_id) {
            Some((stream, parked)) if parked.elapsed() <= self.ttl && stream.turn == turn => {
                Ok(stream)
            }
            Some((stream, parked)) if parked.elapsed() <= self.ttl => {
                held.insert(call_id, (stream, parked));
                Err(token_error(
                    "stale stream cursor token: this turn was already taken",
                ))
            }
            _ => Err(token_error(
                "unknown or expired stream (idle past its time to live, or evicted)",
            )),
        }
    }
}

fn token_error(message: impl std::fmt::Display) -> ErrorReport {
    ErrorReport::new("RuntimeError", message.to_string()).with_code(ErrorCode::InvalidArgument)
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

fn take_bytes<'a>(rest: &mut &'a [u8]) -> Result<&'a [u8], ErrorReport> {
    let malformed = || token_error("malformed stream cursor token");
    if rest.len() < 4 {
        return Err(malformed());
    }
    let len = u32::from_be_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
    if rest.len() < 4 + len {
        return Err(malformed());
    }
    let (bytes, tail) = rest[4..].split_at(len);
    *rest = tail;
    Ok(bytes)
}
