//! [`Reason`]: what went wrong with a store, in words that say what to do, and the error
//! it came from when there was one.

use core::fmt;
use core::ops::Deref;
use std::error::Error;
use std::string::{String, ToString};
use std::sync::Arc;

/// The error a [`Reason`] came from: an I/O error, a store client's error.
type Cause = Arc<dyn Error + Send + Sync + 'static>;

/// What went wrong with a store, in words, and the error it came from when there was one
/// (an [`std::io::Error`], a store client's error): the `reason` of
/// [`ClaimError::Unreachable`](super::ClaimError::Unreachable),
/// [`Refused`](super::ClaimError::Refused), [`Io`](super::ClaimError::Io) and
/// [`Corrupt`](super::ClaimError::Corrupt).
///
/// It reads as its text (it derefs to `str` and prints as it), and the error it came from
/// is the [`source`](Error::source) of the `ClaimError` that carries it, to be downcast:
///
/// ```
/// use std::error::Error as _;
/// use flakeid::claim::{ClaimError, Secret};
///
/// let e = Secret::from_file("/nonexistent/password").unwrap_err();
/// assert!(matches!(&e, ClaimError::Io { reason, .. } if reason.contains("No such file")));
/// let io = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
/// assert_eq!(io.map(|io| io.kind()), Some(std::io::ErrorKind::NotFound));
/// ```
///
/// Two reasons are equal when their texts are: the error they came from is not compared
/// (most errors cannot be).
#[derive(Clone)]
pub struct Reason {
    text: String,
    cause: Option<Cause>,
}

impl Reason {
    /// A reason in words, from no other error.
    pub fn new(text: impl Into<String>) -> Reason {
        Reason {
            text: text.into(),
            cause: None,
        }
    }

    /// A reason whose text is `error`'s own, and which came from it.
    pub fn from_error(error: impl Error + Send + Sync + 'static) -> Reason {
        Reason {
            text: error.to_string(),
            cause: Some(Arc::new(error)),
        }
    }

    /// A reason in words (which say what `error` means here and what to do) that came from
    /// `error`.
    pub fn caused_by(text: impl Into<String>, error: impl Error + Send + Sync + 'static) -> Reason {
        Reason {
            text: text.into(),
            cause: Some(Arc::new(error)),
        }
    }

    /// The same cause in other words (more said about what it means, or what to do).
    pub fn reworded(self, text: impl Into<String>) -> Reason {
        Reason {
            text: text.into(),
            cause: self.cause,
        }
    }

    /// The same cause, its text after `what` (`"{what}: {text}"`): what was being done
    /// when it went wrong.
    pub fn context(self, what: impl fmt::Display) -> Reason {
        let text = std::format!("{what}: {}", self.text);
        self.reworded(text)
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The error this reason came from, if it came from one.
    pub fn cause(&self) -> Option<&(dyn Error + Send + Sync + 'static)> {
        self.cause.as_deref()
    }
}

impl Deref for Reason {
    type Target = str;

    fn deref(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cause {
            None => fmt::Debug::fmt(&self.text, f),
            Some(cause) => f
                .debug_struct("Reason")
                .field("text", &self.text)
                .field("cause", cause)
                .finish(),
        }
    }
}

impl PartialEq for Reason {
    fn eq(&self, other: &Reason) -> bool {
        self.text == other.text
    }
}

impl Eq for Reason {}

impl PartialEq<str> for Reason {
    fn eq(&self, other: &str) -> bool {
        self.text == other
    }
}

impl PartialEq<&str> for Reason {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl From<String> for Reason {
    fn from(text: String) -> Reason {
        Reason::new(text)
    }
}

impl From<&str> for Reason {
    fn from(text: &str) -> Reason {
        Reason::new(text)
    }
}

impl From<Reason> for String {
    fn from(reason: Reason) -> String {
        reason.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::format;

    /// A reason prints as its text alone, keeps its cause through a rewording, and
    /// compares by text.
    #[test]
    fn a_reason_keeps_its_cause_and_reads_as_its_text() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let r = Reason::caused_by("cannot connect: refused", io);
        assert_eq!(format!("{r}"), "cannot connect: refused");
        let r = r.reworded("cannot connect: refused; is it running?");
        let cause = r.cause().and_then(|c| c.downcast_ref::<std::io::Error>());
        assert_eq!(
            cause.map(std::io::Error::kind),
            Some(std::io::ErrorKind::ConnectionRefused)
        );
        assert_eq!(r, Reason::new("cannot connect: refused; is it running?"));
        assert!(Reason::new("x").cause().is_none());
        assert_eq!(
            Reason::from_error(std::fmt::Error).as_str(),
            "an error occurred when formatting an argument"
        );
    }
}
