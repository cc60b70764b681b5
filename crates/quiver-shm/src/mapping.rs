//! The system calls behind a segment: sizing, committing pages, mapping, and their errors.

use std::io;
use std::ptr::NonNull;

use crate::error::{Result, ShmError};
use crate::layout::{HEADER_SIZE_BYTES, SEGMENT_SIZE_MAX_BYTES};

/// Largest difference between an advertised size and the kernel's size that we accept on attach:
/// the creator's OS may round the object up to its page size (16 KiB on Apple Silicon, up to
/// 64 KiB on some arm64 kernels). vgi-rpc trusts the kernel's size the same way.
const ATTACH_SIZE_ROUNDING_MAX_BYTES: u64 = 65536;

/// How often committing a region's pages is retried when a signal interrupts it (tmpfs's
/// `fallocate` returns `EINTR` on a pending signal, even one that is handled).
#[cfg(target_os = "linux")]
const COMMIT_INTERRUPTED_RETRIES_MAX: usize = 16;

pub(crate) fn check_size(size_bytes: u64) -> Result<()> {
    if size_bytes <= HEADER_SIZE_BYTES {
        return Err(ShmError::InvalidSize {
            size_bytes,
            reason: "must exceed the 65536-byte header",
        });
    }
    if size_bytes > SEGMENT_SIZE_MAX_BYTES {
        return Err(ShmError::InvalidSize {
            size_bytes,
            reason: "exceeds the 64 GiB limit",
        });
    }
    Ok(())
}

/// `ftruncate` (sparse: no page is reserved) and map a freshly created object; commits only the
/// header's pages, which `create` writes at once.
pub(crate) fn size_and_map_new(
    fd: libc::c_int,
    size_bytes: u64,
    name: &str,
) -> Result<NonNull<u8>> {
    // SAFETY: fd is a valid descriptor we own.
    if unsafe { libc::ftruncate(fd, size_bytes as libc::off_t) } != 0 {
        return Err(os_error("ftruncate", name, io::Error::last_os_error()));
    }
    commit_pages(fd, 0, HEADER_SIZE_BYTES)
        .map_err(|error| os_error("fallocate (is /dev/shm large enough?)", name, error))?;
    map(fd, size_bytes, name)
}

/// Backs `[offset, offset + len_bytes)` of the object with pages now, so that a full `/dev/shm`
/// is an error here rather than a `SIGBUS` when the range is first written. Where the file
/// system cannot do it, the pages come on first touch as they would without this.
pub(crate) fn commit_pages(fd: libc::c_int, offset: u64, len_bytes: u64) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        for _ in 0..COMMIT_INTERRUPTED_RETRIES_MAX {
            // SAFETY: fd is a valid descriptor of a sized object; mode 0 only allocates.
            let status =
                unsafe { libc::fallocate(fd, 0, offset as libc::off_t, len_bytes as libc::off_t) };
            if status == 0 {
                return Ok(());
            }
            let error = io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EOPNOTSUPP) => return Ok(()),
                _ => return Err(error),
            }
        }
        Err(io::Error::from(io::ErrorKind::Interrupted))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (fd, offset, len_bytes);
        Ok(())
    }
}

/// `fstat` an existing object, check its size against the advertised one, and map all of it.
pub(crate) fn stat_and_map_existing(
    fd: libc::c_int,
    advertised_size_bytes: u64,
    name: &str,
) -> Result<(NonNull<u8>, u64)> {
    // SAFETY: zeroed `stat` is a valid out-parameter; fd is valid.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open and `stat` is a valid, writable out-parameter.
    if unsafe { libc::fstat(fd, &mut stat) } != 0 {
        return Err(os_error("fstat", name, io::Error::last_os_error()));
    }
    let actual_size_bytes = stat.st_size as u64;
    let rounding_bytes = actual_size_bytes.checked_sub(advertised_size_bytes);
    if rounding_bytes.is_none_or(|bytes| bytes >= ATTACH_SIZE_ROUNDING_MAX_BYTES) {
        return Err(ShmError::SizeMismatch {
            name: name.to_owned(),
            advertised_size_bytes,
            actual_size_bytes,
        });
    }
    check_size(actual_size_bytes)?;
    Ok((map(fd, actual_size_bytes, name)?, actual_size_bytes))
}

fn map(fd: libc::c_int, size_bytes: u64, name: &str) -> Result<NonNull<u8>> {
    // SAFETY: mapping a descriptor we own; the kernel picks the address.
    let address = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size_bytes as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    if address == libc::MAP_FAILED {
        return Err(os_error("mmap", name, io::Error::last_os_error()));
    }
    Ok(NonNull::new(address as *mut u8).expect("mmap never returns NULL on success"))
}

pub(crate) fn close_fd(fd: libc::c_int) {
    // SAFETY: fd is a valid descriptor we own; the mapping keeps the object alive without it.
    unsafe { libc::close(fd) };
}

pub(crate) fn current_pid() -> i32 {
    // SAFETY: no preconditions.
    unsafe { libc::getpid() }
}

pub(crate) fn os_error(operation: &'static str, name: &str, source: io::Error) -> ShmError {
    ShmError::Os {
        operation,
        name: name.to_owned(),
        source,
    }
}
