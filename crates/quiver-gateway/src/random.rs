//! Secret random bytes (API key tokens, the cursor signing key) from the operating system.

use std::io::Read;

/// `N` bytes from `/dev/urandom`, the kernel's CSPRNG (never blocks once the system has booted).
pub fn bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut out = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut out)?;
    Ok(out)
}
