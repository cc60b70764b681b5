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
use arrow_buffer::Buffer;
use arrow_ipc::reader::{read_dictionary, RecordBatchDecoder};
use arrow_ipc::MessageHeader;
use arrow_schema::SchemaRef;

use crate::error::{Result, WireError};
use crate::frames::{
    check_limit, read_buffer, verify_header, BufferFrames, Frame, FrameSource, IoFrames,
};
use crate::limits::Limits;
use crate::metadata::BatchMetadata;
use crate::nullability::{relaxed, Nullability};
use crate::schema_cache::{cached_schema, decoded_schema};

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
    nullability: Nullability,
    /// The schema with every field nullable, once a batch needed it.
    relaxed: Option<SchemaRef>,
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
            nullability: Nullability::Enforced,
            relaxed: None,
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
            nullability: Nullability::Enforced,
            relaxed: None,
        })
    }

    /// Sets how this reader treats nulls in fields declared non-nullable. A batch that needed
    /// the tolerance arrives on the schema with every field nullable; [`StreamReader::schema`]
    /// stays the one declared.
    pub fn with_nullability(mut self, nullability: Nullability) -> Self {
        self.nullability = nullability;
        self
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
                // A skipped body leaves framing intact: the caller may answer and drain.
                Err(error @ WireError::BodySkipped { .. }) => return Err(error),
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
                let decode_on = |schema: SchemaRef, dictionaries: &HashMap<i64, ArrayRef>| {
                    guard_panics("record batch", || {
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
                    })
                };
                let batch = match decode_on(self.schema.clone(), &self.dictionaries) {
                    Ok(batch) => batch,
                    // The relaxed schema differs only in nullability, so a second decode on it
                    // fails again for any other fault; the first error is the one to report.
                    Err(strict) if self.nullability == Nullability::Tolerated => {
                        let relaxed = self
                            .relaxed
                            .get_or_insert_with(|| relaxed(&self.schema))
                            .clone();
                        if Arc::ptr_eq(&relaxed, &self.schema) {
                            return Err(strict);
                        }
                        decode_on(relaxed, &self.dictionaries).map_err(|_| strict)?
                    }
                    Err(strict) => return Err(strict),
                };
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
    decode_stream_with(buffer, limits, Nullability::Enforced)
}

/// [`decode_stream`], treating undeclared nulls as `nullability` says.
pub fn decode_stream_with(
    buffer: Buffer,
    limits: Limits,
    nullability: Nullability,
) -> Result<(SchemaRef, Vec<(RecordBatch, BatchMetadata)>)> {
    let mut frames = BufferFrames::new(buffer);
    let mut reader = StreamReader::begin_from(&mut frames, limits)?.with_nullability(nullability);
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
    decode_region_with(buffer, schema, limits, Nullability::Enforced)
}

/// [`decode_region`], treating undeclared nulls as `nullability` says.
pub fn decode_region_with(
    buffer: Buffer,
    schema: &SchemaRef,
    limits: Limits,
    nullability: Nullability,
) -> Result<(SchemaRef, Vec<(RecordBatch, BatchMetadata)>)> {
    let mut frames = BufferFrames::new(buffer);
    let first = frames
        .next_frame(&limits)?
        .ok_or_else(|| WireError::Malformed("empty shared-memory region".into()))?;
    let (reader, pending) = if first.message().header_type() == MessageHeader::Schema {
        (StreamReader::from_schema_frame(first, limits)?, None)
    } else {
        (
            StreamReader::for_schema(schema.clone(), limits),
            Some(first),
        )
    };
    let mut reader = reader.with_nullability(nullability);
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
