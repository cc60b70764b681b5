//! `If-None-Match`: whether a caller's tags name the body about to be sent. A body's tag is its
//! [`BodyKey`](crate::cache::BodyKey)'s (known before any query runs), so a match answers `304`
//! without touching the cache or the server.

/// Whether an `If-None-Match` value names `etag` (weak comparison, `*` matches any).
pub fn none_match_hits(if_none_match: &str, etag: &str) -> bool {
    let bare = |tag: &str| tag.trim().trim_start_matches("W/").to_owned();
    let wanted = bare(etag);
    if_none_match
        .split(',')
        .map(str::trim)
        .any(|tag| tag == "*" || bare(tag) == wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_none_match_lists_and_weakness() {
        let tag = "W/\"0a1b\"";
        assert!(none_match_hits(tag, tag));
        assert!(none_match_hits(&format!("\"x\", {tag}"), tag));
        assert!(none_match_hits("\"0a1b\"", tag));
        assert!(none_match_hits("*", tag));
        assert!(!none_match_hits("W/\"other\"", tag));
        assert!(!none_match_hits("", tag));
    }
}
