//! Buffered table functions (`table_buffering`): the worker sees its whole input before it
//! answers. The exchange, as vgi-python 0.47.0 defines it:
//!
//! 1. `bind` (`function_type = TABLE_BUFFERING`, with the input schema), then `init` with
//!    `phase = TABLE_BUFFERING`: its header carries the `execution_id`; the stream carries no
//!    data and is closed at once.
//! 2. `table_buffering_process` (unary) per input batch ([`ProcessRequest`]): the worker stores
//!    the batch and answers an opaque `state_id`.
//! 3. `table_buffering_combine` (unary) once the input ended ([`CombineRequest`], every state id
//!    in any order): the worker answers `finalize_state_ids`.
//! 4. Per finalize id, in order, `init` with `phase = TABLE_BUFFERING_FINALIZE`, the
//!    `execution_id` and the `finalize_state_id`: a producer stream of output batches.
//! 5. `table_buffering_destructor` (unary, best effort) at the end.
//!
//! Every id is opaque bytes; the engine only carries them. A worker that keeps state across
//! processes keys it by `execution_id`; quiver's engine sends a whole buffered call on one
//! connection, so a worker may also keep it in its process.

use quiver_wire::ErrorReport;

use crate::ipc;
use crate::limits::NESTED_IPC_BYTES_MAX;
use crate::row::{RowBuilder, RowReader};
use crate::schemas;

/// Most state ids one buffered call may collect (and most finalize ids a combine may answer).
pub const STATE_IDS_MAX: usize = 1 << 20;

/// Who a buffering call is about: the function and its execution.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    /// The function's SQL name.
    pub function_name: String,
    /// Its schema.
    pub schema_path: Option<Vec<String>>,
    /// The execution the sink `init` opened.
    pub execution_id: Vec<u8>,
    /// The catalog token from `catalog_attach`.
    pub attach_opaque_data: Option<Vec<u8>>,
}

impl Target {
    fn write(&self, schema: &arrow_schema::SchemaRef) -> RowBuilder {
        let row = RowBuilder::new(schema.clone())
            .str("function_name", Some(&self.function_name))
            .bytes("execution_id", Some(&self.execution_id))
            .bytes("attach_opaque_data", self.attach_opaque_data.as_deref());
        match &self.schema_path {
            Some(path) => {
                let path: Vec<&str> = path.iter().map(String::as_str).collect();
                row.strs("schema_path", &path)
            }
            None => row,
        }
    }

    fn read(row: &RowReader<'_>) -> Result<Target, ErrorReport> {
        Ok(Target {
            function_name: row
                .str("function_name")?
                .ok_or_else(|| row.missing("function_name"))?,
            schema_path: row.strs("schema_path")?,
            execution_id: row
                .bytes("execution_id")?
                .ok_or_else(|| row.missing("execution_id"))?
                .to_vec(),
            attach_opaque_data: row.bytes("attach_opaque_data")?.map(<[u8]>::to_vec),
        })
    }
}

/// `TableBufferingProcessRequest`: one input batch to store.
#[derive(Debug, Clone)]
pub struct ProcessRequest {
    /// The function and execution.
    pub target: Target,
    /// The batch as a whole IPC stream.
    pub input_batch: Vec<u8>,
    /// Its position in the input, when the engine numbers them.
    pub batch_index: Option<i64>,
}

impl ProcessRequest {
    /// The serialized one-row batch.
    pub fn encode(&self) -> Vec<u8> {
        let row = self
            .target
            .write(&schemas::BUFFERING_PROCESS_REQUEST)
            .bytes("input_batch", Some(&self.input_batch))
            .int("batch_index", self.batch_index);
        ipc::encode_batch(&row.finish())
    }

    /// Reads a request; its batch is bounded by the nested-stream limit.
    pub fn decode(bytes: &[u8]) -> Result<ProcessRequest, ErrorReport> {
        let batch = ipc::decode_row(bytes, "TableBufferingProcessRequest")?;
        let row = RowReader::new(&batch, "TableBufferingProcessRequest");
        let input_batch = row
            .bytes("input_batch")?
            .ok_or_else(|| row.missing("input_batch"))?;
        if input_batch.len() > NESTED_IPC_BYTES_MAX {
            return Err(crate::errors::malformed(
                "TableBufferingProcessRequest",
                format!("an input batch of {} bytes", input_batch.len()),
            ));
        }
        Ok(ProcessRequest {
            target: Target::read(&row)?,
            input_batch: input_batch.to_vec(),
            batch_index: row.int("batch_index")?,
        })
    }
}

/// `TableBufferingCombineRequest`: the input ended.
#[derive(Debug, Clone)]
pub struct CombineRequest {
    /// The function and execution.
    pub target: Target,
    /// Every state id `process` answered.
    pub state_ids: Vec<Vec<u8>>,
}

impl CombineRequest {
    /// The serialized one-row batch.
    pub fn encode(&self) -> Vec<u8> {
        let row = self
            .target
            .write(&schemas::BUFFERING_COMBINE_REQUEST)
            .bytes_list("state_ids", &self.state_ids);
        ipc::encode_batch(&row.finish())
    }

    /// Reads a request.
    pub fn decode(bytes: &[u8]) -> Result<CombineRequest, ErrorReport> {
        let batch = ipc::decode_row(bytes, "TableBufferingCombineRequest")?;
        let row = RowReader::new(&batch, "TableBufferingCombineRequest");
        Ok(CombineRequest {
            target: Target::read(&row)?,
            state_ids: row.bytes_list("state_ids")?.unwrap_or_default(),
        })
    }
}

/// `TableBufferingDestructorRequest`.
pub fn destructor_request(target: &Target) -> Vec<u8> {
    ipc::encode_batch(
        &target
            .write(&schemas::BUFFERING_DESTRUCTOR_REQUEST)
            .finish(),
    )
}

/// Reads a `TableBufferingDestructorRequest`.
pub fn decode_destructor_request(bytes: &[u8]) -> Result<Target, ErrorReport> {
    let batch = ipc::decode_row(bytes, "TableBufferingDestructorRequest")?;
    Target::read(&RowReader::new(&batch, "TableBufferingDestructorRequest"))
}

/// `TableBufferingProcessResponse`.
pub fn process_response(state_id: &[u8]) -> Vec<u8> {
    ipc::encode_batch(
        &RowBuilder::new(schemas::BUFFERING_PROCESS_RESPONSE.clone())
            .bytes("state_id", Some(state_id))
            .finish(),
    )
}

/// Reads a `TableBufferingProcessResponse`.
pub fn decode_process_response(bytes: &[u8]) -> Result<Vec<u8>, ErrorReport> {
    let batch = ipc::decode_row(bytes, "TableBufferingProcessResponse")?;
    let row = RowReader::new(&batch, "TableBufferingProcessResponse");
    Ok(row
        .bytes("state_id")?
        .ok_or_else(|| row.missing("state_id"))?
        .to_vec())
}

/// `TableBufferingCombineResponse`.
pub fn combine_response(finalize_state_ids: &[Vec<u8>]) -> Vec<u8> {
    ipc::encode_batch(
        &RowBuilder::new(schemas::BUFFERING_COMBINE_RESPONSE.clone())
            .bytes_list("finalize_state_ids", finalize_state_ids)
            .finish(),
    )
}

/// Reads a `TableBufferingCombineResponse`, bounded by [`STATE_IDS_MAX`].
pub fn decode_combine_response(bytes: &[u8]) -> Result<Vec<Vec<u8>>, ErrorReport> {
    let batch = ipc::decode_row(bytes, "TableBufferingCombineResponse")?;
    let row = RowReader::new(&batch, "TableBufferingCombineResponse");
    let ids = row.bytes_list("finalize_state_ids")?.unwrap_or_default();
    if ids.len() > STATE_IDS_MAX {
        return Err(crate::errors::malformed(
            "TableBufferingCombineResponse",
            format!("{} finalize ids, more than {STATE_IDS_MAX}", ids.len()),
        ));
    }
    Ok(ids)
}

/// `TableBufferingDestructorResponse`: a dataclass without fields, which travels (as vgi-python
/// writes it) as a batch of no columns and no rows.
pub fn destructor_response() -> Vec<u8> {
    ipc::encode_batch(&arrow_array::RecordBatch::new_empty(
        schemas::BUFFERING_DESTRUCTOR_RESPONSE.clone(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffering_messages_round_trip() {
        let target = Target {
            function_name: "total".into(),
            schema_path: Some(vec!["main".into()]),
            execution_id: vec![3; 16],
            attach_opaque_data: None,
        };
        let process = ProcessRequest {
            target: target.clone(),
            input_batch: vec![1, 2, 3],
            batch_index: Some(4),
        };
        let decoded = ProcessRequest::decode(&process.encode()).unwrap();
        assert_eq!(decoded.target, target);
        assert_eq!(decoded.batch_index, Some(4));
        let combine = CombineRequest {
            target: target.clone(),
            state_ids: vec![b"a".to_vec(), b"b".to_vec()],
        };
        assert_eq!(
            CombineRequest::decode(&combine.encode()).unwrap().state_ids,
            combine.state_ids
        );
        assert_eq!(
            decode_destructor_request(&destructor_request(&target)).unwrap(),
            target
        );
        assert_eq!(
            decode_process_response(&process_response(b"s")).unwrap(),
            b"s"
        );
        assert_eq!(
            decode_combine_response(&combine_response(&[b"f".to_vec()])).unwrap(),
            vec![b"f".to_vec()]
        );
        let (_, empty) = ipc::decode_batches(&destructor_response(), "destructor").unwrap();
        assert_eq!(empty.iter().map(|b| b.num_columns()).sum::<usize>(), 0);
    }
}
