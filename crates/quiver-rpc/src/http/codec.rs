//! HTTP content codings as vgi-rpc negotiates them: `zstd` and `gzip`.
//!
//! A response's coding comes from two request headers: VGI's own `X-VGI-Accept-Encoding`, which
//! outranks the standard `Accept-Encoding` (HTTP stacks inject the latter on their own, so a
//! client states its real preference in the former). A coding named only by the custom header is
//! stamped on `X-VGI-Content-Encoding`, so a client's HTTP layer does not decode it behind its
//! back. Decoding is bounded: a body that expands past the limit is refused while it decodes.

use std::io::{Read, Write};

/// The codings spoken, in order of preference.
pub const ENCODINGS: [&str; 2] = ["zstd", "gzip"];
/// The standard coding header.
pub const CONTENT_ENCODING: &str = "content-encoding";
/// The header stamping a coding chosen through `X-VGI-Accept-Encoding` alone.
pub const VGI_CONTENT_ENCODING: &str = "x-vgi-content-encoding";
/// Most tokens read from one accept header; the rest cannot change the outcome.
const ACCEPT_CODINGS_MAX: usize = 32;
/// Levels as vgi-rpc sets them: cheap on Arrow bodies, most of the gain.
const ZSTD_LEVEL: i32 = 1;
const GZIP_LEVEL: u32 = 6;

/// Why a body could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum CodingError {
    /// A coding other than zstd, gzip or identity.
    #[error("Content-Encoding {0:?} is not supported; supported: zstd, gzip")]
    Unsupported(String),
    /// Corrupt compressed data.
    #[error("cannot decode {0} body: {1}")]
    Corrupt(&'static str, std::io::Error),
    /// The body decodes to more than the limit.
    #[error("{0} body decodes to more than {1} bytes")]
    TooLarge(&'static str, usize),
}

fn parse(header: Option<&str>) -> Vec<String> {
    header
        .unwrap_or("")
        .split(',')
        .map(|part| {
            part.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|name| !name.is_empty())
        .take(ACCEPT_CODINGS_MAX)
        .collect()
}

/// The coding of a response and the header that names it, from the request's accept headers;
/// `None`: send the body as it is.
pub fn negotiate(
    accept: Option<&str>,
    vgi_accept: Option<&str>,
    producible: &[&'static str],
) -> Option<(&'static str, &'static str)> {
    let standard = parse(accept);
    let custom = parse(vgi_accept);
    let order = custom
        .iter()
        .chain(standard.iter().filter(|name| !custom.contains(name)));
    for coding in order {
        if coding == "identity" {
            return None;
        }
        if let Some(chosen) = producible.iter().find(|p| **p == coding) {
            let header = if standard.contains(coding) {
                CONTENT_ENCODING
            } else {
                VGI_CONTENT_ENCODING
            };
            return Some((chosen, header));
        }
    }
    None
}

/// Compresses `body` with `coding` (one of [`ENCODINGS`]).
pub fn encode(body: &[u8], coding: &str) -> Vec<u8> {
    match coding {
        // One shot, so the frame declares its size (some peers' one-shot decoders require it).
        "zstd" => zstd::bulk::compress(body, ZSTD_LEVEL).expect("zstd compresses in memory"),
        "gzip" => {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(GZIP_LEVEL));
            encoder.write_all(body).expect("gzip writes to memory");
            encoder.finish().expect("gzip finishes in memory")
        }
        other => panic!("no encoder for {other}"),
    }
}

/// Decodes `body` sent with `coding`, refusing more than `bytes_max` decoded bytes.
pub fn decode(body: Vec<u8>, coding: &str, bytes_max: usize) -> Result<Vec<u8>, CodingError> {
    let coding = coding.trim().to_ascii_lowercase();
    let (name, reader): (&'static str, Box<dyn Read + '_>) = match coding.as_str() {
        "" | "identity" => return Ok(body),
        "zstd" => (
            "zstd",
            Box::new(
                zstd::stream::read::Decoder::new(body.as_slice())
                    .map_err(|e| CodingError::Corrupt("zstd", e))?,
            ),
        ),
        "gzip" => (
            "gzip",
            Box::new(flate2::read::GzDecoder::new(body.as_slice())),
        ),
        _ => return Err(CodingError::Unsupported(coding)),
    };
    let mut decoded = Vec::new();
    let read = reader
        .take(bytes_max as u64 + 1)
        .read_to_end(&mut decoded)
        .map_err(|e| CodingError::Corrupt(name, e))?;
    if read > bytes_max {
        return Err(CodingError::TooLarge(name, bytes_max));
    }
    Ok(decoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_custom_header_outranks_and_is_stamped_apart() {
        assert_eq!(
            negotiate(Some("gzip, zstd"), Some("zstd"), &ENCODINGS),
            Some(("zstd", CONTENT_ENCODING))
        );
        assert_eq!(
            negotiate(Some("gzip"), Some("zstd"), &ENCODINGS),
            Some(("zstd", VGI_CONTENT_ENCODING))
        );
        assert_eq!(negotiate(Some("identity, gzip"), None, &ENCODINGS), None);
        assert_eq!(negotiate(Some("br"), None, &ENCODINGS), None);
        assert_eq!(negotiate(Some("gzip"), None, &[]), None);
    }

    #[test]
    fn codings_round_trip_and_decoding_is_bounded() {
        let body = vec![42u8; 100_000];
        for coding in ENCODINGS {
            let packed = encode(&body, coding);
            assert!(packed.len() < body.len() / 10);
            assert_eq!(decode(packed.clone(), coding, body.len()).unwrap(), body);
            assert!(matches!(
                decode(packed, coding, body.len() - 1),
                Err(CodingError::TooLarge(..))
            ));
        }
        assert!(matches!(
            decode(b"x".to_vec(), "br", 10),
            Err(CodingError::Unsupported(_))
        ));
        assert!(decode(b"not zstd".to_vec(), "zstd", 10).is_err());
    }
}
