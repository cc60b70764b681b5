//! Cross-compatibility with vgi-rpc 0.52.2's own `vgi_rpc.shm`, in both directions.
//!
//! Needs the oracle interpreter (see `common::oracle_python`); fails, never skips, without it.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use common::{
    assert_test_batch, decode_stream, id_values_address, oracle_python, oracle_script,
    shm_name_exists, test_batch, write_stream,
};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use quiver_shm::{Allocation, OutputRegion, Segment, HEADER_SIZE_BYTES};
use quiver_wire::InPlaceStream;
use serde_json::Value;

const SIZE_BYTES: u64 = 8 << 20;
const ROWS: i64 = 20_000;

fn raw_pattern(len_bytes: usize) -> Vec<u8> {
    (0..len_bytes).map(|i| ((i * 7 + 3) % 251) as u8).collect()
}

/// A 1000-byte region of `raw_pattern`, for the oracle to check byte for byte.
fn raw_region(segment: &Segment) -> (u64, u64) {
    let len_bytes = 1000;
    let offset = segment.allocate(len_bytes).unwrap();
    segment
        .write(offset, &raw_pattern(len_bytes as usize))
        .unwrap();
    (offset, len_bytes)
}

fn parse_json(line: &str) -> Value {
    serde_json::from_str(line)
        .unwrap_or_else(|error| panic!("oracle printed non-JSON {line:?}: {error}"))
}

fn u64_pair(value: &Value) -> (u64, u64) {
    let pair = value.as_array().expect("an [offset, length] pair");
    assert_eq!(pair.len(), 2);
    (pair[0].as_u64().unwrap(), pair[1].as_u64().unwrap())
}

/// (a) quiver creates and writes; vgi-rpc attaches, validates, reads, frees, and writes back.
#[test]
fn python_attaches_and_frees_a_rust_segment() {
    let segment = Segment::create(SIZE_BYTES).unwrap();

    let (raw_offset, raw_len_bytes) = raw_region(&segment);

    let ipc_capacity_bytes = 2 << 20;
    let ipc_offset = segment.allocate(ipc_capacity_bytes).unwrap();
    let mut writer = segment.region_writer(ipc_offset).unwrap();
    write_stream(&mut writer, &test_batch(ROWS));
    let ipc_len_bytes = writer.written_bytes();
    assert_eq!(ipc_offset % 64, 0);

    let report = attach_oracle(
        &segment,
        (raw_offset, raw_len_bytes),
        (ipc_offset, ipc_capacity_bytes),
        ipc_len_bytes,
    );

    // The oracle freed both regions; the only entry left is the batch it wrote itself.
    let written = u64_pair(&report["written"]);
    assert_eq!(
        written.0, HEADER_SIZE_BYTES,
        "first fit reused the freed space"
    );
    let allocations = segment.allocations().unwrap();
    assert_eq!(allocations.len(), 1);
    assert_eq!(allocations[0].offset, written.0);
    assert!(
        allocations[0].len_bytes >= written.1,
        "vgi-rpc allocates an estimate, reports bytes written"
    );

    let decoded = decode_stream(segment.claim_buffer(written.0, written.1).unwrap());
    assert_test_batch(&decoded, ROWS);
    assert!(segment
        .mapping_address_range()
        .contains(&id_values_address(&decoded)));
    drop(decoded);
    assert_eq!(
        segment.allocation_count(),
        0,
        "our zero-copy read freed vgi-rpc's region"
    );
    assert!(
        shm_name_exists(segment.name()),
        "attaching peer did not unlink our segment"
    );
}

/// (a') As (a), but the batch is built in the segment and framed around its buffers in place
/// (a gap between the framing and the body, buffers where they were carved): vgi-rpc decodes it,
/// and frees the region we handed over.
#[test]
fn python_reads_a_batch_built_in_place() {
    let segment = Segment::create(SIZE_BYTES).unwrap();
    let (raw_offset, raw_len_bytes) = raw_region(&segment);

    let region_len_bytes = 2 << 20;
    let mut region = segment.lease_region(region_len_bytes).unwrap();
    let region_offset = region.offset();
    let batch = build_in_region(&mut region, &test_batch(ROWS));
    drop(region);
    let start = segment.mapping_address_range().start + region_offset as usize;
    let stream = InPlaceStream::of(&batch, start..start + region_len_bytes as usize)
        .expect("a flat batch inside one region frames in place");
    let held = segment
        .held_region(start + 4096..start + 4104)
        .expect("the leased region is held");
    assert_eq!(held.offset, region_offset);
    segment.write_held(held, 0, &stream.prefix).unwrap();
    segment
        .write_held(
            held,
            stream.end_of_stream_at as u64,
            &InPlaceStream::END_OF_STREAM,
        )
        .unwrap();
    segment.hand_over(held).unwrap();
    drop(batch);
    assert_eq!(
        segment.allocation_count(),
        2,
        "a handed-over region is not ours to free"
    );

    let report = attach_oracle(
        &segment,
        (raw_offset, raw_len_bytes),
        (region_offset, region_len_bytes),
        stream.len_bytes as u64,
    );
    assert_eq!(u64_pair(&report["written"]).0, HEADER_SIZE_BYTES);
}

/// Runs the attach oracle over `segment`, whose table holds the `raw` and `ipc` allocations
/// (offset, allocated length), the stream in `ipc` being `ipc_len_bytes` long; its report.
fn attach_oracle(segment: &Segment, raw: (u64, u64), ipc: (u64, u64), ipc_len_bytes: u64) -> Value {
    let spec = format!(
        r#"{{"table": [[{}, {}], [{}, {}]], "raw": [{}, {}], "ipc": [{}, {ipc_len_bytes}], "rows": {ROWS}}}"#,
        raw.0, raw.1, ipc.0, ipc.1, raw.0, raw.1, ipc.0
    );
    let output = Command::new(oracle_python())
        .arg(oracle_script("attach_rust_segment.py"))
        .args([segment.name(), &segment.size_bytes().to_string(), &spec])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "vgi-rpc oracle rejected our segment:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = parse_json(String::from_utf8(output.stdout).unwrap().trim());
    assert!(report["ok"].as_bool() == Some(true));
    report
}

/// `batch`'s columns copied into buffers carved from `region` after 4 KiB of room, as a
/// function builds its output there.
fn build_in_region(region: &mut OutputRegion, batch: &RecordBatch) -> RecordBatch {
    assert!(region.reserve(4096));
    let mut carve = |bytes: &[u8]| {
        let mut buffer = region.buffer(bytes.len()).expect("room in the region");
        buffer.as_mut_slice().copy_from_slice(bytes);
        buffer.into_buffer()
    };
    let ids = batch.column(0).as_primitive::<Int64Type>();
    let names = batch.column(1).as_string::<i32>();
    let ids = Int64Array::new(
        ScalarBuffer::new(carve(ids.values().inner()), 0, ids.len()),
        None,
    );
    let offsets = carve(names.offsets().inner().inner());
    let values = carve(names.values());
    let names = StringArray::new(
        OffsetBuffer::new(ScalarBuffer::new(offsets, 0, names.len() + 1)),
        values,
        None,
    );
    RecordBatch::try_new(batch.schema(), vec![Arc::new(ids), Arc::new(names)]).unwrap()
}

/// (b) vgi-rpc creates and writes; quiver attaches, reads, frees, and writes back.
#[test]
fn rust_attaches_and_frees_a_python_segment() {
    let python = oracle_python();
    let mut oracle = Command::new(&python)
        .arg(oracle_script("create_python_segment.py"))
        .args([SIZE_BYTES.to_string(), ROWS.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut to_oracle = oracle.stdin.take().unwrap();
    let mut from_oracle = BufReader::new(oracle.stdout.take().unwrap()).lines();
    let mut next_reply = || {
        let line = from_oracle
            .next()
            .expect("oracle exited early (see its stderr above)")
            .unwrap();
        parse_json(&line)
    };

    let created = next_reply();
    let name = created["name"].as_str().unwrap().to_owned();
    let size_bytes = created["size"].as_u64().unwrap();
    assert_eq!(size_bytes, SIZE_BYTES);
    let segment = Segment::attach(&name, size_bytes).unwrap();
    assert!(!segment.is_owner());
    let table: Vec<Allocation> = created["table"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            let (offset, len_bytes) = u64_pair(entry);
            Allocation { offset, len_bytes }
        })
        .collect();
    assert_eq!(segment.allocations().unwrap(), table);

    let (batch_offset, batch_len_bytes) = u64_pair(&created["batch"]);
    let decoded = decode_stream(segment.claim_buffer(batch_offset, batch_len_bytes).unwrap());
    assert_test_batch(&decoded, ROWS);
    assert!(
        segment
            .mapping_address_range()
            .contains(&id_values_address(&decoded)),
        "zero copy"
    );
    drop(decoded);

    let (raw_offset, raw_len_bytes) = u64_pair(&created["raw"]);
    assert_eq!(
        segment.bytes(raw_offset, raw_len_bytes).unwrap(),
        &raw_pattern(raw_len_bytes as usize)[..]
    );
    segment.free(raw_offset, raw_len_bytes).unwrap();
    assert_eq!(segment.allocation_count(), 0);

    writeln!(to_oracle, "table").unwrap();
    assert!(
        next_reply()["table"].as_array().unwrap().is_empty(),
        "vgi-rpc sees our frees"
    );

    // Now quiver writes into vgi-rpc's segment and vgi-rpc reads and frees it.
    let offset = segment.allocate(2 << 20).unwrap();
    let mut writer = segment.region_writer(offset).unwrap();
    write_stream(&mut writer, &test_batch(ROWS));
    let written_bytes = writer.written_bytes();
    writeln!(to_oracle, "resolve {offset} {written_bytes}").unwrap();
    let resolved = next_reply();
    assert!(
        resolved["equal"].as_bool() == Some(true),
        "vgi-rpc decoded our stream differently"
    );
    assert!(resolved["table"].as_array().unwrap().is_empty());
    assert_eq!(segment.allocation_count(), 0);

    writeln!(to_oracle, "quit").unwrap();
    assert_eq!(next_reply()["unlinked"].as_str().unwrap(), name);
    assert!(oracle.wait().unwrap().success());
    assert!(
        !shm_name_exists(&name),
        "the owner (vgi-rpc) unlinked; we never do"
    );
    drop(segment);
}
