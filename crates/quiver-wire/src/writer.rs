//! Encodes one IPC stream (schema, batches with custom metadata, end marker) into a
//! byte buffer.
//!
//! arrow-rs encodes the batch body and the flatbuffer header but offers no way to
//! set a message's `custom_metadata`, which is where the vgi-rpc wire keeps every
//! framework key. So the header arrow-rs produced is re-built here with metadata
//! added; the body is used as encoded.
//!
//! Output goes into a caller-owned `Vec<u8>` so that a connection can gather a whole
//! reply and hand the transport one write.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_ipc::writer::{
    DictionaryTracker, EncodedData, IpcDataGenerator, IpcWriteContext, IpcWriteOptions,
};
use arrow_schema::{Schema, SchemaRef};
use flatbuffers::FlatBufferBuilder;

use crate::body::{record_batch_header, BodyLayout};
use crate::error::{Result, WireError};
use crate::framing::{padded_len, ALIGNMENT_BYTES, CONTINUATION, END_OF_STREAM};
use crate::metadata::BatchMetadata;
use crate::schema_cache::encoded_schema;
use crate::sink::IpcSink;

/// Writes one IPC stream. Created by [`StreamWriter::begin`], which emits the schema
/// message; [`StreamWriter::finish`] emits the end marker.
pub struct StreamWriter {
    schema: SchemaRef,
    tracker: DictionaryTracker,
    options: IpcWriteOptions,
    context: IpcWriteContext,
    batches_written: u64,
    has_dictionaries: bool,
}

impl StreamWriter {
    /// Starts a stream on `schema`, appending the schema message to `out`.
    pub fn begin<S: IpcSink + ?Sized>(schema: &SchemaRef, out: &mut S) -> Result<Self> {
        let options =
            IpcWriteOptions::try_new(ALIGNMENT_BYTES, false, arrow_ipc::MetadataVersion::V5)?;
        let mut tracker = DictionaryTracker::new(false);
        let encode = |tracker: &mut DictionaryTracker| {
            let encoded = IpcDataGenerator {}
                .schema_to_bytes_with_dictionary_tracker(schema, tracker, &options);
            let mut framed = Vec::with_capacity(encoded.ipc_message.len() + 16);
            append_message(&mut framed, &encoded.ipc_message, &[]);
            framed
        };
        let has_dictionaries = schema
            .fields()
            .iter()
            .any(|f| contains_dictionary(f.data_type()));
        if has_dictionaries {
            // The tracker must see the schema to number its dictionaries.
            out.put_bytes(&encode(&mut tracker));
        } else {
            out.put_bytes(&encoded_schema(schema, || encode(&mut tracker)));
        }
        Ok(Self {
            schema: schema.clone(),
            tracker,
            options,
            context: IpcWriteContext::default(),
            batches_written: 0,
            has_dictionaries,
        })
    }

    /// The stream's schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Number of record batches written so far.
    pub fn batches_written(&self) -> u64 {
        self.batches_written
    }

    /// Appends `batch` (and any dictionaries it needs first) with `metadata`.
    ///
    /// Common layouts are framed over the arrays' own buffers (a gathering sink
    /// then writes them without a copy); others go through arrow-rs's encoder.
    pub fn write<S: IpcSink + ?Sized>(
        &mut self,
        batch: &RecordBatch,
        metadata: &BatchMetadata,
        out: &mut S,
    ) -> Result<()> {
        if batch.schema_ref().fields() != self.schema.fields() {
            return Err(WireError::Malformed(format!(
                "batch schema {:?} does not match stream schema {:?}",
                batch.schema_ref(),
                self.schema
            )));
        }
        if !self.has_dictionaries {
            if let Some(layout) = BodyLayout::of(batch) {
                let header = record_batch_header(batch.num_rows(), &layout, metadata);
                append_frame_prefix(out, &header);
                for part in &layout.parts {
                    out.put_buffer(part);
                    out.put_zeros(padded_len(part.len()) - part.len());
                }
                self.batches_written += 1;
                return Ok(());
            }
        }
        let (dictionaries, encoded) = IpcDataGenerator {}.encode(
            batch,
            &mut self.tracker,
            &self.options,
            &mut self.context,
        )?;
        for dictionary in &dictionaries {
            append_encoded(out, dictionary, &BatchMetadata::new())?;
        }
        append_encoded(out, &encoded, metadata)?;
        self.batches_written += 1;
        Ok(())
    }

    /// Appends the end-of-stream marker.
    pub fn finish<S: IpcSink + ?Sized>(self, out: &mut S) {
        out.put_bytes(&END_OF_STREAM);
    }
}

/// Encodes a whole stream of one schema and the given batches.
pub fn encode_stream<S: IpcSink + ?Sized>(
    schema: &SchemaRef,
    batches: &[(RecordBatch, BatchMetadata)],
    out: &mut S,
) -> Result<()> {
    let mut writer = StreamWriter::begin(schema, out)?;
    for (batch, metadata) in batches {
        writer.write(batch, metadata, out)?;
    }
    writer.finish(out);
    Ok(())
}

/// Encodes a zero-row batch on `schema` carrying only `metadata` (logs, errors,
/// pointers, cancels all look like this on the wire).
pub fn empty_batch(schema: &SchemaRef) -> RecordBatch {
    RecordBatch::new_empty(schema.clone())
}

/// The empty schema used for protocol-level replies and producer input.
pub fn empty_schema() -> SchemaRef {
    Arc::new(Schema::empty())
}

fn append_encoded<S: IpcSink + ?Sized>(
    out: &mut S,
    encoded: &EncodedData,
    metadata: &BatchMetadata,
) -> Result<()> {
    let header = if metadata.is_empty() {
        None
    } else {
        Some(with_custom_metadata(&encoded.ipc_message, metadata)?)
    };
    let header_bytes = header.as_deref().unwrap_or(&encoded.ipc_message);
    append_message(out, header_bytes, &encoded.arrow_data);
    Ok(())
}

/// Frames one message: continuation, padded metadata length, metadata, padding, body.
fn append_message<S: IpcSink + ?Sized>(out: &mut S, header: &[u8], body: &[u8]) {
    debug_assert_eq!(
        body.len() % ALIGNMENT_BYTES,
        0,
        "arrow-rs pads bodies to the alignment"
    );
    append_frame_prefix(out, header);
    out.put_bytes(body);
}

/// Continuation, padded metadata length, metadata and its padding.
pub(crate) fn append_frame_prefix<S: IpcSink + ?Sized>(out: &mut S, header: &[u8]) {
    let prefix_bytes = 8;
    let padded_header_len = padded_len(header.len() + prefix_bytes) - prefix_bytes;
    out.put_bytes(&CONTINUATION);
    out.put_bytes(&(padded_header_len as i32).to_le_bytes());
    out.put_bytes(header);
    out.put_zeros(padded_header_len - header.len());
}

fn contains_dictionary(data_type: &arrow_schema::DataType) -> bool {
    use arrow_schema::DataType;
    match data_type {
        DataType::Dictionary(_, _) => true,
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _)
        | DataType::ListView(f)
        | DataType::LargeListView(f) => contains_dictionary(f.data_type()),
        DataType::Struct(fields) => fields.iter().any(|f| contains_dictionary(f.data_type())),
        DataType::Union(fields, _) => fields
            .iter()
            .any(|(_, f)| contains_dictionary(f.data_type())),
        DataType::RunEndEncoded(_, values) => contains_dictionary(values.data_type()),
        _ => false,
    }
}

/// Re-builds a RecordBatch or DictionaryBatch `Message` flatbuffer with `metadata` as
/// its custom metadata. Only record batches carry framework keys.
fn with_custom_metadata(message_bytes: &[u8], metadata: &BatchMetadata) -> Result<Vec<u8>> {
    let message = arrow_ipc::root_as_message(message_bytes)
        .map_err(|e| WireError::Malformed(format!("encoder produced an invalid message: {e}")))?;
    let batch = message.header_as_record_batch().ok_or_else(|| {
        WireError::Malformed("custom metadata only goes on record batches".into())
    })?;
    let mut fbb = FlatBufferBuilder::with_capacity(message_bytes.len() + 64 * (metadata.len() + 1));

    let nodes: Vec<arrow_ipc::FieldNode> = batch
        .nodes()
        .map(|v| v.iter().copied().collect())
        .unwrap_or_default();
    let buffers: Vec<arrow_ipc::Buffer> = batch
        .buffers()
        .map(|v| v.iter().copied().collect())
        .unwrap_or_default();
    let variadic: Option<Vec<i64>> = batch.variadicBufferCounts().map(|v| v.iter().collect());
    if batch.compression().is_some() {
        return Err(WireError::Malformed(
            "compressed bodies are not produced by this writer".into(),
        ));
    }
    let nodes = fbb.create_vector(&nodes);
    let buffers = fbb.create_vector(&buffers);
    let variadic = variadic.map(|v| fbb.create_vector(&v));
    let record_batch = arrow_ipc::RecordBatch::create(
        &mut fbb,
        &arrow_ipc::RecordBatchArgs {
            length: batch.length(),
            nodes: Some(nodes),
            buffers: Some(buffers),
            compression: None,
            variadicBufferCounts: variadic,
        },
    );
    let pairs: Vec<_> = metadata
        .iter()
        .map(|(key, value)| {
            let key = fbb.create_string(key);
            let value = fbb.create_string(value);
            arrow_ipc::KeyValue::create(
                &mut fbb,
                &arrow_ipc::KeyValueArgs {
                    key: Some(key),
                    value: Some(value),
                },
            )
        })
        .collect();
    let custom_metadata = fbb.create_vector(&pairs);
    let root = arrow_ipc::Message::create(
        &mut fbb,
        &arrow_ipc::MessageArgs {
            version: message.version(),
            header_type: arrow_ipc::MessageHeader::RecordBatch,
            header: Some(record_batch.as_union_value()),
            bodyLength: message.bodyLength(),
            custom_metadata: Some(custom_metadata),
        },
    );
    fbb.finish(root, None);
    Ok(fbb.finished_data().to_vec())
}
