//! Where encoded streams go: a plain byte vector, or a gather list that keeps
//! large buffers by reference so they reach the transport (or shared memory)
//! without an intermediate copy.

use std::io::{IoSlice, Write};

use arrow_buffer::Buffer;

/// Parts at least this large are kept by reference rather than copied.
pub const GATHER_MIN_BYTES: usize = 64 * 1024;

/// A destination for encoded IPC bytes.
pub trait IpcSink {
    /// Appends bytes by copying them.
    fn put_bytes(&mut self, bytes: &[u8]);
    /// Appends a buffer's bytes; a sink may keep the buffer instead of copying.
    fn put_buffer(&mut self, buffer: &Buffer) {
        self.put_bytes(buffer.as_slice());
    }
    /// Appends `count` zero bytes.
    fn put_zeros(&mut self, count: usize) {
        const ZEROS: [u8; 8] = [0; 8];
        let mut left = count;
        while left > 0 {
            let step = left.min(ZEROS.len());
            self.put_bytes(&ZEROS[..step]);
            left -= step;
        }
    }
}

impl IpcSink for Vec<u8> {
    fn put_bytes(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

enum Part {
    /// `bytes[start..end]` of the gather's own vector.
    Inline { start: usize, end: usize },
    /// A buffer kept by reference.
    Shared(Buffer),
}

/// Encoded bytes as a list of parts: small pieces copied into one vector, large
/// buffers held by reference (cheap `Arc` clones).
#[derive(Default)]
pub struct GatherBuffer {
    bytes: Vec<u8>,
    parts: Vec<Part>,
    inline_start: usize,
    len_bytes: usize,
}

impl GatherBuffer {
    /// An empty gather.
    pub fn new() -> Self {
        Self::default()
    }

    /// Total bytes held.
    pub fn len(&self) -> usize {
        self.len_bytes
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len_bytes == 0
    }

    /// Drops everything, keeping the vector's capacity.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.parts.clear();
        self.inline_start = 0;
        self.len_bytes = 0;
    }

    fn close_inline(&mut self) {
        if self.bytes.len() > self.inline_start {
            self.parts.push(Part::Inline {
                start: self.inline_start,
                end: self.bytes.len(),
            });
            self.inline_start = self.bytes.len();
        }
    }

    fn slices(&self) -> impl Iterator<Item = &[u8]> {
        let tail = &self.bytes[self.inline_start..];
        self.parts
            .iter()
            .map(|part| match part {
                Part::Inline { start, end } => &self.bytes[*start..*end],
                Part::Shared(buffer) => buffer.as_slice(),
            })
            .chain(std::iter::once(tail))
            .filter(|slice| !slice.is_empty())
    }

    /// Copies everything into `target`, which must be exactly [`GatherBuffer::len`] long.
    pub fn copy_into(&self, target: &mut [u8]) {
        assert_eq!(
            target.len(),
            self.len_bytes,
            "target must fit the gather exactly"
        );
        let mut position = 0;
        for slice in self.slices() {
            target[position..position + slice.len()].copy_from_slice(slice);
            position += slice.len();
        }
    }

    /// Writes everything with as few `writev` calls as the transport allows,
    /// looping on short writes, then clears.
    pub fn write_to(&mut self, writer: &mut dyn Write) -> std::io::Result<()> {
        const IOV_MAX: usize = 512;
        let slices: Vec<&[u8]> = self.slices().collect();
        let mut index = 0;
        let mut skip = 0;
        while index < slices.len() {
            let mut batch: Vec<IoSlice<'_>> = Vec::with_capacity(IOV_MAX.min(slices.len() - index));
            batch.push(IoSlice::new(&slices[index][skip..]));
            for slice in slices.iter().skip(index + 1).take(IOV_MAX - 1) {
                batch.push(IoSlice::new(slice));
            }
            let mut written = match writer.write_vectored(&batch) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            while written > 0 {
                let left = slices[index].len() - skip;
                if written >= left {
                    written -= left;
                    index += 1;
                    skip = 0;
                } else {
                    skip += written;
                    written = 0;
                }
            }
        }
        writer.flush()?;
        self.clear();
        Ok(())
    }
}

impl IpcSink for GatherBuffer {
    fn put_bytes(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
        self.len_bytes += bytes.len();
    }

    fn put_buffer(&mut self, buffer: &Buffer) {
        if buffer.len() < GATHER_MIN_BYTES {
            self.put_bytes(buffer.as_slice());
            return;
        }
        self.close_inline();
        self.len_bytes += buffer.len();
        self.parts.push(Part::Shared(buffer.clone()));
    }
}
