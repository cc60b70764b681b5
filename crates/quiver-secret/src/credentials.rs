//! Credentials in an HTTP or gRPC `authorization` header: `Bearer <token>`, or `Basic
//! <base64(user:password)>` whose password is the token. Basic's base64 is read with or without
//! its `=` padding (ADBC's Go driver leaves it off, so a strict decoder refuses two user names in
//! three).

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;

const LENIENT_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// What follows the scheme `name` (matched without regard to case, as HTTP's schemes are), trimmed.
fn after_scheme<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    let (scheme, rest) = header.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case(name).then(|| rest.trim())
}

/// The token of a Bearer header value; `None` for any other scheme or an empty token.
pub fn bearer(header: &str) -> Option<&str> {
    after_scheme(header, "Bearer").filter(|token| !token.is_empty())
}

/// The user name and password of a Basic header value; `None` for any other scheme or for
/// malformed base64, UTF-8 or `user:password`.
pub fn basic(header: &str) -> Option<(String, String)> {
    let decoded = LENIENT_BASE64.decode(after_scheme(header, "Basic")?).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// The token a header value presents: Bearer's, or Basic's password.
pub fn token(header: &str) -> Option<String> {
    if let Some(token) = bearer(header) {
        return Some(token.to_string());
    }
    basic(header).map(|(_user, password)| password)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;

    #[test]
    fn bearer_and_basic_padded_or_not() {
        assert_eq!(token("Bearer abc").as_deref(), Some("abc"));
        assert_eq!(bearer(" bearer  abc "), Some("abc"));
        for user in ["u", "us", "usr", "user", "admin", "anyone"] {
            let encoded = STANDARD.encode(format!("{user}:tok"));
            assert_eq!(
                basic(&format!("Basic {encoded}")),
                Some((user.into(), "tok".into()))
            );
            let unpadded = encoded.trim_end_matches('=');
            assert_eq!(token(&format!("Basic {unpadded}")).as_deref(), Some("tok"));
        }
        for bad in [
            "",
            "Bearer",
            "Bearer  ",
            "Basic !!!",
            "Basic dXNlcg",
            "Digest x",
        ] {
            assert_eq!(token(bad), None, "{bad}");
        }
    }
}
