//! HTTP content codings: which one a response takes (`Accept-Encoding`, q-values), and the
//! compression itself. Compressed bodies are cached beside the identity body, so a level is paid
//! once per (body, coding) on a miss; the levels below favour a miss's latency over the last few
//! percent of size.

use std::io::Write;

use super::format::parse_qvalue;

/// A response body's content coding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    Identity,
    Gzip,
    Zstd,
    Br,
}

/// The codings the gateway compresses with, in its order of preference when a caller accepts
/// several equally: zstd is the fastest at a given ratio, brotli the densest, gzip the most
/// widely understood.
const PREFERENCE: [Encoding; 3] = [Encoding::Zstd, Encoding::Br, Encoding::Gzip];

/// The most codings of one `Accept-Encoding` header that are read.
const CODINGS_MAX: usize = 32;

/// Bodies smaller than this are sent as they are: compression's framing would eat most of the
/// gain and the CPU is better spent elsewhere.
pub const COMPRESS_BYTES_MIN: usize = 512;

// The levels, measured on JSON bodies of orders rows (10 KB and 1 MB) on this project's 2-core
// machine, MB/s of input and the compression ratio:
//   zstd 1: 380-810 MB/s, 7.0-14.5x   zstd 3: 380-510 MB/s, 7.2-11.5x   zstd 6: 100-170 MB/s
//   gzip 1: 310-340 MB/s, 5.6-6.4x    gzip 5: 110-140 MB/s, 7.5-11.5x   gzip 6: 60-120 MB/s, same ratio
//   br 1: 280-320 MB/s, 6.2-8.7x      br 4: 100 MB/s, 7.6-12x           br 5: 60-75 MB/s, 8.9-21.5x
//   br 6: 26-46 MB/s, no denser       br 9: 2-14 MB/s                   br 11: under 1 MB/s
/// zstd level 1: the fastest, and on these bodies as dense as level 3.
pub(crate) const ZSTD_LEVEL: i32 = 1;
/// brotli quality 5: up to twice quality 4's ratio for 1.7 times its time; 6 and above cost far
/// more for almost nothing. A caller accepting zstd gets zstd, so brotli serves the rest.
const BROTLI_QUALITY: u32 = 5;
const BROTLI_WINDOW_LOG: u32 = 22;
/// gzip level 5: level 6's ratio at up to twice its speed.
pub(crate) const GZIP_LEVEL: u32 = 5;

impl Encoding {
    /// The `Content-Encoding` value; `None` for identity (the header is left out).
    pub fn header_value(self) -> Option<&'static str> {
        match self {
            Encoding::Identity => None,
            Encoding::Gzip => Some("gzip"),
            Encoding::Zstd => Some("zstd"),
            Encoding::Br => Some("br"),
        }
    }

    fn token(self) -> &'static str {
        self.header_value().unwrap_or("identity")
    }
}

/// Chooses the coding of a response from the caller's `Accept-Encoding`. The highest q-value
/// wins, ties go zstd > br > gzip; `q=0` refuses a coding; `*` stands for every coding not named.
/// Identity when the header is absent or allows none of the three (identity is always
/// acceptable in practice: a `406` here would help no client).
pub fn negotiate_encoding(accept_encoding: Option<&str>) -> Encoding {
    let Some(header) = accept_encoding else {
        return Encoding::Identity;
    };
    let mut named: Vec<(String, u16)> = Vec::new();
    let mut wildcard_q: Option<u16> = None;
    for item in header.split(',').take(CODINGS_MAX) {
        let mut parts = item.split(';');
        let coding = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        if coding.is_empty() {
            continue;
        }
        let mut q = Some(1000);
        for parameter in parts {
            if let Some((name, value)) = parameter.split_once('=') {
                if name.trim().eq_ignore_ascii_case("q") {
                    q = parse_qvalue(value.trim());
                }
            }
        }
        // A malformed q-value drops the coding, as if it were not listed.
        let Some(q) = q else { continue };
        let coding = if coding == "x-gzip" {
            "gzip".to_string()
        } else {
            coding
        };
        if coding == "*" {
            wildcard_q = Some(q);
        } else {
            named.push((coding, q));
        }
    }
    let q_of = |encoding: Encoding| -> u16 {
        // A coding listed twice takes its lowest q: the refusal is the safer reading.
        let listed = named
            .iter()
            .filter(|(coding, _)| coding == encoding.token())
            .map(|(_, q)| *q)
            .min();
        listed.or(wildcard_q).unwrap_or(0)
    };
    let mut best = (0u16, Encoding::Identity);
    for encoding in PREFERENCE {
        let q = q_of(encoding);
        if q > best.0 {
            best = (q, encoding);
        }
    }
    best.1
}

/// Compresses `body` with `encoding` (identity: a copy).
pub fn compress(encoding: Encoding, body: &[u8]) -> Vec<u8> {
    match encoding {
        Encoding::Identity => body.to_vec(),
        Encoding::Zstd => zstd::bulk::compress(body, ZSTD_LEVEL)
            .expect("zstd compresses any input held in memory"),
        Encoding::Gzip => {
            let mut encoder = flate2::write::GzEncoder::new(
                Vec::with_capacity(body.len() / 4),
                flate2::Compression::new(GZIP_LEVEL),
            );
            encoder
                .write_all(body)
                .expect("writing to a Vec cannot fail");
            encoder.finish().expect("writing to a Vec cannot fail")
        }
        Encoding::Br => {
            let mut output = Vec::with_capacity(body.len() / 4);
            {
                let mut writer = brotli::CompressorWriter::new(
                    &mut output,
                    64 * 1024,
                    BROTLI_QUALITY,
                    BROTLI_WINDOW_LOG,
                );
                writer
                    .write_all(body)
                    .expect("writing to a Vec cannot fail");
            }
            output
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn no_header_or_nothing_acceptable_means_identity() {
        assert_eq!(negotiate_encoding(None), Encoding::Identity);
        assert_eq!(negotiate_encoding(Some("")), Encoding::Identity);
        assert_eq!(negotiate_encoding(Some("identity")), Encoding::Identity);
        assert_eq!(
            negotiate_encoding(Some("deflate, compress")),
            Encoding::Identity
        );
        assert_eq!(negotiate_encoding(Some("*;q=0")), Encoding::Identity);
        assert_eq!(
            negotiate_encoding(Some("gzip;q=0, identity")),
            Encoding::Identity
        );
    }

    #[test]
    fn equal_q_prefers_zstd_then_br_then_gzip() {
        assert_eq!(
            negotiate_encoding(Some("gzip, deflate, br, zstd")),
            Encoding::Zstd
        );
        assert_eq!(negotiate_encoding(Some("gzip, deflate, br")), Encoding::Br);
        assert_eq!(negotiate_encoding(Some("gzip")), Encoding::Gzip);
        assert_eq!(negotiate_encoding(Some("x-gzip")), Encoding::Gzip);
        assert_eq!(negotiate_encoding(Some("*")), Encoding::Zstd);
        assert_eq!(negotiate_encoding(Some("GZIP, BR")), Encoding::Br);
    }

    #[test]
    fn q_values_rank_and_refuse() {
        assert_eq!(negotiate_encoding(Some("zstd;q=0.5, gzip")), Encoding::Gzip);
        assert_eq!(
            negotiate_encoding(Some("br;q=0.9, gzip;q=0.8")),
            Encoding::Br
        );
        assert_eq!(negotiate_encoding(Some("zstd;q=0, *")), Encoding::Br);
        assert_eq!(
            negotiate_encoding(Some("*;q=0.1, gzip;q=0.2")),
            Encoding::Gzip
        );
        // Listed twice: the refusal holds.
        assert_eq!(
            negotiate_encoding(Some("zstd, zstd;q=0, gzip")),
            Encoding::Gzip
        );
        // A malformed q drops only that coding.
        assert_eq!(negotiate_encoding(Some("zstd;q=x, gzip")), Encoding::Gzip);
    }

    #[test]
    fn header_values() {
        assert_eq!(Encoding::Identity.header_value(), None);
        assert_eq!(Encoding::Gzip.header_value(), Some("gzip"));
        assert_eq!(Encoding::Zstd.header_value(), Some("zstd"));
        assert_eq!(Encoding::Br.header_value(), Some("br"));
    }

    fn sample_body() -> Vec<u8> {
        let mut body = Vec::new();
        for row in 0..2000 {
            body.extend_from_slice(
                format!(
                    "{{\"id\":{row},\"region\":\"eu-west\",\"amount\":{}.25}},",
                    row * 7
                )
                .as_bytes(),
            );
        }
        body
    }

    #[test]
    fn every_coding_round_trips_and_shrinks_json() {
        let body = sample_body();
        assert_eq!(compress(Encoding::Identity, &body), body);

        let zstd_body = compress(Encoding::Zstd, &body);
        assert!(zstd_body.len() < body.len() / 4);
        assert_eq!(zstd::stream::decode_all(&zstd_body[..]).unwrap(), body);

        let gzip_body = compress(Encoding::Gzip, &body);
        assert!(gzip_body.len() < body.len() / 4);
        let mut unzipped = Vec::new();
        flate2::read::GzDecoder::new(&gzip_body[..])
            .read_to_end(&mut unzipped)
            .unwrap();
        assert_eq!(unzipped, body);

        let br_body = compress(Encoding::Br, &body);
        assert!(br_body.len() < body.len() / 4);
        let mut unbrotlied = Vec::new();
        brotli::Decompressor::new(&br_body[..], 4096)
            .read_to_end(&mut unbrotlied)
            .unwrap();
        assert_eq!(unbrotlied, body);
    }

    #[test]
    fn empty_bodies_round_trip() {
        for encoding in PREFERENCE {
            let compressed = compress(encoding, b"");
            assert!(!compressed.is_empty(), "{encoding:?} frames even nothing");
        }
        assert!(zstd::stream::decode_all(&compress(Encoding::Zstd, b"")[..])
            .unwrap()
            .is_empty());
    }
}
