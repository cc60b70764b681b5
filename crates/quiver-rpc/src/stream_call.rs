//! An open stream call: tick a producer or exchange batches, then close or cancel.
//!
//! One state machine, [`ClientStream`], whatever holds the client: a borrow
//! ([`StreamCall`], what a caller with the client at hand uses) or an owner (the
//! client itself, or anything that contains one, such as an engine's pooled
//! connection). An owning call keeps what it needs for its whole life and gives it
//! back on close, cancel or release, so a caller that must keep the call across
//! calls of its own (a scan's state between FFI calls) holds one value.
//!
//! A producer's ticks go lockstep by default (one tick, then its batch). A caller that
//! will read many batches may let the call send ticks ahead
//! ([`ClientStream::set_ticks_ahead`]): the server, which answers each tick in order
//! and cannot tell a tick sent ahead from one sent late, then produces while the
//! client decodes, and the two sides stop waking each other once per batch.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use quiver_wire::{
    empty_schema, keys, BatchMetadata, GatherBuffer, LogRecord, StreamReader, StreamWriter,
};

use crate::client::{Client, RpcError};
use crate::http::turns::HttpTurns;

/// A stream call on a client held as `C`: `&mut Client`, `Client`, or an owner
/// of a client.
pub struct ClientStream<C: AsMut<Client>> {
    /// `None` only once released; every method runs before that.
    holder: Option<C>,
    header: Option<RecordBatch>,
    input: Option<StreamWriter>,
    output: Option<StreamReader>,
    input_ended: bool,
    done: bool,
    /// Over HTTP: the call's tokens and the answers not yet taken.
    http: Option<HttpTurns>,
    /// Most ticks sent and not yet answered (1: lockstep).
    ticks_ahead: usize,
    /// Ticks sent and not yet answered.
    ticks_in_flight: usize,
}

/// Most bytes of ticks (and the input stream's opening) a client keeps unread by the
/// server. A pipe or socket holds at least this much (`PIPE_BUF`), so writing them never
/// blocks, even while the server is itself blocked writing batches the client has not
/// read yet: ticks sent ahead cannot deadlock the two sides.
pub const TICK_BYTES_AHEAD_MAX: usize = 4096;

/// A stream call borrowing its client, from [`Client::stream`].
pub type StreamCall<'c> = ClientStream<&'c mut Client>;

impl<C: AsMut<Client>> ClientStream<C> {
    /// Sends the request of a stream call on `holder`'s client and, when
    /// `with_header` (the caller knows the method's signature), reads the header.
    /// On failure the holder comes back with the error, the connection in step
    /// when the error is [`RpcError::Remote`].
    pub fn open(
        holder: C,
        method: &str,
        params: &RecordBatch,
        with_header: bool,
    ) -> Result<Self, (RpcError, C)> {
        Self::open_with_metadata(holder, method, params, BatchMetadata::new(), with_header)
    }

    /// [`ClientStream::open`] with `metadata` on the request, as
    /// [`Client::call_with_metadata`] sends it.
    pub fn open_with_metadata(
        holder: C,
        method: &str,
        params: &RecordBatch,
        metadata: BatchMetadata,
        with_header: bool,
    ) -> Result<Self, (RpcError, C)> {
        let mut call = ClientStream {
            holder: Some(holder),
            header: None,
            input: None,
            output: None,
            input_ended: false,
            done: false,
            http: None,
            ticks_ahead: 1,
            ticks_in_flight: 0,
        };
        match call.start(method, params, metadata, with_header) {
            Ok(()) => Ok(call),
            Err(error) => Err((error, call.release())),
        }
    }

    /// What holds the client, e.g. to move an HTTP call's next turn to another connection (its
    /// tokens live in the call, not in the connection).
    pub fn holder_mut(&mut self) -> &mut C {
        self.holder
            .as_mut()
            .expect("a stream call holds its client until released")
    }

    /// The header batch, for methods that send one.
    pub fn header(&self) -> Option<&RecordBatch> {
        self.header.as_ref()
    }

    /// The output stream's schema, once its first message has been read (it stays known after
    /// the end, so an empty result still has its columns).
    pub fn output_schema(&self) -> Option<&SchemaRef> {
        self.output.as_ref().map(StreamReader::schema)
    }

    /// Whether the stream has ended (the server's end, or ours after an error).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Logs received so far.
    pub fn take_logs(&mut self) -> Vec<LogRecord> {
        self.client().take_logs()
    }

    /// Lets [`ClientStream::tick`] keep up to `ticks` ticks unanswered (at least 1,
    /// lockstep; at most as many as fit in [`TICK_BYTES_AHEAD_MAX`]). Answers still come
    /// one per tick, in order: a server error after k batches arrives after those k, and
    /// closing early reads and drops the batches of the ticks sent ahead. The price is
    /// that the producer may make up to `ticks - 1` batches the caller never takes.
    /// Over HTTP (one turn per request) or with a shared-memory segment (whose table
    /// changes hands only while one side waits for the other) ticks stay lockstep.
    pub fn set_ticks_ahead(&mut self, ticks: usize) {
        self.ticks_ahead = ticks.clamp(1, ticks_fitting(TICK_BYTES_AHEAD_MAX));
    }

    /// Asks a producer for its next batch; `Ok(None)` when it has finished.
    pub fn tick(&mut self) -> Result<Option<RecordBatch>, RpcError> {
        self.tick_with_metadata(BatchMetadata::new())
            .map(|o| o.map(|(batch, _)| batch))
    }

    /// [`ClientStream::tick`] carrying `metadata` upstream, returning the batch's
    /// metadata too. A tick with metadata goes lockstep, so its answer is its own.
    pub fn tick_with_metadata(
        &mut self,
        metadata: BatchMetadata,
    ) -> Result<Option<(RecordBatch, BatchMetadata)>, RpcError> {
        // Ticks already sent (even under a window since narrowed) are answered first.
        let unanswered = self.ticks_in_flight > 0 && !self.done;
        if metadata.is_empty() && (unanswered || self.may_tick_ahead()) {
            if self.may_tick_ahead() {
                self.top_up_ticks()?;
            }
        } else {
            self.refuse_while_ticks_ahead("a tick with metadata")?;
            self.send(&RecordBatch::new_empty(empty_schema()), metadata)?;
            self.ticks_in_flight += 1;
        }
        let answer = self.receive();
        self.ticks_in_flight = self.ticks_in_flight.saturating_sub(1);
        answer
    }

    /// Whether ticks may go ahead of their answers on this call.
    fn may_tick_ahead(&mut self) -> bool {
        self.ticks_ahead > 1
            && !self.done
            && self.http.is_none()
            && self.client().shm_route().is_none()
    }

    /// Sends ticks until `ticks_ahead` are unanswered, once half or fewer are: one write
    /// per half window, and the server still holds ticks to answer when it arrives.
    fn top_up_ticks(&mut self) -> Result<(), RpcError> {
        if self.ticks_in_flight > self.ticks_ahead / 2 {
            return Ok(());
        }
        let tick = RecordBatch::new_empty(empty_schema());
        let no_metadata = BatchMetadata::new();
        while self.ticks_in_flight < self.ticks_ahead {
            self.write_input(&tick, &no_metadata)?;
            self.ticks_in_flight += 1;
        }
        self.client().flush()
    }

    /// A lockstep step on a call with ticks unanswered would take another tick's answer.
    fn refuse_while_ticks_ahead(&self, what: &str) -> Result<(), RpcError> {
        if self.ticks_in_flight > 0 && !self.done {
            return Err(RpcError::Protocol(format!(
                "{what} cannot follow ticks sent ahead; read their batches with tick() first"
            )));
        }
        Ok(())
    }

    /// Sends one input batch and returns the output batch it produced (`None` if
    /// the server ended the stream instead).
    pub fn exchange(&mut self, batch: &RecordBatch) -> Result<Option<RecordBatch>, RpcError> {
        self.exchange_with_metadata(batch, BatchMetadata::new())
            .map(|o| o.map(|(batch, _)| batch))
    }

    /// Like [`ClientStream::exchange`], with custom metadata both ways.
    pub fn exchange_with_metadata(
        &mut self,
        batch: &RecordBatch,
        metadata: BatchMetadata,
    ) -> Result<Option<(RecordBatch, BatchMetadata)>, RpcError> {
        self.refuse_while_ticks_ahead("an exchange")?;
        self.send(batch, metadata)?;
        self.receive()
    }

    /// Cancels the stream: the server stops, and the connection is ready for the
    /// next call.
    pub fn cancel(self) -> Result<(), RpcError> {
        self.cancel_and_release().1
    }

    /// Ends the stream from the client side and reads the server's end.
    pub fn close(self) -> Result<(), RpcError> {
        self.close_and_release().1
    }

    /// [`ClientStream::cancel`], giving the holder back. The connection is in
    /// step when the result is `Ok`.
    pub fn cancel_and_release(mut self) -> (C, Result<(), RpcError>) {
        let cancelled = self.send_cancel();
        (self.release(), cancelled)
    }

    /// [`ClientStream::close`], giving the holder back. The connection is in step
    /// when the result is `Ok` or [`RpcError::Remote`].
    pub fn close_and_release(mut self) -> (C, Result<(), RpcError>) {
        let closed = self.finish();
        (self.release(), closed)
    }

    /// Gives the holder back without a word on the wire. The connection is in
    /// step only if the call [`is_done`](ClientStream::is_done) (or failed with
    /// [`RpcError::Remote`]); otherwise it is mid-call and must be closed.
    pub fn release(mut self) -> C {
        self.done = true;
        self.holder
            .take()
            .expect("a stream call holds its client until released")
    }

    fn client(&mut self) -> &mut Client {
        held(&mut self.holder)
    }

    fn start(
        &mut self,
        method: &str,
        params: &RecordBatch,
        metadata: BatchMetadata,
        with_header: bool,
    ) -> Result<(), RpcError> {
        let client = self.client();
        if client.is_http() {
            return self.start_http(method, params, metadata, with_header);
        }
        client.write_request(method, params, metadata)?;
        client.flush()?;
        if with_header {
            match self.read_header() {
                Ok(header) => self.header = header,
                Err(error) => {
                    // After a failed start the server drains one input stream: send an
                    // empty one, so the connection stays in step.
                    let _ = self.end_input();
                    return Err(error);
                }
            }
        }
        Ok(())
    }

    /// `/init`: the header, then the first output stream (a producer's first turn).
    fn start_http(
        &mut self,
        method: &str,
        params: &RecordBatch,
        metadata: BatchMetadata,
        with_header: bool,
    ) -> Result<(), RpcError> {
        let client = self.client();
        let protocol = client.protocol_for(&metadata);
        client.write_request(method, params, metadata)?;
        client.post_gathered(protocol.as_deref(), method, "/init")?;
        if with_header {
            self.header = self.read_header()?;
        }
        self.http = Some(HttpTurns::new(protocol, method));
        self.read_http_output(false)
    }

    /// Reads one response's output stream into the call's answers and tokens.
    fn read_http_output(&mut self, ticked: bool) -> Result<(), RpcError> {
        let client = held(&mut self.holder);
        let turns = self.http.as_mut().expect("an HTTP stream call");
        let mut reader = client.begin_reply()?;
        turns.begin_response();
        let mut error = None;
        while let Some((batch, metadata)) = client.next_data(&mut reader, &mut error)? {
            turns.absorb(batch, metadata, ticked);
        }
        if let Some(report) = error {
            turns.fail(report);
        }
        Ok(())
    }

    /// `/exchange`: one turn (or a cancel) carrying the call's tokens.
    fn post_http_turn(
        &mut self,
        batch: &RecordBatch,
        metadata: BatchMetadata,
    ) -> Result<(), RpcError> {
        let client = held(&mut self.holder);
        let turns = self.http.as_ref().expect("an HTTP stream call");
        let metadata = turns.tokens(metadata);
        let mut writer = StreamWriter::begin(batch.schema_ref(), client.out())?;
        writer.write(batch, &metadata, client.out())?;
        writer.finish(client.out());
        let (protocol, method) = (turns.protocol.clone(), turns.method.clone());
        client.post_gathered(protocol.as_deref(), &method, "/exchange")?;
        self.read_http_output(batch.num_columns() == 0)
    }

    fn send_cancel(&mut self) -> Result<(), RpcError> {
        if self.done {
            return Ok(());
        }
        if let Some(turns) = &self.http {
            self.done = true;
            if turns.open_on_server() {
                let cancel = BatchMetadata::from_pairs([(keys::CANCEL, "1")]);
                self.post_http_turn(&RecordBatch::new_empty(empty_schema()), cancel)?;
            }
            return Ok(());
        }
        let schema = self
            .input
            .as_ref()
            .map(|w| w.schema().clone())
            .unwrap_or_else(empty_schema);
        let cancel = BatchMetadata::from_pairs([(keys::CANCEL, "1")]);
        self.send_raw(&RecordBatch::new_empty(schema), &cancel)?;
        match self.finish() {
            Err(RpcError::Remote(_)) | Ok(()) => Ok(()),
            Err(other) => Err(other),
        }
    }

    fn send(&mut self, batch: &RecordBatch, metadata: BatchMetadata) -> Result<(), RpcError> {
        if self.done {
            return Err(RpcError::Protocol("the stream has ended".into()));
        }
        if let Some(turns) = self.http.as_mut() {
            if turns.needs_request() {
                self.post_http_turn(batch, metadata)?;
            }
            return Ok(());
        }
        let (batch, metadata) = self.client().route_output(batch, metadata)?;
        self.send_raw(&batch, &metadata)
    }

    fn send_raw(&mut self, batch: &RecordBatch, metadata: &BatchMetadata) -> Result<(), RpcError> {
        self.write_input(batch, metadata)?;
        self.client().flush()
    }

    /// Gathers one input batch (opening the input stream first) without writing it yet.
    fn write_input(
        &mut self,
        batch: &RecordBatch,
        metadata: &BatchMetadata,
    ) -> Result<(), RpcError> {
        let client = held(&mut self.holder);
        if self.input.is_none() {
            self.input = Some(StreamWriter::begin(batch.schema_ref(), client.out())?);
        }
        let input = self.input.as_mut().expect("input stream open");
        Ok(input.write(batch, metadata, client.out())?)
    }

    /// Reads one output batch; at the server's end marker closes the input and
    /// reports `None`; an error ends the stream and is returned.
    fn receive(&mut self) -> Result<Option<(RecordBatch, BatchMetadata)>, RpcError> {
        if let Some(turns) = self.http.as_mut() {
            return match turns.next_answer() {
                Ok(Some(answer)) => Ok(Some(answer)),
                Ok(None) => {
                    self.done = true;
                    Ok(None)
                }
                Err(Some(report)) => {
                    self.done = true;
                    Err(RpcError::Remote(report))
                }
                Err(None) => {
                    self.done = true;
                    Err(RpcError::Protocol(
                        "the server answered a stream turn with no batch".into(),
                    ))
                }
            };
        }
        let client = held(&mut self.holder);
        if self.output.is_none() {
            self.output = Some(client.begin_reply()?);
        }
        let output = self.output.as_mut().expect("output stream open");
        let mut error = None;
        let next = client.next_data(output, &mut error);
        let finished = output.is_finished();
        let next = match next {
            Ok(next) => next,
            Err(e) => {
                self.done = true;
                return Err(e);
            }
        };
        if let Some(report) = error {
            if !finished {
                self.drain_output()?;
            }
            self.end_input()?;
            return Err(RpcError::Remote(report));
        }
        match next {
            Some((batch, metadata)) => Ok(Some(self.client().resolve(batch, metadata)?)),
            None => {
                self.end_input()?;
                Ok(None)
            }
        }
    }

    fn read_header(&mut self) -> Result<Option<RecordBatch>, RpcError> {
        let client = self.client();
        let mut reader = client.begin_reply()?;
        let mut error = None;
        let mut header = None;
        while let Some((batch, metadata)) = client.next_data(&mut reader, &mut error)? {
            header = Some(client.resolve(batch, metadata)?.0);
        }
        match error {
            Some(report) => Err(RpcError::Remote(report)),
            None => Ok(header),
        }
    }

    fn drain_output(&mut self) -> Result<(), RpcError> {
        if let Some(mut output) = self.output.take() {
            let client = self.client();
            let mut error = None;
            while client.next_data(&mut output, &mut error)?.is_some() {}
        }
        Ok(())
    }

    /// Sends the input's end marker (opening an empty input first if nothing was sent).
    fn end_input(&mut self) -> Result<(), RpcError> {
        if self.input_ended {
            return Ok(());
        }
        self.input_ended = true;
        self.done = true;
        if self.http.is_some() {
            // Over HTTP a stream is closed by not continuing it: nothing goes on the wire.
            return Ok(());
        }
        let client = held(&mut self.holder);
        let input = match self.input.take() {
            Some(input) => input,
            None => StreamWriter::begin(&empty_schema(), client.out())?,
        };
        input.finish(client.out());
        client.flush()
    }

    /// Closes the input, then reads the output to its end.
    fn finish(&mut self) -> Result<(), RpcError> {
        if self.done {
            return Ok(());
        }
        if self.http.is_some() {
            self.done = true;
            return Ok(());
        }
        self.end_input()?;
        let client = held(&mut self.holder);
        let mut output = match self.output.take() {
            Some(output) => output,
            None => client.begin_reply()?,
        };
        let mut error = None;
        while client.next_data(&mut output, &mut error)?.is_some() {}
        match error {
            Some(report) => Err(RpcError::Remote(report)),
            None => Ok(()),
        }
    }
}

/// A call dropped while open is closed in step (our input's end, then the
/// server's), so a borrowed client is ready for its next call.
impl<C: AsMut<Client>> Drop for ClientStream<C> {
    fn drop(&mut self) {
        if !self.done && self.holder.is_some() {
            let _ = self.finish();
        }
    }
}

/// How many ticks fit in `bytes` after the input stream's opening message.
fn ticks_fitting(bytes: usize) -> usize {
    let schema = empty_schema();
    let mut out = GatherBuffer::new();
    let Ok(mut input) = StreamWriter::begin(&schema, &mut out) else {
        return 1;
    };
    let opening = out.len();
    if input
        .write(
            &RecordBatch::new_empty(schema),
            &BatchMetadata::new(),
            &mut out,
        )
        .is_err()
    {
        return 1;
    }
    let tick = out.len() - opening;
    (bytes.saturating_sub(opening) / tick.max(1)).max(1)
}

fn held<C: AsMut<Client>>(holder: &mut Option<C>) -> &mut Client {
    holder
        .as_mut()
        .expect("a stream call holds its client until released")
        .as_mut()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_window_of_ticks_and_the_opening_fit_the_byte_bound() {
        let ticks = ticks_fitting(TICK_BYTES_AHEAD_MAX);
        assert!(
            ticks >= 16,
            "only {ticks} ticks fit in {TICK_BYTES_AHEAD_MAX} bytes"
        );
        let schema = empty_schema();
        let mut out = GatherBuffer::new();
        let mut input = StreamWriter::begin(&schema, &mut out).unwrap();
        for _ in 0..ticks {
            let tick = RecordBatch::new_empty(schema.clone());
            input.write(&tick, &BatchMetadata::new(), &mut out).unwrap();
        }
        assert!(out.len() <= TICK_BYTES_AHEAD_MAX, "{} bytes", out.len());
        assert_eq!(ticks_fitting(0), 1, "lockstep always fits");
    }
}
