//! Decodes IPC streams written back to back on one byte stream, keeping each batch's
//! custom metadata (which arrow-rs's `StreamReader` drops).
//!
//! The reader never reads past a stream's end marker, so the next stream on the
//! same transport starts where this one stopped. Every announced size is checked
//! against [`Limits`] before anything is allocated, and a body decodes directly over
//! the bytes it was read into (or over a shared-memory region) without a copy.

use std::collections::HashMap;
use std::io::Read;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_buffer::{Buffer, MutableBuffer};
use arrow_ipc::reader::{read_dictionary, RecordBatchDecoder};
use arrow_ipc::MessageHeader;
use arrow_schema::SchemaRef;
use flatbuffers::InvalidFlatbuffer;

use crate::error::{Result, WireError};
use crate::framing::{ALIGNMENT_BYTES, CONTINUATION};
use crate::limits::Limits;
use crate::metadata::BatchMetadata;
use crate::schema_cache::{cached_schema, decoded_schema};

/// One framed message: its flatbuffer header and its body.
///
/// Invariant: `header` passed flatbuffer verification (in [`verify_header`]) before
/// the frame was built, and a `Buffer` is immutable, so it is never verified again.
pub struct Frame {
    header: Buffer,
    body: Buffer,
    /// Bytes the message took on the wire: prefix, header and body.
    size_bytes: u64,
    /// Header offset of the first string that was not UTF-8 (its bytes were
    /// replaced so the header verifies); the message is refused when decoded.
    not_utf8_at: Option<usize>,
}

impl Frame {
    /// The message header, already verified.
    fn message(&self) -> arrow_ipc::Message<'_> {
        // SAFETY: every Frame is constructed after `verify_header` verified exactly
        // these bytes (see the invariant above).
        unsafe { arrow_ipc::root_as_message_unchecked(self.header.as_slice()) }
    }
}

/// Where frames come from: a transport, or a buffer already in memory.
pub trait FrameSource {
    /// The next frame; `Ok(None)` at an end-of-stream marker.
    fn next_frame(&mut self, limits: &Limits) -> Result<Option<Frame>>;
}

/// Reads frames from any `Read`, one `read_exact` per part.
pub struct IoFrames<'a, R: Read> {
    reader: &'a mut R,
}

impl<'a, R: Read> IoFrames<'a, R> {
    /// Wraps a reader; no bytes are consumed until a frame is asked for.
    pub fn new(reader: &'a mut R) -> Self {
        Self { reader }
    }

    /// Reads the 4-or-8-byte prefix. `Ok(None)` when the stream is cleanly at EOF
    /// before the first byte and `eof_ok` allows it.
    fn read_prefix(&mut self, limits: &Limits, eof_ok: bool) -> Result<Option<(u32, u64)>> {
        let mut word = [0u8; 4];
        let mut prefix_bytes = 4;
        if !read_exact_or_eof(self.reader, &mut word)? {
            return if eof_ok {
                Ok(None)
            } else {
                Err(WireError::Truncated("end of input before a message".into()))
            };
        }
        if word == CONTINUATION {
            self.reader
                .read_exact(&mut word)
                .map_err(truncated("message length"))?;
            prefix_bytes = 8;
        }
        let len = i32::from_le_bytes(word);
        if len < 0 {
            return Err(WireError::Malformed(format!(
                "negative message length {len}"
            )));
        }
        check_limit(
            "message metadata",
            len as u64,
            limits.metadata_bytes_max as u64,
        )?;
        Ok(Some((len as u32, prefix_bytes)))
    }
}

impl<R: Read> FrameSource for IoFrames<'_, R> {
    fn next_frame(&mut self, limits: &Limits) -> Result<Option<Frame>> {
        let (len, prefix_bytes) = self
            .read_prefix(limits, false)?
            .expect("eof not allowed here");
        if len == 0 {
            return Ok(None);
        }
        let header = read_buffer(self.reader, len as usize, "message metadata")?;
        let (header, body_len, not_utf8_at) = verify_header(header, limits)?;
        let body = read_buffer(self.reader, body_len, "message body")?;
        Ok(Some(Frame {
            size_bytes: prefix_bytes + len as u64 + body_len as u64,
            header,
            body,
            not_utf8_at,
        }))
    }
}

/// Reads frames from a buffer in memory (a shared-memory region); bodies are slices
/// of that buffer, never copies.
pub struct BufferFrames {
    buffer: Buffer,
    position: usize,
}

impl BufferFrames {
    /// Frames of `buffer`, starting at its first byte.
    pub fn new(buffer: Buffer) -> Self {
        Self {
            buffer,
            position: 0,
        }
    }

    fn take(&mut self, len: usize, what: &str) -> Result<Buffer> {
        let end = self
            .position
            .checked_add(len)
            .filter(|end| *end <= self.buffer.len());
        let Some(end) = end else {
            return Err(WireError::Truncated(format!(
                "{what} runs past the end of the region"
            )));
        };
        let slice = self.buffer.slice_with_length(self.position, len);
        self.position = end;
        Ok(slice)
    }
}

impl FrameSource for BufferFrames {
    fn next_frame(&mut self, limits: &Limits) -> Result<Option<Frame>> {
        if self.position == self.buffer.len() {
            // A region may omit the end marker (vgi-rpc's dictionary form).
            return Ok(None);
        }
        let mut word = [0u8; 4];
        let mut prefix_bytes = 4;
        word.copy_from_slice(&self.take(4, "message prefix")?);
        if word == CONTINUATION {
            word.copy_from_slice(&self.take(4, "message length")?);
            prefix_bytes = 8;
        }
        let len = i32::from_le_bytes(word);
        if len < 0 {
            return Err(WireError::Malformed(format!(
                "negative message length {len}"
            )));
        }
        check_limit(
            "message metadata",
            len as u64,
            limits.metadata_bytes_max as u64,
        )?;
        if len == 0 {
            return Ok(None);
        }
        let header = self.take(len as usize, "message metadata")?;
        let (header, body_len, not_utf8_at) = verify_header(header, limits)?;
        let body = aligned(self.take(body_len, "message body")?);
        Ok(Some(Frame {
            size_bytes: prefix_bytes + len as u64 + body_len as u64,
            header,
            body,
            not_utf8_at,
        }))
    }
}

/// A body that does not start on an 8-byte boundary (a region at an odd offset) is
/// copied once, whole: arrow-rs realigns most misaligned buffers itself but rejects
/// some (dense union offsets), so decoding would otherwise depend on where the
/// region happens to lie. Aligned bodies, the normal case, stay zero-copy.
fn aligned(body: Buffer) -> Buffer {
    if body.as_ptr().align_offset(ALIGNMENT_BYTES) == 0 {
        return body;
    }
    let mut copy = MutableBuffer::with_capacity(body.len());
    copy.extend_from_slice(body.as_slice());
    copy.into()
}

/// Decodes one stream: a schema message, then dictionary and record-batch messages
/// until the end marker.
pub struct StreamReader {
    schema: SchemaRef,
    dictionaries: HashMap<i64, ArrayRef>,
    limits: Limits,
    messages_read: u32,
    /// Bytes of this stream consumed so far, for naming where a message failed.
    bytes_read: u64,
    finished: bool,
    /// Set when reading a frame failed: the position in the byte stream is then
    /// unknown, and reading on would take body bytes for message prefixes (and
    /// could wait for input that never comes). Holds whether that failure was a
    /// disconnect, and its message.
    framing_lost: Option<(bool, String)>,
}

impl StreamReader {
    /// Reads the schema message of the next stream from `reader`. `Ok(None)` when the
    /// transport is cleanly closed before a new stream starts.
    pub fn begin<R: Read>(reader: &mut R, limits: Limits) -> Result<Option<Self>> {
        let mut frames = IoFrames::new(reader);
        let Some((len, prefix_bytes)) = frames.read_prefix(&limits, true)? else {
            return Ok(None);
        };
        if len == 0 {
            return Err(WireError::Malformed(
                "stream ended before its schema (stream byte 0)".into(),
            ));
        }
        let header = read_buffer(frames.reader, len as usize, "schema metadata")
            .map_err(|e| at_stream_byte(e, 0))?;
        if let Some(schema) = cached_schema(header.as_slice()) {
            // These exact bytes were verified and decoded before, and had no body.
            let mut reader = Self::for_schema_read(schema, limits);
            reader.bytes_read = prefix_bytes + len as u64;
            return Ok(Some(reader));
        }
        let read_rest = |frames: &mut IoFrames<'_, R>| {
            let (header, body_len, not_utf8_at) = verify_header(header, &limits)?;
            let body = read_buffer(frames.reader, body_len, "schema body")?;
            Ok(Frame {
                size_bytes: prefix_bytes + len as u64 + body_len as u64,
                header,
                body,
                not_utf8_at,
            })
        };
        let frame = read_rest(&mut frames).map_err(|e| at_stream_byte(e, 0))?;
        Self::from_schema_frame(frame, limits)
            .map_err(|e| at_stream_byte(e, 0))
            .map(Some)
    }

    /// Starts a stream from the first frame of `source`.
    pub fn begin_from(source: &mut impl FrameSource, limits: Limits) -> Result<Self> {
        let frame = source
            .next_frame(&limits)?
            .ok_or_else(|| WireError::Malformed("stream ended before its schema".into()))?;
        Self::from_schema_frame(frame, limits)
    }

    fn for_schema_read(schema: SchemaRef, limits: Limits) -> Self {
        Self {
            messages_read: 1,
            ..Self::for_schema(schema, limits)
        }
    }

    /// A reader for a stream whose schema is already known (a region written
    /// without its schema message).
    pub fn for_schema(schema: SchemaRef, limits: Limits) -> Self {
        Self {
            schema,
            dictionaries: HashMap::new(),
            limits,
            messages_read: 0,
            bytes_read: 0,
            finished: false,
            framing_lost: None,
        }
    }

    fn from_schema_frame(frame: Frame, limits: Limits) -> Result<Self> {
        if let Some(at) = frame.not_utf8_at {
            return Err(WireError::Malformed(format!(
                "the schema message carries text that is not UTF-8 (header byte {at})"
            )));
        }
        let message = frame.message();
        let ipc_schema = message.header_as_schema().ok_or_else(|| {
            WireError::Malformed(format!(
                "stream starts with a {:?} message, not a schema",
                message.header_type()
            ))
        })?;
        let decode = || {
            guard_panics("schema", || {
                arrow_ipc::convert::try_fb_to_schema(ipc_schema).map_err(WireError::from)
            })
            .map(Arc::new)
        };
        // Only body-less schema messages are cached: a cache hit skips the body read.
        let schema = if frame.body.is_empty() {
            decoded_schema(frame.header.as_slice(), decode)?
        } else {
            decode()?
        };
        Ok(Self {
            schema,
            dictionaries: HashMap::new(),
            limits,
            messages_read: 1,
            bytes_read: frame.size_bytes,
            finished: false,
            framing_lost: None,
        })
    }

    /// The stream's schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Whether the end marker has been read.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The next batch from `reader`; `Ok(None)` after the end marker.
    pub fn next<R: Read>(
        &mut self,
        reader: &mut R,
    ) -> Result<Option<(RecordBatch, BatchMetadata)>> {
        self.next_from(&mut IoFrames::new(reader))
    }

    /// The next batch from any frame source; `Ok(None)` after the end marker.
    pub fn next_from(
        &mut self,
        source: &mut impl FrameSource,
    ) -> Result<Option<(RecordBatch, BatchMetadata)>> {
        loop {
            if self.finished {
                return Ok(None);
            }
            if let Some((disconnect, cause)) = &self.framing_lost {
                let message = format!("stream unreadable after an earlier error ({cause})");
                return Err(if *disconnect {
                    WireError::Truncated(message)
                } else {
                    WireError::Malformed(message)
                });
            }
            let offset = self.bytes_read;
            let frame = match source.next_frame(&self.limits) {
                Ok(Some(frame)) => frame,
                Ok(None) => {
                    self.finished = true;
                    return Ok(None);
                }
                Err(error) => {
                    let error = at_stream_byte(error, offset);
                    self.framing_lost = Some((error.is_disconnect(), error.to_string()));
                    return Err(error);
                }
            };
            self.messages_read += 1;
            self.bytes_read += frame.size_bytes;
            check_limit(
                "messages in a stream",
                self.messages_read as u64,
                self.limits.messages_per_stream_max as u64,
            )?;
            // The frame was read whole, so a message that does not decode leaves
            // framing intact: the caller may drain the rest and answer.
            if let Some(batch) = self.decode(frame).map_err(|e| at_stream_byte(e, offset))? {
                return Ok(Some(batch));
            }
        }
    }

    /// Whether the reader still knows where the next message starts: false after
    /// a frame could not be read whole, true after a frame that was read whole but
    /// did not decode (which [`StreamReader::drain`] can then skip past).
    pub fn framing_intact(&self) -> bool {
        self.framing_lost.is_none()
    }

    /// Reads and discards the rest of the stream, so the transport is positioned at
    /// the next stream even after a rejected request.
    pub fn drain<R: Read>(&mut self, reader: &mut R) -> Result<u64> {
        let mut skipped = 0;
        while self.next(reader)?.is_some() {
            skipped += 1;
        }
        Ok(skipped)
    }

    /// Decodes a frame: `Some` for a record batch, `None` after absorbing a dictionary.
    fn decode(&mut self, frame: Frame) -> Result<Option<(RecordBatch, BatchMetadata)>> {
        if let Some(at) = frame.not_utf8_at {
            return Err(WireError::Malformed(format!(
                "message {} carries custom metadata that is not UTF-8 (header byte {at})",
                self.messages_read
            )));
        }
        let message = frame.message();
        let version = message.version();
        match message.header_type() {
            MessageHeader::RecordBatch => {
                let ipc_batch = message
                    .header_as_record_batch()
                    .ok_or_else(|| WireError::Malformed("record batch header missing".into()))?;
                let metadata = custom_metadata(&message);
                let schema = self.schema.clone();
                let dictionaries = &self.dictionaries;
                let batch = guard_panics("record batch", || {
                    RecordBatchDecoder::try_new(
                        &frame.body,
                        ipc_batch,
                        schema,
                        dictionaries,
                        &version,
                    )?
                    .with_require_alignment(false)
                    .read_record_batch()
                    .map_err(WireError::from)
                })?;
                Ok(Some((batch, metadata)))
            }
            MessageHeader::DictionaryBatch => {
                let ipc_dictionary = message.header_as_dictionary_batch().ok_or_else(|| {
                    WireError::Malformed("dictionary batch header missing".into())
                })?;
                let schema = self.schema.clone();
                let dictionaries = &mut self.dictionaries;
                guard_panics("dictionary batch", || {
                    read_dictionary(&frame.body, ipc_dictionary, &schema, dictionaries, &version)
                        .map_err(WireError::from)
                })?;
                Ok(None)
            }
            MessageHeader::Schema => Err(WireError::Malformed(
                "a second schema message inside one stream".into(),
            )),
            other => Err(WireError::Malformed(format!(
                "unsupported message type {other:?}"
            ))),
        }
    }
}

/// Decodes a whole stream held in memory (a shared-memory region), zero-copy.
pub fn decode_stream(
    buffer: Buffer,
    limits: Limits,
) -> Result<(SchemaRef, Vec<(RecordBatch, BatchMetadata)>)> {
    let mut frames = BufferFrames::new(buffer);
    let mut reader = StreamReader::begin_from(&mut frames, limits)?;
    let mut batches = Vec::new();
    while let Some(batch) = reader.next_from(&mut frames)? {
        batches.push(batch);
    }
    Ok((reader.schema().clone(), batches))
}

/// Decodes a shared-memory region that holds either a complete stream or, as
/// vgi-rpc writes batches with dictionaries, only the dictionary and record-batch
/// messages of a stream on `schema`. Zero-copy either way.
pub fn decode_region(
    buffer: Buffer,
    schema: &SchemaRef,
    limits: Limits,
) -> Result<(SchemaRef, Vec<(RecordBatch, BatchMetadata)>)> {
    let mut frames = BufferFrames::new(buffer);
    let first = frames
        .next_frame(&limits)?
        .ok_or_else(|| WireError::Malformed("empty shared-memory region".into()))?;
    let (mut reader, pending) = if first.message().header_type() == MessageHeader::Schema {
        (StreamReader::from_schema_frame(first, limits)?, None)
    } else {
        (
            StreamReader::for_schema(schema.clone(), limits),
            Some(first),
        )
    };
    let mut batches = Vec::new();
    if let Some(frame) = pending {
        reader.messages_read += 1;
        reader.bytes_read += frame.size_bytes;
        batches.extend(reader.decode(frame)?);
    }
    while let Some(batch) = reader.next_from(&mut frames)? {
        batches.push(batch);
    }
    Ok((reader.schema().clone(), batches))
}

/// Verifies a message header and returns it with its body length.
///
/// A string that is not UTF-8 (custom metadata a peer filled with raw bytes) fails
/// flatbuffer verification, yet framing does not depend on it. Its bytes are
/// replaced by `?` in a copy so the header verifies and the frame can be read
/// whole; the header offset of the first such string comes back so the message is
/// refused when decoded, and the stream stays in step.
fn verify_header(header: Buffer, limits: &Limits) -> Result<(Buffer, usize, Option<usize>)> {
    let mut header = header;
    let mut not_utf8_at = None;
    for _ in 0..=NOT_UTF8_STRINGS_MAX {
        let body_len = match arrow_ipc::root_as_message(header.as_slice()) {
            Ok(message) => message.bodyLength(),
            Err(InvalidFlatbuffer::Utf8Error { range, .. }) if range.end <= header.len() => {
                not_utf8_at.get_or_insert(range.start);
                let mut copy = MutableBuffer::from_len_zeroed(header.len());
                copy.as_slice_mut().copy_from_slice(header.as_slice());
                copy.as_slice_mut()[range].fill(b'?');
                header = copy.into();
                continue;
            }
            Err(e) => return Err(WireError::Malformed(format!("invalid message header: {e}"))),
        };
        if body_len < 0 {
            return Err(WireError::Malformed(format!(
                "negative body length {body_len}"
            )));
        }
        check_limit("message body", body_len as u64, limits.body_bytes_max)?;
        return Ok((header, body_len as usize, not_utf8_at));
    }
    Err(WireError::Malformed(format!(
        "message header carries more than {NOT_UTF8_STRINGS_MAX} strings that are not UTF-8"
    )))
}

/// Bounds the repairs of one header (each copies it): a request carries a handful
/// of metadata strings.
const NOT_UTF8_STRINGS_MAX: usize = 16;

/// Names where in the stream a message failed, so a report can point at the bytes.
fn at_stream_byte(error: WireError, offset: u64) -> WireError {
    match error {
        WireError::Truncated(message) => {
            WireError::Truncated(format!("{message} (message at stream byte {offset})"))
        }
        WireError::Malformed(message) => {
            WireError::Malformed(format!("{message} (message at stream byte {offset})"))
        }
        other => other,
    }
}

fn custom_metadata(message: &arrow_ipc::Message<'_>) -> BatchMetadata {
    let mut metadata = BatchMetadata::new();
    if let Some(pairs) = message.custom_metadata() {
        for pair in pairs {
            if let (Some(key), Some(value)) = (pair.key(), pair.value()) {
                metadata.insert(key, value);
            }
        }
    }
    metadata
}

fn check_limit(what: &'static str, size_bytes: u64, limit_bytes: u64) -> Result<()> {
    if size_bytes > limit_bytes {
        return Err(WireError::LimitExceeded {
            what,
            size_bytes,
            limit_bytes,
        });
    }
    Ok(())
}

/// arrow-rs may panic on some malformed inputs; a peer's bytes must never take the
/// process down, so a panic while decoding becomes a `Malformed` error.
fn guard_panics<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(panic) => {
            let detail = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("decoder panicked");
            Err(WireError::Malformed(format!("{what}: {detail}")))
        }
    }
}

/// Reads `len` bytes into a 64-byte-aligned buffer so arrays decode over it in place.
///
/// Memory follows the bytes that actually arrive: a body larger than
/// [`READ_CHUNK_BYTES`] grows by doubling as it is read, so a peer that
/// announces gigabytes and sends nothing cannot make us reserve them.
fn read_buffer<R: Read>(reader: &mut R, len: usize, what: &'static str) -> Result<Buffer> {
    let mut buffer = MutableBuffer::from_len_zeroed(len.min(READ_CHUNK_BYTES));
    let mut filled = 0;
    loop {
        reader
            .read_exact(&mut buffer.as_slice_mut()[filled..])
            .map_err(truncated(what))?;
        filled = buffer.len();
        if filled == len {
            return Ok(buffer.into());
        }
        buffer.resize(len.min(filled * 2), 0);
    }
}

/// Bodies up to this size are allocated at once; larger ones grow as they arrive.
const READ_CHUNK_BYTES: usize = 64 << 20;

/// Fills `buf`; `Ok(false)` if the reader was at EOF before the first byte.
fn read_exact_or_eof<R: Read>(reader: &mut R, buf: &mut [u8]) -> Result<bool> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) if filled == 0 => return Ok(false),
            Ok(0) => {
                return Err(WireError::Truncated(
                    "end of input inside a message prefix".into(),
                ))
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(true)
}

fn truncated(what: &'static str) -> impl Fn(std::io::Error) -> WireError {
    move |e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            WireError::Truncated(format!("end of input inside {what}"))
        } else {
            WireError::Io(e)
        }
    }
}
