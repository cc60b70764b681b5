//! Routing batches through a shared-memory segment: write a large batch into the
//! segment and send a pointer, resolve a pointer back into a batch.
//!
//! Used identically by client and server, in both directions; method code never
//! sees it. Anything that does not qualify (too small, dictionary-encoded, no room,
//! table full) silently stays inline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{Array, RecordBatch};
use arrow_data::ArrayData;
use arrow_schema::DataType;
use quiver_shm::HeldRegion;
use quiver_shm::{Segment, ShmConfig};
use quiver_wire::{
    decode_region_with, encode_stream, keys, BatchMetadata, GatherBuffer, InPlaceStream, Limits,
    Nullability, WireError,
};

use crate::link::ConnectionError;
use crate::output::OutputSpace;
use crate::stats::ShmStats;

/// A segment in use by one connection, with the policy for when to use it.
pub struct ShmRoute {
    segment: Arc<Segment>,
    min_batch_bytes: u64,
    debug: bool,
    /// Event counts and timings, reported on close when debugging.
    pub stats: ShmStats,
}

impl ShmRoute {
    /// Routes through `segment` under `config`'s threshold and debug switch.
    pub fn new(segment: Arc<Segment>, config: &ShmConfig) -> Self {
        Self {
            segment,
            min_batch_bytes: config.min_batch_bytes,
            debug: config.debug,
            stats: ShmStats::default(),
        }
    }

    /// The segment.
    pub fn segment(&self) -> &Arc<Segment> {
        &self.segment
    }

    /// Whether debug events are logged.
    pub fn debug(&self) -> bool {
        self.debug
    }

    /// Where a call on this connection may build its output.
    pub(crate) fn output_space(&self) -> OutputSpace {
        OutputSpace::shared(Arc::clone(&self.segment), self.min_batch_bytes)
    }

    /// Writes `batch` into the segment and returns the pointer batch and metadata
    /// that replace it, or `None` to send it inline.
    pub fn try_write(
        &mut self,
        batch: &RecordBatch,
        metadata: &BatchMetadata,
    ) -> Result<Option<(RecordBatch, BatchMetadata)>, ConnectionError> {
        self.stats.outbound_total += 1;
        if batch.num_rows() == 0 || has_dictionary(batch) {
            return Ok(None);
        }
        // Below the threshold nothing is in the segment (output buffers start at it, and what the
        // peer sent through it reached it): the pipe, as before, at no extra cost per batch.
        if batch_bytes(batch) < self.min_batch_bytes {
            return Ok(None);
        }
        if let Some(pointer) = self.try_hand_over(batch, metadata)? {
            return Ok(Some(pointer));
        }
        let started = Instant::now();
        let mut encoded = GatherBuffer::new();
        encode_stream(
            batch.schema_ref(),
            &[(batch.clone(), BatchMetadata::new())],
            &mut encoded,
        )?;
        let Some(offset) = self.segment.allocate(encoded.len() as u64) else {
            self.stats.fallbacks += 1;
            if self.debug {
                quiver_process::log_line!(
                    "[quiver-shm] fallback inline: {} bytes do not fit in {} \
                     (allocations={}, /dev/shm refusals={})",
                    encoded.len(),
                    self.segment.name(),
                    self.segment.allocation_count(),
                    self.segment.commit_failure_count()
                );
            }
            return Ok(None);
        };
        let encoded_len = encoded.len();
        let mut region = self.segment.region_writer(offset)?;
        encoded.write_to(&mut region)?;
        Ok(Some(self.pointer(
            batch,
            metadata,
            offset,
            encoded_len,
            started,
        )))
    }

    /// Sends a batch whose buffers already lie in one region this side holds (built there through
    /// an output buffer, or read from the peer and passed back) by framing it in place and handing
    /// the region over: no copy. `None` when the batch does not qualify; the caller copies then.
    fn try_hand_over(
        &mut self,
        batch: &RecordBatch,
        metadata: &BatchMetadata,
    ) -> Result<Option<(RecordBatch, BatchMetadata)>, ConnectionError> {
        let started = Instant::now();
        let Some(addresses) = exclusive_addresses(batch) else {
            return Ok(None);
        };
        let Some(region) = self.segment.held_region(addresses) else {
            return Ok(None);
        };
        let start = self.segment.mapping_address_range().start + region.offset as usize;
        let Some(stream) = InPlaceStream::of(batch, start..start + region.len_bytes as usize)
        else {
            return Ok(None);
        };
        self.frame_in_place(region, &stream)?;
        self.stats.outbound_in_place += 1;
        Ok(Some(self.pointer(
            batch,
            metadata,
            region.offset,
            stream.len_bytes,
            started,
        )))
    }

    fn frame_in_place(
        &self,
        region: HeldRegion,
        stream: &InPlaceStream,
    ) -> Result<(), ConnectionError> {
        self.segment.write_held(region, 0, &stream.prefix)?;
        self.segment.write_held(
            region,
            stream.end_of_stream_at as u64,
            &InPlaceStream::END_OF_STREAM,
        )?;
        self.segment.hand_over(region)?;
        Ok(())
    }

    /// The pointer batch and metadata that replace `batch`, now at `offset` in the segment.
    fn pointer(
        &mut self,
        batch: &RecordBatch,
        metadata: &BatchMetadata,
        offset: u64,
        len_bytes: usize,
        started: Instant,
    ) -> (RecordBatch, BatchMetadata) {
        let mut pointer_metadata = metadata.clone();
        pointer_metadata.insert(keys::SHM_OFFSET, offset.to_string());
        pointer_metadata.insert(keys::SHM_LENGTH, len_bytes.to_string());
        self.stats.outbound_shm += 1;
        self.stats.outbound_bytes += len_bytes as u64;
        self.stats.emit += started.elapsed();
        (RecordBatch::new_empty(batch.schema()), pointer_metadata)
    }

    /// Replaces a pointer batch by the batch it points at, decoded over the segment
    /// without a copy; the region is freed when the last array of it is dropped.
    pub fn resolve(
        &mut self,
        pointer: &RecordBatch,
        metadata: &BatchMetadata,
        offset: u64,
        length: u64,
        limits: Limits,
        nullability: Nullability,
    ) -> Result<(RecordBatch, BatchMetadata), ConnectionError> {
        let started = Instant::now();
        let buffer = self.segment.claim_buffer(offset, length)?;
        let (schema, mut batches) =
            decode_region_with(buffer, pointer.schema_ref(), limits, nullability)?;
        if batches.len() != 1 {
            return Err(WireError::Malformed(format!(
                "shm region holds {} batches, expected 1",
                batches.len()
            ))
            .into());
        }
        if schema.fields() != pointer.schema_ref().fields() {
            return Err(WireError::Malformed(
                "shm region schema differs from the pointer batch's".into(),
            )
            .into());
        }
        let (batch, _) = batches.pop().expect("one batch");
        let mut resolved = metadata.clone();
        resolved.remove(keys::SHM_OFFSET);
        resolved.remove(keys::SHM_LENGTH);
        self.stats.inbound_shm += 1;
        self.stats.inbound_bytes += length;
        self.stats.resolve += started.elapsed();
        if self.debug {
            quiver_process::log_line!(
                "[quiver-shm] resolved inbound off={offset} len={length} rows={} (zero-copy)",
                batch.num_rows()
            );
        }
        Ok((batch, resolved))
    }

    /// Call when the peer has answered a request with data (not an error): every server we speak
    /// to (vgi-rpc's, quiver's Rust and Python ones) attaches the segment when a request first
    /// names it and never re-opens it by name, so the owner can now drop the name and the memory
    /// lives exactly as long as the two mappings. A no-op on the attaching side and after the
    /// first time. A segment therefore serves one connection.
    pub fn peer_has_attached(&mut self) {
        if self.segment.unlink_name() && self.debug {
            quiver_process::log_line!(
                "[quiver-shm] unlinked {}: the peer has attached",
                self.segment.name()
            );
        }
    }

    /// Hands the table to the peer while this side blocks waiting on it: no
    /// allocation or free from here until [`ShmRoute::end_peer_turn`]. Idempotent. Only
    /// `Link::wait_for_peer` calls it, so that no read of the peer can forget the bracket.
    pub(crate) fn begin_peer_turn(&mut self) {
        if self.stats.wait_started.is_none() {
            self.segment.begin_peer_turn();
            self.stats.wait_started = Some(Instant::now());
        }
    }

    /// Takes the table back once the peer's message has arrived, applying frees
    /// that were deferred meanwhile. Idempotent.
    pub(crate) fn end_peer_turn(&mut self) {
        if let Some(started) = self.stats.wait_started.take() {
            self.segment.end_peer_turn();
            self.stats.waiting += started.elapsed();
        }
    }

    /// Adds processing time to the timeline.
    pub fn add_process_time(&mut self, elapsed: Duration) {
        self.stats.process += elapsed;
    }
}

/// Sum of the batch's buffer sizes, as the threshold is defined.
pub fn batch_bytes(batch: &RecordBatch) -> u64 {
    batch
        .columns()
        .iter()
        .map(|column| column.to_data().get_slice_memory_size().unwrap_or(0) as u64)
        .sum()
}

/// The addresses `batch`'s buffers span, if nothing but `batch` holds them: handing a region to
/// the peer while a clone survives here would let this side read bytes the peer may reuse.
/// Only flat columns qualify, whose arrays hold each buffer once (so the `ArrayData` taken here
/// accounts for exactly as many references again); anything else is copied.
fn exclusive_addresses(batch: &RecordBatch) -> Option<std::ops::Range<usize>> {
    let mut span: Option<std::ops::Range<usize>> = None;
    for column in batch.columns() {
        if Arc::strong_count(column) != 1 || !is_flat(column.data_type()) {
            return None;
        }
        let data: ArrayData = column.to_data();
        let buffers = data
            .buffers()
            .iter()
            .chain(data.nulls().map(|n| n.buffer()));
        for buffer in buffers {
            if buffer.is_empty() {
                continue;
            }
            // The array's reference and the one `data` took: no other holder.
            if buffer.strong_count() != 2 {
                return None;
            }
            let start = buffer.as_ptr() as usize;
            let end = start + buffer.len();
            span = Some(match span {
                Some(span) => span.start.min(start)..span.end.max(end),
                None => start..end,
            });
        }
    }
    span
}

fn is_flat(data_type: &DataType) -> bool {
    data_type.is_primitive()
        || matches!(
            data_type,
            DataType::Boolean
                | DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Binary
                | DataType::LargeBinary
                | DataType::FixedSizeBinary(_)
        )
}

fn has_dictionary(batch: &RecordBatch) -> bool {
    fn is_dictionary(data_type: &DataType) -> bool {
        match data_type {
            DataType::Dictionary(_, _) => true,
            DataType::List(f)
            | DataType::LargeList(f)
            | DataType::FixedSizeList(f, _)
            | DataType::Map(f, _) => is_dictionary(f.data_type()),
            DataType::Struct(fields) => fields.iter().any(|f| is_dictionary(f.data_type())),
            _ => false,
        }
    }
    batch
        .schema_ref()
        .fields()
        .iter()
        .any(|f| is_dictionary(f.data_type()))
}
