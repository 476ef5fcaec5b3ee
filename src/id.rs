//! The ID type.

use core::fmt;
use core::str::FromStr;

use crate::encoding::{Encoding, MAX_LEN};
use crate::error::{Error, ParseError};
use crate::layout::{Layout, Parts};

/// A minted ID: a non-negative 63-bit integer that sorts by time.
///
/// `Display` writes decimal; `FromStr` reads decimal, `0x` hex or 13-character Crockford
/// base32 (see [`Encoding::parse_any`]). Use [`Id::encode`] for the other encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct Id(u64);

impl Id {
    /// Wraps a raw value; fails if it does not fit 63 bits (IDs are never negative).
    pub fn new(raw: u64) -> Result<Id, Error> {
        if raw > i64::MAX as u64 {
            Err(Error::IdOutOfLayout { id: raw, bits: 63 })
        } else {
            Ok(Id(raw))
        }
    }

    pub(crate) const fn from_raw(raw: u64) -> Id {
        Id(raw)
    }

    /// The raw value.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// Splits the ID under `layout`.
    pub fn decompose(self, layout: &Layout) -> Result<Parts, Error> {
        layout.decompose(self.0)
    }

    /// Writes the ID in `encoding` into `buf`, without allocating.
    pub fn encode(self, encoding: Encoding, buf: &mut [u8; MAX_LEN]) -> &str {
        encoding.encode(self.0, buf)
    }
}

impl From<Id> for u64 {
    fn from(id: Id) -> u64 {
        id.0
    }
}

impl From<Id> for i64 {
    fn from(id: Id) -> i64 {
        // An Id never exceeds i64::MAX.
        id.0 as i64
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl FromStr for Id {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Id, ParseError> {
        Encoding::parse_any(s).map(Id)
    }
}
