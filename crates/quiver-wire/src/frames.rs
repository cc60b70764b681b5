//! Framed messages: where the bytes of one IPC message come from (a byte stream or a
//! buffer already in memory, such as a shared-memory region), read with every announced
//! size checked against [`Limits`] before anything is allocated, and the header verified once.

use std::io::Read;

use arrow_buffer::{Buffer, MutableBuffer};
use flatbuffers::InvalidFlatbuffer;

use crate::body_pool;
use crate::error::{Result, WireError};
use crate::framing::{ALIGNMENT_BYTES, CONTINUATION};
use crate::limits::Limits;

/// One framed message: its flatbuffer header and its body.
///
/// Invariant: `header` passed flatbuffer verification (in [`verify_header`]) before
/// the frame was built, and a `Buffer` is immutable, so it is never verified again.
pub struct Frame {
    pub(crate) header: Buffer,
    pub(crate) body: Buffer,
    /// Bytes the message took on the wire: prefix, header and body.
    pub(crate) size_bytes: u64,
    /// Header offset of the first string that was not UTF-8 (its bytes were
    /// replaced so the header verifies); the message is refused when decoded.
    pub(crate) not_utf8_at: Option<usize>,
}

impl Frame {
    /// The message header, already verified.
    pub(crate) fn message(&self) -> arrow_ipc::Message<'_> {
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
    pub(crate) reader: &'a mut R,
}

impl<'a, R: Read> IoFrames<'a, R> {
    /// Wraps a reader; no bytes are consumed until a frame is asked for.
    pub fn new(reader: &'a mut R) -> Self {
        Self { reader }
    }

    /// Reads the 4-or-8-byte prefix. `Ok(None)` when the stream is cleanly at EOF
    /// before the first byte and `eof_ok` allows it.
    pub(crate) fn read_prefix(
        &mut self,
        limits: &Limits,
        eof_ok: bool,
    ) -> Result<Option<(u32, u64)>> {
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
        let len = metadata_length(word, limits)?;
        Ok(Some((len, prefix_bytes)))
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
        let (header, body_len, not_utf8_at) = match verify_header(header, limits) {
            Err(WireError::LimitExceeded {
                what: BODY,
                size_bytes,
                limit_bytes,
            }) if size_bytes <= limits.skip_body_bytes_max => {
                skip_bytes(self.reader, size_bytes)?;
                return Err(WireError::BodySkipped {
                    size_bytes,
                    limit_bytes,
                });
            }
            verified => verified?,
        };
        let body = read_buffer(self.reader, body_len, BODY)?;
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
        let len = metadata_length(word, limits)?;
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
pub(crate) fn aligned(body: Buffer) -> Buffer {
    if body.as_ptr().align_offset(ALIGNMENT_BYTES) == 0 {
        return body;
    }
    let mut copy = MutableBuffer::with_capacity(body.len());
    copy.extend_from_slice(body.as_slice());
    copy.into()
}

/// Verifies a message header and returns it with its body length.
///
/// A string that is not UTF-8 (custom metadata a peer filled with raw bytes) fails
/// flatbuffer verification, yet framing does not depend on it. Its bytes are
/// replaced by `?` in a copy so the header verifies and the frame can be read
/// whole; the header offset of the first such string comes back so the message is
/// refused when decoded, and the stream stays in step.
pub(crate) fn verify_header(
    header: Buffer,
    limits: &Limits,
) -> Result<(Buffer, usize, Option<usize>)> {
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
        check_limit(BODY, body_len as u64, limits.body_bytes_max)?;
        return Ok((header, body_len as usize, not_utf8_at));
    }
    Err(WireError::Malformed(format!(
        "message header carries more than {NOT_UTF8_STRINGS_MAX} strings that are not UTF-8"
    )))
}

/// Bounds the repairs of one header (each copies it): a request carries a handful
/// of metadata strings.
const NOT_UTF8_STRINGS_MAX: usize = 16;

/// The metadata length a message prefix announces, refused when negative or over its limit.
fn metadata_length(word: [u8; 4], limits: &Limits) -> Result<u32> {
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
    Ok(len as u32)
}

/// What a message body is called in errors.
const BODY: &str = "message body";

/// The pieces a body over the limit is read past in (`Limits::skip_body_bytes_max`).
const SKIP_CHUNK_BYTES: usize = 64 << 10;

/// Reads and discards `len` bytes.
fn skip_bytes<R: Read>(reader: &mut R, len: u64) -> Result<()> {
    let mut chunk = vec![0u8; SKIP_CHUNK_BYTES];
    let mut left = len;
    while left > 0 {
        let take = left.min(SKIP_CHUNK_BYTES as u64) as usize;
        reader
            .read_exact(&mut chunk[..take])
            .map_err(truncated(BODY))?;
        left -= take as u64;
    }
    Ok(())
}

/// Refuses a size over its limit before anything is allocated for it.
pub(crate) fn check_limit(what: &'static str, size_bytes: u64, limit_bytes: u64) -> Result<()> {
    if size_bytes > limit_bytes {
        return Err(WireError::LimitExceeded {
            what,
            size_bytes,
            limit_bytes,
        });
    }
    Ok(())
}

/// Reads `len` bytes into a buffer that arrays decode over in place.
///
/// The bytes land in a vector's spare capacity (`read_to_end` hands it to the reader, and
/// sockets read into it without zero-filling it first), so a body costs the copy out of the
/// kernel and no fill; a large body reuses the memory of one released before it
/// (`body_pool`). The buffer comes from the allocator at its natural alignment, at least 16
/// bytes for a body of any size on the platforms quiver runs on; [`aligned`] copies the rare
/// one below 8.
///
/// Memory follows the bytes that actually arrive: a body larger than
/// [`READ_CHUNK_BYTES`] grows by doubling as it is read, so a peer that
/// announces gigabytes and sends nothing cannot make us reserve them.
pub(crate) fn read_buffer<R: Read>(
    reader: &mut R,
    len: usize,
    what: &'static str,
) -> Result<Buffer> {
    let mut bytes = body_pool::take(len);
    while bytes.len() < len {
        let goal = len.min((bytes.len() * 2).max(READ_CHUNK_BYTES));
        bytes.reserve_exact(goal - bytes.len());
        let want = goal - bytes.len();
        let got = Read::take(&mut *reader, want as u64)
            .read_to_end(&mut bytes)
            .map_err(truncated(what))?;
        if got < want {
            return Err(WireError::Truncated(format!("end of input inside {what}")));
        }
    }
    Ok(aligned(body_pool::into_buffer(bytes)))
}

/// Bodies up to this size are allocated at once; larger ones grow as they arrive.
const READ_CHUNK_BYTES: usize = 64 << 20;

/// Fills `buf`; `Ok(false)` if the reader was at EOF before the first byte.
pub(crate) fn read_exact_or_eof<R: Read>(reader: &mut R, buf: &mut [u8]) -> Result<bool> {
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

pub(crate) fn truncated(what: &'static str) -> impl Fn(std::io::Error) -> WireError {
    move |e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            WireError::Truncated(format!("end of input inside {what}"))
        } else {
            WireError::Io(e)
        }
    }
}
