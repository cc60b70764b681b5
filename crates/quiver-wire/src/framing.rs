//! Encapsulated-message framing shared by the reader and the writer.
//!
//! Every message is `FFFFFFFF <i32 metadata length> <flatbuffer Message> <padding> <body>`;
//! a zero metadata length ends the stream. The 8-byte alignment matches pyarrow's.

/// Marks the start of a message (the "continuation" token of IPC 0.15+).
pub const CONTINUATION: [u8; 4] = [0xff; 4];

/// The end-of-stream marker: continuation then a zero length.
pub const END_OF_STREAM: [u8; 8] = [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];

/// Alignment of message metadata and of every body buffer.
pub const ALIGNMENT_BYTES: usize = 8;

/// Rounds `len` up to [`ALIGNMENT_BYTES`].
pub const fn padded_len(len: usize) -> usize {
    (len + ALIGNMENT_BYTES - 1) & !(ALIGNMENT_BYTES - 1)
}
