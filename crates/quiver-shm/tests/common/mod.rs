//! Helpers shared by the integration tests.
#![allow(dead_code)] // Each test binary uses a different subset.

use std::ffi::CString;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use arrow_buffer::Buffer;
use arrow_ipc::reader::StreamDecoder;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{DataType, Field, Schema};

/// Whether a POSIX shm name (without slash) currently exists.
pub fn shm_name_exists(name: &str) -> bool {
    let path = CString::new(format!("/{name}")).unwrap();
    // SAFETY: valid C string; we close what we open.
    let fd = unsafe { libc::shm_open(path.as_ptr(), libc::O_RDONLY, 0) };
    if fd >= 0 {
        // SAFETY: fd was opened just above and is closed once.
        unsafe { libc::close(fd) };
        return true;
    }
    let error = std::io::Error::last_os_error();
    assert_eq!(
        error.raw_os_error(),
        Some(libc::ENOENT),
        "unexpected shm_open error: {error}"
    );
    false
}

/// The batch both sides of the oracle tests exchange: `id` = 0..rows, `name` = "row{id}".
pub fn test_batch(rows: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, false),
    ]));
    let ids = Int64Array::from_iter_values(0..rows);
    let names = StringArray::from_iter_values((0..rows).map(|id| format!("row{id}")));
    RecordBatch::try_new(schema, vec![Arc::new(ids), Arc::new(names)]).unwrap()
}

/// Checks a decoded batch has `test_batch(rows)`'s content.
pub fn assert_test_batch(batch: &RecordBatch, rows: i64) {
    assert_eq!(batch, &test_batch(rows));
}

/// Writes one complete IPC stream (schema, batch, EOS) into `sink`.
pub fn write_stream(sink: impl std::io::Write, batch: &RecordBatch) {
    let mut writer = StreamWriter::try_new(sink, &batch.schema()).unwrap();
    writer.write(batch).unwrap();
    writer.finish().unwrap();
}

/// Decodes the single batch of a complete IPC stream held in `buffer`, without copying.
pub fn decode_stream(buffer: Buffer) -> RecordBatch {
    let mut buffer = buffer;
    let mut decoder = StreamDecoder::new();
    let batch = decoder.decode(&mut buffer).unwrap().expect("a batch");
    while !buffer.is_empty() {
        assert!(decoder.decode(&mut buffer).unwrap().is_none());
    }
    decoder.finish().unwrap();
    batch
}

/// Address of the `id` column's values, to prove it points into a mapping.
pub fn id_values_address(batch: &RecordBatch) -> usize {
    let ids = batch
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    ids.values().inner().as_ptr() as usize
}

/// Locates the vgi-rpc 0.52.2 oracle interpreter, or fails the test with directions.
pub fn oracle_python() -> PathBuf {
    let workspace_venv =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv-oracle/bin/python");
    let candidates: Vec<PathBuf> = match std::env::var_os("QUIVER_ORACLE_PYTHON") {
        Some(explicit) => vec![PathBuf::from(explicit)],
        None => vec![workspace_venv, PathBuf::from("/tmp/vgi313/bin/python")],
    };
    let python = candidates
        .iter()
        .find(|path| path.exists())
        .unwrap_or_else(|| {
            panic!(
            "no vgi-rpc oracle Python found (tried {candidates:?}); set QUIVER_ORACLE_PYTHON to a \
             Python >= 3.13 with `pip install vgi-rpc==0.52.2 pyarrow`"
        )
        });
    let probe = Command::new(python)
        .args([
            "-c",
            "import importlib.metadata as m, vgi_rpc.shm; print(m.version('vgi-rpc'))",
        ])
        .output()
        .unwrap_or_else(|error| panic!("cannot run oracle {python:?}: {error}"));
    let version = String::from_utf8_lossy(&probe.stdout).trim().to_owned();
    assert!(
        probe.status.success() && version == "0.52.2",
        "oracle {python:?} must have vgi-rpc 0.52.2 importable (got {version:?}, stderr: {})",
        String::from_utf8_lossy(&probe.stderr)
    );
    python.clone()
}

/// Path of a script under tests/oracle/.
pub fn oracle_script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/oracle")
        .join(name)
}
