//! A JSON envelope is sent as its cached head (`{"data":[rows]`) and a tail written per response
//! (`,"meta":{…}}`, which holds the request id and the time). Both are joined here in the
//! response's content coding without compressing the head again: a zstd body is the head's frame
//! followed by the tail's (a zstd stream is any sequence of frames); a gzip body is one member
//! whose deflate data is the head's segment (ended by a sync flush, so it ends on a byte and a
//! block boundary) followed by the tail's final segment, with the two CRCs combined. Brotli
//! streams do not join: a brotli body is compressed whole, per response.

use flate2::{Compress, Compression, FlushCompress, Status};

use super::encoding::{compress, Encoding, COMPRESS_BYTES_MIN, GZIP_LEVEL, ZSTD_LEVEL};

/// A gzip head's checksum state: the CRC-32 and length of the uncompressed head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadCrc {
    pub crc: u32,
    pub len: u64,
}

/// The fixed gzip member header: deflate, no flags, no time, unknown OS.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// A head in `encoding`, as the cache keeps it; `None` for a coding that cannot be joined
/// (brotli), whose bodies are compressed whole.
pub fn compress_head(encoding: Encoding, head: &[u8]) -> Option<(Vec<u8>, Option<HeadCrc>)> {
    match encoding {
        Encoding::Identity => Some((head.to_vec(), None)),
        Encoding::Zstd => Some((compress(Encoding::Zstd, head), None)),
        Encoding::Gzip => {
            let mut crc = crc32fast::Hasher::new();
            crc.update(head);
            let segment = deflate(head, FlushCompress::Sync);
            Some((
                segment,
                Some(HeadCrc {
                    crc: crc.finalize(),
                    len: head.len() as u64,
                }),
            ))
        }
        Encoding::Br => None,
    }
}

/// The whole body: `head` (in `head_encoding`, with its CRC when gzip) and `tail` (identity),
/// in `wanted`. Returns the bytes and their coding: an identity head is compressed whole into
/// `wanted` when the body is big enough to gain; a compressed head keeps its coding.
pub fn join(
    head: &[u8],
    head_encoding: Encoding,
    head_crc: Option<HeadCrc>,
    tail: &[u8],
    wanted: Encoding,
) -> (Vec<u8>, Encoding) {
    match head_encoding {
        Encoding::Identity => {
            let mut whole = Vec::with_capacity(head.len() + tail.len());
            whole.extend_from_slice(head);
            whole.extend_from_slice(tail);
            if wanted == Encoding::Identity || whole.len() < COMPRESS_BYTES_MIN {
                (whole, Encoding::Identity)
            } else {
                (compress(wanted, &whole), wanted)
            }
        }
        Encoding::Zstd => {
            let tail_frame = zstd::bulk::compress(tail, ZSTD_LEVEL)
                .expect("zstd compresses any input held in memory");
            let mut body = Vec::with_capacity(head.len() + tail_frame.len());
            body.extend_from_slice(head);
            body.extend_from_slice(&tail_frame);
            (body, Encoding::Zstd)
        }
        Encoding::Gzip => {
            let head_crc = head_crc.expect("a gzip head carries its CRC");
            let tail_segment = deflate(tail, FlushCompress::Finish);
            let mut crc = crc32fast::Hasher::new_with_initial_len(head_crc.crc, head_crc.len);
            crc.update(tail);
            let len = head_crc.len + tail.len() as u64;
            let mut body = Vec::with_capacity(10 + head.len() + tail_segment.len() + 8);
            body.extend_from_slice(&GZIP_HEADER);
            body.extend_from_slice(head);
            body.extend_from_slice(&tail_segment);
            body.extend_from_slice(&crc.finalize().to_le_bytes());
            // ISIZE: the length modulo 2^32, as RFC 1952 defines it.
            body.extend_from_slice(&(len as u32).to_le_bytes());
            (body, Encoding::Gzip)
        }
        Encoding::Br => unreachable!("brotli heads are never made (compress_head)"),
    }
}

/// Raw deflate of `data`: ended by a sync flush (more segments follow) or finished.
fn deflate(data: &[u8], flush: FlushCompress) -> Vec<u8> {
    let mut compressor = Compress::new(Compression::new(GZIP_LEVEL), false);
    let mut out = Vec::with_capacity(data.len() / 2 + 128);
    loop {
        if out.len() == out.capacity() {
            out.reserve(out.capacity().max(1024));
        }
        let consumed = compressor.total_in() as usize;
        let status = compressor
            .compress_vec(&data[consumed..], &mut out, flush)
            .expect("deflate of memory cannot fail");
        let all_in = compressor.total_in() as usize == data.len();
        match (status, flush) {
            (Status::StreamEnd, _) => break,
            // A sync flush is complete once all input is in and the output has room left.
            (_, FlushCompress::Sync) if all_in && out.len() < out.capacity() => break,
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn head() -> Vec<u8> {
        let rows: Vec<String> = (0..400)
            .map(|i| format!("{{\"id\":{i},\"name\":\"row {i}\"}}"))
            .collect();
        format!("{{\"data\":[{}]", rows.join(",")).into_bytes()
    }

    const TAIL: &[u8] = b",\"meta\":{\"request_id\":\"abc\"}}";

    fn whole() -> Vec<u8> {
        [head(), TAIL.to_vec()].concat()
    }

    #[test]
    fn a_zstd_head_and_tail_decode_as_one_body() {
        let (head, crc) = compress_head(Encoding::Zstd, &head()).unwrap();
        let (body, coding) = join(&head, Encoding::Zstd, crc, TAIL, Encoding::Zstd);
        assert_eq!(coding, Encoding::Zstd);
        assert_eq!(zstd::stream::decode_all(&body[..]).unwrap(), whole());
    }

    #[test]
    fn a_gzip_head_and_tail_are_one_member() {
        let (head, crc) = compress_head(Encoding::Gzip, &head()).unwrap();
        let (body, coding) = join(&head, Encoding::Gzip, crc, TAIL, Encoding::Gzip);
        assert_eq!(coding, Encoding::Gzip);
        // A single-member decoder (it stops at the first member's end) reads the whole body.
        let mut decoded = Vec::new();
        flate2::read::GzDecoder::new(&body[..])
            .read_to_end(&mut decoded)
            .unwrap();
        assert_eq!(decoded, whole());
        assert!(body.len() < whole().len() / 2, "the head is compressed");
    }

    #[test]
    fn identity_heads_join_plainly_or_compress_whole() {
        let (body, coding) = join(&head(), Encoding::Identity, None, TAIL, Encoding::Identity);
        assert_eq!((body, coding), (whole(), Encoding::Identity));
        assert!(compress_head(Encoding::Br, &head()).is_none());
        let (body, coding) = join(&head(), Encoding::Identity, None, TAIL, Encoding::Br);
        assert_eq!(coding, Encoding::Br);
        let mut decoded = Vec::new();
        brotli::Decompressor::new(&body[..], 4096)
            .read_to_end(&mut decoded)
            .unwrap();
        assert_eq!(decoded, whole());
        let (small, coding) = join(
            b"{\"data\":[]",
            Encoding::Identity,
            None,
            TAIL,
            Encoding::Br,
        );
        assert_eq!(coding, Encoding::Identity);
        assert_eq!(small, b"{\"data\":[],\"meta\":{\"request_id\":\"abc\"}}");
    }
}
