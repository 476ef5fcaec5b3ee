//! [`Token`]: the bearer token the mint and decode routes require when one is set, kept
//! out of every log, error, `Debug` output and metric.

use std::fmt;
use std::path::Path;

/// A bearer token. Its `Debug` shows no secret, it has no `Display`, and comparing it
/// takes the same time wherever the first difference lies.
#[derive(Clone)]
pub struct Token(Vec<u8>);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// Why a token could not be read. Its message names the file, never the content.
#[derive(Debug)]
pub struct TokenError(String);

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TokenError {}

impl Token {
    /// A token from its text (surrounding whitespace dropped). Empty text is refused.
    pub fn new(text: &str) -> Result<Token, TokenError> {
        let t = text.trim();
        if t.is_empty() {
            return Err(TokenError(
                "the token is empty: give at least one character (16 random bytes or more is wise)"
                    .into(),
            ));
        }
        if t.bytes().any(|b| b.is_ascii_control() || b == b' ') {
            return Err(TokenError(
                "the token has spaces or control characters, which an Authorization header cannot carry: use printable characters".into(),
            ));
        }
        Ok(Token(t.as_bytes().to_vec()))
    }

    /// A token from the first line of a file (a Kubernetes secret mounted as a file).
    pub fn from_file(path: &Path) -> Result<Token, TokenError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| TokenError(format!("reading the token file {}: {e}", path.display())))?;
        Token::new(text.lines().next().unwrap_or(""))
            .map_err(|e| TokenError(format!("the token file {}: {e}", path.display())))
    }

    /// Whether an `Authorization` header value is `Bearer <this token>`.
    pub fn admits(&self, authorization: Option<&[u8]>) -> bool {
        let Some(value) = authorization else {
            return false;
        };
        let Some(presented) = value.strip_prefix(b"Bearer ") else {
            return false;
        };
        // Constant time in the content: every byte is compared.
        let mut diff = (presented.len() != self.0.len()) as u8;
        for (i, &b) in self.0.iter().enumerate() {
            diff |= b ^ presented.get(i).copied().unwrap_or(0);
        }
        diff == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_admits_itself_only_and_never_shows() {
        let t = Token::new(" s3cret-value\n").unwrap();
        assert!(t.admits(Some(b"Bearer s3cret-value")));
        for wrong in [
            &b"Bearer s3cret-valu"[..],
            b"Bearer s3cret-value2",
            b"bearer s3cret-value",
            b"s3cret-value",
            b"Bearer ",
        ] {
            assert!(
                !t.admits(Some(wrong)),
                "{:?}",
                String::from_utf8_lossy(wrong)
            );
        }
        assert!(!t.admits(None));
        assert!(!format!("{t:?}").contains("s3cret"));
        assert!(Token::new("  ").is_err());
        assert!(Token::new("two words").is_err());
    }
}
