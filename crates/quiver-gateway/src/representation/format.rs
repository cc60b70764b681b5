//! Which format a response takes: `?format=` when the caller sent it, else the `Accept` header's
//! preference (q-values, wildcards), else JSON.

/// A response body's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    Json,
    Ndjson,
    Csv,
    ArrowStream,
    Parquet,
}

/// The formats in the gateway's own order of preference, used when a caller accepts several
/// equally (`*/*` means JSON).
pub const FORMATS: [Format; 5] = [
    Format::Json,
    Format::Ndjson,
    Format::Csv,
    Format::ArrowStream,
    Format::Parquet,
];

/// The most media ranges of one `Accept` header that are read; the rest are ignored (the header's
/// size is bounded by the HTTP layer, this bounds the work).
const ACCEPT_RANGES_MAX: usize = 64;

/// No format the caller accepts is one the gateway writes: `406 Not Acceptable`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct NotAcceptable {
    pub message: String,
}

impl Format {
    /// The `Content-Type` of a body of this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Json => "application/json; charset=utf-8",
            Format::Ndjson => "application/x-ndjson",
            Format::Csv => "text/csv; charset=utf-8",
            Format::ArrowStream => "application/vnd.apache.arrow.stream",
            Format::Parquet => "application/vnd.apache.parquet",
        }
    }

    /// The value of `?format=` that asks for this format.
    pub fn name(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Ndjson => "ndjson",
            Format::Csv => "csv",
            Format::ArrowStream => "arrow",
            Format::Parquet => "parquet",
        }
    }

    /// Parses a `?format=` value.
    pub fn from_name(name: &str) -> Option<Format> {
        FORMATS.into_iter().find(|format| format.name() == name)
    }

    /// Whether HTTP compression pays for a body of this format: Parquet pages are compressed
    /// already, a second pass only costs time.
    pub fn compressible(self) -> bool {
        self != Format::Parquet
    }

    /// The media types (lowercase `type/subtype`) that name this format: the registered one first,
    /// then the aliases clients send in practice.
    fn media_types(self) -> &'static [&'static str] {
        match self {
            Format::Json => &["application/json"],
            Format::Ndjson => &[
                "application/x-ndjson",
                "application/ndjson",
                "application/jsonl",
            ],
            Format::Csv => &["text/csv"],
            Format::ArrowStream => &["application/vnd.apache.arrow.stream"],
            Format::Parquet => &["application/vnd.apache.parquet", "application/x-parquet"],
        }
    }
}

/// Chooses a response's format. `?format=` wins over `Accept`; without either the answer is JSON.
/// Among the formats `Accept` allows, the highest q-value wins; on a tie, the one matched by the
/// more specific range, then the one the caller listed first, then the gateway's order
/// ([`FORMATS`]).
pub fn negotiate(
    accept: Option<&str>,
    format_param: Option<&str>,
) -> Result<Format, NotAcceptable> {
    if let Some(name) = format_param {
        return Format::from_name(name).ok_or_else(|| NotAcceptable {
            message: "format must be one of json, ndjson, csv, arrow, parquet".to_string(),
        });
    }
    let Some(accept) = accept.map(str::trim).filter(|accept| !accept.is_empty()) else {
        return Ok(Format::Json);
    };
    let ranges: Vec<MediaRange> = accept
        .split(',')
        .take(ACCEPT_RANGES_MAX)
        .filter_map(MediaRange::parse)
        .collect();
    let mut best: Option<(Preference, Format)> = None;
    for format in FORMATS {
        let Some(preference) = preference(&ranges, format) else {
            continue;
        };
        if preference.q_thousandths == 0 {
            continue;
        }
        // Strictly greater: on a full tie the earlier format of FORMATS stays.
        if best.is_none_or(|(held, _)| preference > held) {
            best = Some((preference, format));
        }
    }
    best.map(|(_, format)| format).ok_or_else(|| NotAcceptable {
        message: "the Accept header allows none of application/json, application/x-ndjson, \
                  text/csv, application/vnd.apache.arrow.stream, application/vnd.apache.parquet"
            .to_string(),
    })
}

/// How much a caller wants one format, ordered so that the greater is preferred.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Preference {
    q_thousandths: u16,
    specificity: u8,
    /// The range's position in the header, negated so that earlier is greater.
    position_negated: i64,
}

/// The preference `Accept` gives `format`: the q-value of the most specific range that matches it
/// (RFC 9110 12.5.1), `None` when no range does.
fn preference(ranges: &[MediaRange], format: Format) -> Option<Preference> {
    let mut best: Option<(u8, usize, u16)> = None;
    for (position, range) in ranges.iter().enumerate() {
        let specificity = format
            .media_types()
            .iter()
            .filter_map(|media_type| range.specificity_for(media_type))
            .max();
        let Some(specificity) = specificity else {
            continue;
        };
        if best.is_none_or(|(held, _, _)| specificity > held) {
            best = Some((specificity, position, range.q_thousandths));
        }
    }
    best.map(|(specificity, position, q_thousandths)| Preference {
        q_thousandths,
        specificity,
        position_negated: -(position as i64),
    })
}

/// One media range of an `Accept` header: `type/subtype` (either may be `*`) and its q-value.
#[derive(Debug)]
struct MediaRange {
    main: String,
    sub: String,
    q_thousandths: u16,
}

impl MediaRange {
    /// `None` for a range that is malformed (it is ignored, as if absent).
    fn parse(text: &str) -> Option<MediaRange> {
        let mut parts = text.split(';');
        let media = parts.next()?.trim().to_ascii_lowercase();
        let (main, sub) = media.split_once('/')?;
        if main.is_empty() || sub.is_empty() || (main == "*" && sub != "*") {
            return None;
        }
        let mut q_thousandths = 1000;
        for parameter in parts {
            let Some((name, value)) = parameter.split_once('=') else {
                continue;
            };
            if name.trim().eq_ignore_ascii_case("q") {
                q_thousandths = parse_qvalue(value.trim())?;
            }
        }
        Some(MediaRange {
            main: main.to_string(),
            sub: sub.to_string(),
            q_thousandths,
        })
    }

    /// How specifically this range names `media_type` (2: exactly, 1: `type/*`, 0: `*/*`), or
    /// `None` when it does not match.
    fn specificity_for(&self, media_type: &str) -> Option<u8> {
        let (main, sub) = media_type
            .split_once('/')
            .expect("a media type has a slash");
        match (self.main.as_str(), self.sub.as_str()) {
            ("*", "*") => Some(0),
            (range_main, "*") if range_main == main => Some(1),
            (range_main, range_sub) if range_main == main && range_sub == sub => Some(2),
            _ => None,
        }
    }
}

/// Parses a q-value (RFC 9110 12.4.2: `0`, `1`, up to three decimals) into thousandths; `None`
/// when malformed or out of range.
pub(crate) fn parse_qvalue(text: &str) -> Option<u16> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole = match whole {
        "0" => 0,
        "1" => 1000,
        _ => return None,
    };
    let mut fraction_thousandths = 0u16;
    for (index, digit) in fraction.bytes().enumerate() {
        fraction_thousandths += u16::from(digit - b'0') * [100, 10, 1][index];
    }
    let q = whole + fraction_thousandths;
    (q <= 1000).then_some(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(header: &str) -> Result<Format, NotAcceptable> {
        negotiate(Some(header), None)
    }

    #[test]
    fn json_without_a_preference() {
        assert_eq!(negotiate(None, None), Ok(Format::Json));
        assert_eq!(accept(""), Ok(Format::Json));
        assert_eq!(accept("*/*"), Ok(Format::Json));
        assert_eq!(accept("application/*"), Ok(Format::Json));
        // A browser's header: nothing named but the wildcard.
        assert_eq!(
            accept("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
            Ok(Format::Json)
        );
    }

    #[test]
    fn the_named_type_wins() {
        assert_eq!(accept("text/csv"), Ok(Format::Csv));
        assert_eq!(accept("application/x-ndjson"), Ok(Format::Ndjson));
        assert_eq!(accept("application/ndjson"), Ok(Format::Ndjson));
        assert_eq!(
            accept("application/vnd.apache.arrow.stream"),
            Ok(Format::ArrowStream)
        );
        assert_eq!(
            accept("application/vnd.apache.parquet"),
            Ok(Format::Parquet)
        );
        assert_eq!(accept("Text/CSV; charset=utf-8"), Ok(Format::Csv));
        assert_eq!(accept("text/*"), Ok(Format::Csv));
    }

    #[test]
    fn q_values_rank_and_refuse() {
        assert_eq!(accept("application/json;q=0.5, text/csv"), Ok(Format::Csv));
        assert_eq!(
            accept("application/json;q=0.5, text/csv;q=0.4"),
            Ok(Format::Json)
        );
        assert_eq!(accept("text/csv;q=0.9, */*;q=0.1"), Ok(Format::Csv));
        // The most specific range sets a format's q: JSON is refused though */* allows all.
        assert_eq!(accept("application/json;q=0, */*"), Ok(Format::Ndjson));
        assert!(accept("*/*;q=0").unwrap_err().message.contains("Accept"));
        assert!(accept("application/json;q=0").is_err());
        // Equal q: the exact name beats the wildcard, then the caller's order.
        assert_eq!(accept("*/*, text/csv"), Ok(Format::Csv));
        assert_eq!(accept("text/csv, application/json"), Ok(Format::Csv));
        assert_eq!(accept("application/json, text/csv"), Ok(Format::Json));
    }

    #[test]
    fn unknown_and_malformed_ranges_are_ignored() {
        assert!(accept("image/png").is_err());
        assert!(accept("text/html, application/xml").is_err());
        assert_eq!(accept("garbage, text/csv"), Ok(Format::Csv));
        assert_eq!(accept("text/csv;q=2, application/json"), Ok(Format::Json));
        assert_eq!(accept("text/csv;q=abc, application/json"), Ok(Format::Json));
        assert_eq!(accept("*/csv, application/json"), Ok(Format::Json));
    }

    #[test]
    fn the_format_param_wins_over_accept() {
        assert_eq!(
            negotiate(Some("text/csv"), Some("arrow")),
            Ok(Format::ArrowStream)
        );
        assert_eq!(negotiate(Some("image/png"), Some("json")), Ok(Format::Json));
        assert_eq!(negotiate(None, Some("parquet")), Ok(Format::Parquet));
        assert_eq!(negotiate(None, Some("ndjson")), Ok(Format::Ndjson));
        assert_eq!(negotiate(None, Some("csv")), Ok(Format::Csv));
        assert!(negotiate(None, Some("xml")).is_err());
        assert!(negotiate(None, Some("JSON")).is_err());
    }

    #[test]
    fn q_value_grammar() {
        assert_eq!(parse_qvalue("1"), Some(1000));
        assert_eq!(parse_qvalue("1.000"), Some(1000));
        assert_eq!(parse_qvalue("0.5"), Some(500));
        assert_eq!(parse_qvalue("0.125"), Some(125));
        assert_eq!(parse_qvalue("0"), Some(0));
        assert_eq!(parse_qvalue("1.5"), None);
        assert_eq!(parse_qvalue("0.1234"), None);
        assert_eq!(parse_qvalue("-1"), None);
        assert_eq!(parse_qvalue(""), None);
    }

    #[test]
    fn content_types_and_names_round_trip() {
        for format in FORMATS {
            assert_eq!(Format::from_name(format.name()), Some(format));
            assert_eq!(accept(format.content_type()), Ok(format));
        }
    }
}
