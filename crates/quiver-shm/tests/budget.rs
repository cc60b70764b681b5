//! The process budget of segment bytes. Its own test binary (one process, one test), because the
//! budget is process-wide and other tests create segments concurrently.

use quiver_shm::{reserved_segment_bytes, Segment, ShmError};

const SIZE_BYTES: u64 = 1 << 20;

#[test]
fn the_process_budget_bounds_created_segments_and_frees_on_drop() {
    assert_eq!(reserved_segment_bytes(), 0);
    let budget_bytes = 2 * SIZE_BYTES;
    let first = Segment::create_within_budget(SIZE_BYTES, budget_bytes).unwrap();
    let second = Segment::create_within_budget(SIZE_BYTES, budget_bytes).unwrap();
    assert_eq!(reserved_segment_bytes(), budget_bytes);
    let error = Segment::create_within_budget(SIZE_BYTES, budget_bytes).unwrap_err();
    assert!(
        matches!(
            error,
            ShmError::BudgetExceeded {
                size_bytes: SIZE_BYTES,
                reserved_bytes,
                budget_bytes: 2097152,
            } if reserved_bytes == budget_bytes
        ),
        "{error}"
    );
    assert_eq!(
        reserved_segment_bytes(),
        budget_bytes,
        "a refusal reserves nothing"
    );
    // An early unlink keeps the mapping, so the bytes stay counted until the segment is dropped.
    assert!(first.unlink_name());
    assert_eq!(reserved_segment_bytes(), budget_bytes);
    drop(first);
    assert_eq!(reserved_segment_bytes(), SIZE_BYTES);
    let third = Segment::create_within_budget(SIZE_BYTES, budget_bytes).unwrap();
    drop((second, third));
    assert_eq!(reserved_segment_bytes(), 0);
    assert!(
        Segment::create_within_budget(SIZE_BYTES, 0).is_err(),
        "0 turns shm off"
    );
}
