//! [`Token`] and [`Tokens`]: the bearer tokens the mint and decode routes require when
//! set, kept out of every log, error, `Debug` output and metric. A token file may hold
//! two tokens during a rollover; it is read again on SIGHUP and when it changes.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use crate::files::{Stamp, stamp};

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
#[derive(Debug, Clone, PartialEq, Eq)]
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

    /// Whether `presented` is this token, comparing every byte whatever the first
    /// difference.
    fn matches(&self, presented: &[u8]) -> bool {
        let mut diff = (presented.len() != self.0.len()) as u8;
        for (i, &b) in self.0.iter().enumerate() {
            diff |= b ^ presented.get(i).copied().unwrap_or(0);
        }
        diff == 0
    }
}

/// The token presented in an `Authorization` header value: `Bearer <token>`, the scheme
/// in any case (RFC 9110, section 11.1).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, token) = value.split_at_checked(7)?;
    scheme.eq_ignore_ascii_case(b"bearer ").then_some(token)
}

/// The tokens a server accepts: one, or two while clients move from the old to the new.
/// From a file they are read again on [`Tokens::reload`] and whenever the file changed
/// ([`Tokens::changed`]); a file that no longer reads keeps the tokens in use.
pub struct Tokens {
    current: ArcSwap<Vec<Token>>,
    file: Option<(PathBuf, Mutex<Stamp>)>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("count", &self.current.load().len())
            .field("file", &self.file.as_ref().map(|(p, _)| p))
            .finish()
    }
}

impl Tokens {
    /// One token, fixed (from the environment, say).
    pub fn fixed(token: Token) -> Arc<Tokens> {
        Arc::new(Tokens {
            current: ArcSwap::from_pointee(vec![token]),
            file: None,
        })
    }

    /// The tokens of a file: its first non-empty line, and its second during a rollover
    /// (a Kubernetes secret mounted as a file).
    pub fn from_file(path: impl Into<PathBuf>) -> Result<Arc<Tokens>, TokenError> {
        let path = path.into();
        let before = stamp(&path);
        let tokens = read(&path)?;
        Ok(Arc::new(Tokens {
            current: ArcSwap::from_pointee(tokens),
            file: Some((path, Mutex::new(before))),
        }))
    }

    /// How many tokens are accepted now (1, or 2 during a rollover).
    pub fn count(&self) -> usize {
        self.current.load().len()
    }

    /// The file the tokens come from, if any.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_ref().map(|(p, _)| p.as_path())
    }

    /// Whether an `Authorization` header value is `Bearer <a token accepted now>`. Every
    /// token is compared in full, whichever matches.
    pub fn admits(&self, authorization: Option<&[u8]>) -> bool {
        let Some(presented) = authorization.and_then(bearer) else {
            return false;
        };
        self.current
            .load()
            .iter()
            .fold(false, |ok, t| t.matches(presented) | ok)
    }

    /// Whether the file changed since it was last read (false for fixed tokens).
    pub fn changed(&self) -> bool {
        self.file.as_ref().is_some_and(|(path, seen)| {
            *seen.lock().unwrap_or_else(|e| e.into_inner()) != stamp(path)
        })
    }

    /// Reads the file again: from now on its tokens are the ones accepted. A file that
    /// does not read keeps the tokens in use and says why. Fixed tokens: nothing to do.
    pub fn reload(&self) -> Result<usize, TokenError> {
        let Some((path, seen)) = &self.file else {
            return Ok(self.count());
        };
        *seen.lock().unwrap_or_else(|e| e.into_inner()) = stamp(path);
        let tokens = read(path)?;
        let n = tokens.len();
        self.current.store(Arc::new(tokens));
        Ok(n)
    }
}

/// A token file's tokens: its first one or two non-empty lines.
fn read(path: &Path) -> Result<Vec<Token>, TokenError> {
    // A secret's file: regular, this user's or root's, and readable by no other user
    // (as a claim's password file).
    let bytes = flakeid::claim::store::read_key(path, "token file")
        .map_err(|e| TokenError(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| {
        TokenError(format!(
            "the token file {} is not UTF-8 text: give the token as one line",
            path.display()
        ))
    })?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() > 2 {
        return Err(TokenError(format!(
            "the token file {} holds {} tokens: give one, or two (old and new) during a rollover",
            path.display(),
            lines.len()
        )));
    }
    if lines.is_empty() {
        return Token::new("")
            .map(|t| vec![t])
            .map_err(|e| TokenError(format!("the token file {}: {e}", path.display())));
    }
    lines
        .into_iter()
        .map(|l| {
            Token::new(l).map_err(|e| TokenError(format!("the token file {}: {e}", path.display())))
        })
        .collect()
}

/// Reads the token file again; logged and counted either way.
pub(crate) fn reload_tokens(tokens: &Tokens) -> Result<(), String> {
    match tokens.reload() {
        Ok(n) => {
            metrics::counter!("flakeid_token_reloads_total", "result" => "ok").increment(1);
            tracing::info!(target: "flakeid_serve", tokens = n, file = ?tokens.file(), "token file reloaded");
            Ok(())
        }
        Err(e) => {
            metrics::counter!("flakeid_token_reloads_total", "result" => "failed").increment(1);
            tracing::error!(target: "flakeid_serve", error = %e, "token file reload failed; the tokens in use stay");
            Err(e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(text: &str) -> Arc<Tokens> {
        Tokens::fixed(Token::new(text).unwrap())
    }

    #[test]
    fn a_token_admits_itself_only_and_never_shows() {
        let t = fixed(" s3cret-value\n");
        assert!(t.admits(Some(b"Bearer s3cret-value")));
        // The scheme in any case, as RFC 9110 has it; the token exactly.
        assert!(t.admits(Some(b"bearer s3cret-value")));
        assert!(t.admits(Some(b"BEARER s3cret-value")));
        for wrong in [
            &b"Bearer s3cret-valu"[..],
            b"Bearer s3cret-value2",
            b"bearer S3cret-value",
            b"Basic s3cret-value",
            b"s3cret-value",
            b"Bearer ",
            b"Bearer",
        ] {
            assert!(
                !t.admits(Some(wrong)),
                "{:?}",
                String::from_utf8_lossy(wrong)
            );
        }
        assert!(!t.admits(None));
        assert!(!format!("{t:?}").contains("s3cret"));
        assert!(!format!("{:?}", Token::new("s3cret").unwrap()).contains("s3cret"));
        assert!(Token::new("  ").is_err());
        assert!(Token::new("two words").is_err());
    }

    /// A file of two tokens admits both (a rollover); a reload after the file changed
    /// admits the new set only; a file that no longer reads keeps the set in use; three
    /// tokens are refused, naming the file and not the tokens.
    #[test]
    fn a_token_file_rolls_over_and_reloads() {
        let dir = std::env::temp_dir().join(format!("flakeid-tokens-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        let _ = std::fs::remove_file(&path);
        std::fs::write(&path, "old-token\nnew-token\n").unwrap();
        // A secret's file: readable by this user only (the others' is refused).
        let mode = |m| std::os::unix::fs::PermissionsExt::from_mode(m);
        std::fs::set_permissions(&path, mode(0o644)).unwrap();
        let e = Tokens::from_file(&path).unwrap_err().to_string();
        assert!(e.contains("chmod 600") && !e.contains("old-token"), "{e}");
        std::fs::set_permissions(&path, mode(0o600)).unwrap();
        let t = Tokens::from_file(&path).unwrap();
        assert_eq!(t.count(), 2);
        assert!(t.admits(Some(b"Bearer old-token")) && t.admits(Some(b"Bearer new-token")));
        assert!(!t.changed());
        std::fs::write(&path, "new-token\n").unwrap();
        // The length changed, whatever the clock's resolution.
        assert!(t.changed());
        assert_eq!(t.reload().unwrap(), 1);
        assert!(!t.admits(Some(b"Bearer old-token")) && t.admits(Some(b"Bearer new-token")));
        std::fs::write(&path, "a\nb\nc\n").unwrap();
        let e = t.reload().unwrap_err().to_string();
        assert!(e.contains("holds 3 tokens") && e.contains("token"), "{e}");
        assert!(!e.contains("a\nb"), "{e}");
        assert!(t.admits(Some(b"Bearer new-token")), "the set in use stays");
        std::fs::remove_file(&path).unwrap();
        assert!(t.reload().is_err());
        assert!(t.admits(Some(b"Bearer new-token")));
        std::fs::remove_dir_all(&dir).ok();
    }
}
