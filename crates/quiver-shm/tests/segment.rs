//! Creating, attaching and allocating within one process.

mod common;

use std::ffi::CString;
use std::io::Write;

use common::shm_name_exists;
use quiver_shm::{Allocation, Segment, ShmError, ALLOCATIONS_MAX, HEADER_SIZE_BYTES};

const SIZE_BYTES: u64 = 1 << 20;

#[test]
fn create_initialises_header_and_names_like_python() {
    let segment = Segment::create(SIZE_BYTES).unwrap();
    let owner_prefix = format!("psm_{}_", std::process::id());
    assert!(
        segment.name().starts_with(&owner_prefix),
        "{}",
        segment.name()
    );
    assert_eq!(segment.name().len(), owner_prefix.len() + 8);
    assert!(segment.is_owner());
    assert_eq!(segment.size_bytes(), SIZE_BYTES);
    assert_eq!(segment.data_size_bytes(), SIZE_BYTES - HEADER_SIZE_BYTES);
    assert_eq!(segment.allocation_count(), 0);
    assert!(quiver_shm::owned_segment_names().contains(&segment.name().to_owned()));
    // The header as a vgi-rpc peer reads it.
    // SAFETY: the mapping is at least 24 bytes (the header) and lives as long as `segment`.
    let header = unsafe {
        std::slice::from_raw_parts(segment.mapping_address_range().start as *const u8, 24)
    };
    assert_eq!(&header[0..4], b"VGIS");
    assert_eq!(u32::from_le_bytes(header[4..8].try_into().unwrap()), 1);
    assert_eq!(
        u64::from_le_bytes(header[8..16].try_into().unwrap()),
        SIZE_BYTES - 65536
    );
    assert_eq!(&header[16..24], &[0; 8]);
}

#[test]
fn owner_drop_unlinks_attach_drop_does_not() {
    let owner = Segment::create(SIZE_BYTES).unwrap();
    let name = owner.name().to_owned();
    let peer = Segment::attach(&name, SIZE_BYTES).unwrap();
    assert!(!peer.is_owner());
    drop(peer);
    assert!(shm_name_exists(&name));
    drop(owner);
    assert!(!shm_name_exists(&name));
    assert!(!quiver_shm::owned_segment_names().contains(&name));
}

#[test]
fn allocations_are_shared_between_mappings() {
    let owner = Segment::create(SIZE_BYTES).unwrap();
    let peer = Segment::attach(owner.name(), SIZE_BYTES).unwrap();
    let offset = owner.allocate(1000).unwrap();
    assert_eq!(offset, HEADER_SIZE_BYTES);
    owner.write(offset, b"hello").unwrap();
    assert_eq!(
        peer.allocations().unwrap(),
        vec![Allocation {
            offset,
            len_bytes: 1000
        }]
    );
    assert_eq!(peer.bytes(offset, 5).unwrap(), b"hello");
    peer.free(offset, 5).unwrap(); // the reader frees, with the written length
    assert_eq!(owner.allocation_count(), 0);
    assert!(matches!(
        owner.free(offset, 5),
        Err(ShmError::NoSuchAllocation { .. })
    ));
}

#[test]
fn full_segment_and_full_table_return_none() {
    let segment = Segment::create(HEADER_SIZE_BYTES + 64 * (ALLOCATIONS_MAX as u64 + 2)).unwrap();
    assert_eq!(segment.allocate(segment.data_size_bytes() + 1), None);
    for _ in 0..ALLOCATIONS_MAX {
        assert!(segment.allocate(64).is_some());
    }
    assert_eq!(segment.allocation_count(), ALLOCATIONS_MAX);
    assert_eq!(
        segment.allocate(1),
        None,
        "table full although data space remains"
    );
    segment.reset().unwrap();
    assert_eq!(segment.allocation_count(), 0);
}

#[test]
fn bytes_and_writes_are_bounds_checked() {
    let segment = Segment::create(SIZE_BYTES).unwrap();
    assert!(matches!(
        segment.bytes(0, 4),
        Err(ShmError::OutOfBounds { .. })
    ));
    assert!(matches!(
        segment.bytes(SIZE_BYTES - 1, 2),
        Err(ShmError::OutOfBounds { .. })
    ));
    assert!(matches!(
        segment.bytes(HEADER_SIZE_BYTES, u64::MAX),
        Err(ShmError::OutOfBounds { .. })
    ));
    assert_eq!(segment.bytes(SIZE_BYTES - 1, 1).unwrap(), &[0]);
    assert!(matches!(
        segment.write(HEADER_SIZE_BYTES, b"x"),
        Err(ShmError::NoSuchAllocation { .. })
    ));
    let offset = segment.allocate(4).unwrap();
    assert!(matches!(
        segment.write(offset, b"12345"),
        Err(ShmError::LengthExceedsAllocation { .. })
    ));
    let mut writer = segment.region_writer(offset).unwrap();
    writer.write_all(b"1234").unwrap();
    let error = writer.write(b"5").unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::StorageFull);
    assert_eq!(writer.written_bytes(), 4);
}

#[test]
fn invalid_sizes_and_names_are_refused() {
    assert!(matches!(
        Segment::create(HEADER_SIZE_BYTES),
        Err(ShmError::InvalidSize { .. })
    ));
    assert!(matches!(
        Segment::create((64 << 30) + 1),
        Err(ShmError::InvalidSize { .. })
    ));
    assert!(matches!(
        Segment::attach("/psm_x", SIZE_BYTES),
        Err(ShmError::InvalidName { .. })
    ));
    assert!(matches!(
        Segment::attach("psm_does_not_exist", SIZE_BYTES),
        Err(ShmError::Os { .. })
    ));
    let owner = Segment::create(SIZE_BYTES).unwrap();
    let error = Segment::attach(owner.name(), SIZE_BYTES * 2).unwrap_err();
    assert!(matches!(error, ShmError::SizeMismatch { .. }), "{error}");
    // Page rounding by the creator's OS is tolerated: we trust the kernel's size.
    let rounded = Segment::attach(owner.name(), SIZE_BYTES - 100).unwrap();
    assert_eq!(rounded.size_bytes(), SIZE_BYTES);
}

/// A foreign object with the wrong magic / version / data_size must not be attached.
#[test]
fn attach_validates_header() {
    let name = format!("quiver_test_{}", std::process::id());
    let path = CString::new(format!("/{name}")).unwrap();
    // SAFETY: `path` is a valid C string; the descriptor is closed or owned below.
    let fd = unsafe { libc::shm_open(path.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o600) };
    assert!(fd >= 0);
    // SAFETY: fd was just opened here and the File becomes its only owner.
    let mut file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let write_header =
        |file: &mut std::fs::File, magic: &[u8; 4], version: u32, data_size: u64, count: u32| {
            use std::io::{Seek, SeekFrom};
            let mut header = Vec::new();
            header.extend_from_slice(magic);
            header.extend_from_slice(&version.to_le_bytes());
            header.extend_from_slice(&data_size.to_le_bytes());
            header.extend_from_slice(&count.to_le_bytes());
            file.set_len(SIZE_BYTES).unwrap();
            file.seek(SeekFrom::Start(0)).unwrap();
            file.write_all(&header).unwrap();
        };
    let data_size = SIZE_BYTES - HEADER_SIZE_BYTES;
    write_header(&mut file, b"NOPE", 1, data_size, 0);
    assert!(matches!(
        Segment::attach(&name, SIZE_BYTES),
        Err(ShmError::BadMagic { .. })
    ));
    write_header(&mut file, b"VGIS", 2, data_size, 0);
    assert!(matches!(
        Segment::attach(&name, SIZE_BYTES),
        Err(ShmError::UnsupportedVersion { found: 2, .. })
    ));
    write_header(&mut file, b"VGIS", 1, data_size - 1, 0);
    assert!(matches!(
        Segment::attach(&name, SIZE_BYTES),
        Err(ShmError::DataSizeMismatch { .. })
    ));
    write_header(&mut file, b"VGIS", 1, data_size, 5000);
    assert!(matches!(
        Segment::attach(&name, SIZE_BYTES),
        Err(ShmError::CorruptTable { .. })
    ));
    write_header(&mut file, b"VGIS", 1, data_size, 0);
    assert!(Segment::attach(&name, SIZE_BYTES).is_ok());
    // SAFETY: a valid C string naming a segment this test created.
    unsafe { libc::shm_unlink(path.as_ptr()) };
}

#[test]
#[should_panic(expected = "during the peer's turn")]
fn allocating_during_the_peers_turn_is_a_bug() {
    let segment = Segment::create(SIZE_BYTES).unwrap();
    segment.begin_peer_turn();
    segment.allocate(1);
}

#[test]
fn concurrent_threads_allocate_disjoint_regions() {
    let segment = Segment::create(SIZE_BYTES).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let segment = segment.clone();
            std::thread::spawn(move || {
                for _ in 0..200 {
                    let offset = segment.allocate(100).unwrap();
                    segment.write(offset, &[7; 100]).unwrap();
                    segment.free(offset, 100).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(segment.allocation_count(), 0);
}

#[test]
fn unlinking_the_name_keeps_both_mappings_working() {
    let owner = Segment::create(SIZE_BYTES).unwrap();
    let name = owner.name().to_owned();
    let peer = Segment::attach(&name, SIZE_BYTES).unwrap();
    assert!(owner.is_name_linked() && !peer.is_name_linked());
    assert!(!peer.unlink_name(), "a peer never unlinks");
    assert!(owner.unlink_name());
    assert!(!owner.unlink_name(), "unlinked once");
    assert!(!owner.is_name_linked());
    assert!(!shm_name_exists(&name));
    assert!(!quiver_shm::owned_segment_names().contains(&name));
    assert!(
        Segment::attach(&name, SIZE_BYTES).is_err(),
        "nobody new can attach"
    );
    let offset = owner.allocate(4096).unwrap();
    owner.write(offset, b"after unlink").unwrap();
    assert_eq!(peer.bytes(offset, 12).unwrap(), b"after unlink");
    peer.free(offset, 12).unwrap();
    assert_eq!(owner.allocation_count(), 0);
    drop(owner); // Drop after an early unlink must not unlink (or unregister) again.
    assert_eq!(peer.allocation_count(), 0);
}

#[test]
fn segments_are_sparse_until_a_region_is_allocated() {
    let size_bytes = 64 << 20;
    let segment = Segment::create(size_bytes).unwrap();
    let committed = || allocated_bytes(segment.name());
    assert!(
        committed() <= HEADER_SIZE_BYTES,
        "only the header is committed at create: {} bytes",
        committed()
    );
    let len_bytes = 8 << 20;
    let offset = segment.allocate(len_bytes).unwrap();
    assert!(committed() >= HEADER_SIZE_BYTES + len_bytes);
    assert!(committed() < size_bytes / 2);
    segment.free(offset, len_bytes).unwrap();
}

/// Bytes the file system has allocated to a named object (`st_blocks` is in 512-byte units).
fn allocated_bytes(name: &str) -> u64 {
    let path = CString::new(format!("/{name}")).unwrap();
    // SAFETY: `path` is a valid C string; the descriptor is closed or owned below.
    let fd = unsafe { libc::shm_open(path.as_ptr(), libc::O_RDONLY, 0) };
    assert!(fd >= 0);
    // SAFETY: an all-zero C struct is a valid out-parameter.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open and `stat` is a writable out-parameter.
    assert_eq!(unsafe { libc::fstat(fd, &mut stat) }, 0);
    // SAFETY: fd was opened above and is closed once.
    unsafe { libc::close(fd) };
    stat.st_blocks as u64 * 512
}

#[test]
fn a_region_dev_shm_cannot_back_is_refused_not_a_sigbus() {
    // A sparse segment larger than the whole /dev/shm: creating it costs nothing, and allocating
    // more than the file system can hold fails cleanly (the kernel refuses it before allocating
    // anything, so the test cannot eat the machine's memory).
    // SAFETY: an all-zero C struct is a valid out-parameter.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    let path = CString::new("/dev/shm").unwrap();
    // SAFETY: a valid C string path and a writable out-parameter.
    assert_eq!(unsafe { libc::statvfs(path.as_ptr(), &mut stat) }, 0);
    let shm_total_bytes = stat.f_blocks as u64 * stat.f_frsize as u64;
    let size_bytes = shm_total_bytes + (1 << 30);
    if stat.f_blocks == 0 || size_bytes > quiver_shm::SEGMENT_SIZE_MAX_BYTES {
        eprintln!("skipped: /dev/shm of {shm_total_bytes} bytes is unlimited or too large");
        return;
    }
    let segment = Segment::create(size_bytes).unwrap();
    assert_eq!(segment.allocate(shm_total_bytes + (512 << 20)), None);
    assert_eq!(segment.commit_failure_count(), 1);
    assert_eq!(
        segment.allocation_count(),
        0,
        "the refused region left no table entry"
    );
    let offset = segment
        .allocate(1 << 20)
        .expect("a region that fits is still handed out");
    segment.write(offset, b"fine").unwrap();
}
