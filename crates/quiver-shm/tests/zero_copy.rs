//! `claim_buffer`: no copy, and the region is freed exactly when the last buffer goes.

mod common;

use common::{assert_test_batch, decode_stream, id_values_address, test_batch, write_stream};
use quiver_shm::{Segment, ShmError};

const SIZE_BYTES: u64 = 4 << 20;

#[test]
fn buffer_points_into_the_mapping_and_frees_on_last_drop() {
    let segment = Segment::create(SIZE_BYTES).unwrap();
    let offset = segment.allocate(4096).unwrap();
    segment.write(offset, b"zero copy").unwrap();

    let buffer = segment.claim_buffer(offset, 9).unwrap();
    let mapping = segment.mapping_address_range();
    assert_eq!(
        buffer.as_ptr() as usize,
        mapping.start + offset as usize,
        "no copy was made"
    );
    assert_eq!(buffer.as_slice(), b"zero copy");

    // A write by the peer (through its own mapping) shows through the buffer: same memory.
    let peer = Segment::attach(segment.name(), SIZE_BYTES).unwrap();
    peer.write(offset, b"Z").unwrap();
    assert_eq!(buffer.as_slice(), b"Zero copy");
    drop(peer);

    let clone = buffer.clone();
    let slice = buffer.slice_with_length(5, 4);
    drop(buffer);
    assert_eq!(segment.allocation_count(), 1, "a clone is alive");
    drop(clone);
    assert_eq!(segment.allocation_count(), 1, "a slice is alive");
    assert_eq!(slice.as_slice(), b"copy");
    drop(slice);
    assert_eq!(
        segment.allocation_count(),
        0,
        "freed when the last buffer dropped"
    );
}

#[test]
fn claimed_regions_cannot_be_freed_or_claimed_twice() {
    let segment = Segment::create(SIZE_BYTES).unwrap();
    let offset = segment.allocate(64).unwrap();
    let buffer = segment.claim_buffer(offset, 64).unwrap();
    assert!(matches!(
        segment.claim_buffer(offset, 1),
        Err(ShmError::AlreadyClaimed { .. })
    ));
    assert!(matches!(
        segment.free(offset, 64),
        Err(ShmError::AlreadyClaimed { .. })
    ));
    assert!(matches!(
        segment.reset(),
        Err(ShmError::AlreadyClaimed { .. })
    ));
    assert!(matches!(
        segment.claim_buffer(offset + 64, 1),
        Err(ShmError::NoSuchAllocation { .. })
    ));
    drop(buffer);
    assert!(matches!(
        segment.claim_buffer(offset, 65),
        Err(ShmError::NoSuchAllocation { .. })
    ));
}

#[test]
fn buffer_keeps_the_segment_mapped_and_named() {
    let segment = Segment::create(SIZE_BYTES).unwrap();
    let name = segment.name().to_owned();
    let offset = segment.allocate(8).unwrap();
    segment.write(offset, b"survivor").unwrap();
    let buffer = segment.claim_buffer(offset, 8).unwrap();
    drop(segment);
    assert!(common::shm_name_exists(&name), "the buffer holds the owner");
    assert_eq!(buffer.as_slice(), b"survivor");
    drop(buffer);
    assert!(!common::shm_name_exists(&name));
}

#[test]
fn drops_during_the_peers_turn_are_deferred() {
    let segment = Segment::create(SIZE_BYTES).unwrap();
    let offset = segment.allocate(64).unwrap();
    let buffer = segment.claim_buffer(offset, 64).unwrap();
    segment.begin_peer_turn();
    drop(buffer);
    assert_eq!(segment.allocation_count(), 1, "the table is the peer's now");
    assert_eq!(segment.end_peer_turn(), 1);
    assert_eq!(segment.allocation_count(), 0);
    assert_eq!(segment.release_failure_count(), 0);
}

#[test]
fn decoded_ipc_columns_share_the_mapping() {
    let segment = Segment::create(SIZE_BYTES).unwrap();
    let batch = test_batch(10_000);
    let offset = segment.allocate(1 << 20).unwrap();
    let mut writer = segment.region_writer(offset).unwrap();
    write_stream(&mut writer, &batch);
    let written_bytes = writer.written_bytes();

    let decoded = decode_stream(segment.claim_buffer(offset, written_bytes).unwrap());
    assert_test_batch(&decoded, 10_000);
    assert!(
        segment
            .mapping_address_range()
            .contains(&id_values_address(&decoded)),
        "decoded in place"
    );
    assert_eq!(
        segment.allocation_count(),
        1,
        "columns keep the region allocated"
    );
    drop(decoded);
    assert_eq!(segment.allocation_count(), 0);
}

#[test]
fn buffers_can_be_dropped_on_another_thread() {
    let segment = Segment::create(SIZE_BYTES).unwrap();
    let buffers: Vec<_> = (0..32)
        .map(|_| {
            let offset = segment.allocate(1000).unwrap();
            segment.claim_buffer(offset, 1000).unwrap()
        })
        .collect();
    std::thread::spawn(move || drop(buffers)).join().unwrap();
    assert_eq!(segment.allocation_count(), 0);
}

#[test]
fn a_region_is_leased_beside_the_connection_only_in_this_sides_turn() {
    let segment = Segment::create(1 << 20).unwrap();
    segment.begin_peer_turn();
    assert!(
        segment.lease_region_unless_peer_turn(4096).is_none(),
        "the table is the peer's"
    );
    assert_eq!(segment.allocation_count(), 0);
    segment.end_peer_turn();

    let mut region = segment
        .lease_region_unless_peer_turn(4096)
        .expect("this side's turn");
    let mut buffer = region.buffer(1000).expect("room in the region");
    buffer.as_mut_slice().fill(7);
    let buffer = buffer.into_buffer();
    drop(region);
    assert_eq!(segment.allocation_count(), 1, "the buffer holds the region");
    // Dropped during the peer's turn, the region is freed when the turn ends.
    segment.begin_peer_turn();
    drop(buffer);
    assert_eq!(segment.allocation_count(), 1);
    segment.end_peer_turn();
    assert_eq!(segment.allocation_count(), 0);
}
