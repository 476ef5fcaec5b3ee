//! [`Id`]: a minted ID, and its conversions to and from the integers it is stored as.

use core::fmt;
use core::str::FromStr;

use crate::encoding::Encoding;
use crate::error::{Error, ParseError};
use crate::layout::{Layout, Parts};

/// A minted ID: an unsigned 64-bit integer that sorts by time.
///
/// Generators hand out `Id`s and take them back ([`GeneratorBuilder::resume_after`]);
/// layout arithmetic and the batch decoder take raw `u64`s, as IDs come from databases and
/// logs. Between the two: [`Id::new`] and `From<u64>`, `From<Id> for u64`, and
/// [`Id::as_u64s`] to hand a batch to the [`Decoder`](crate::decode::Decoder) without a
/// copy. Signed columns: `TryFrom<i64>` refuses a negative number
/// ([`Error::NegativeId`]) and `TryFrom<Id> for i64` an ID of 2^63 or more
/// ([`Error::WiderThanI64`]), which 64-bit layouts such as [`Layout::discord`] reach;
/// layouts of at most 63 bits ([`Layout::is_i64_safe`]) always fit.
///
/// `Display` writes decimal, `{:x}`/`{:X}` hex; `FromStr` reads decimal, `0x` hex or
/// 13-character Crockford base32 (see [`Encoding::parse_any`]). Use [`Id::encode`] for the
/// other encodings, without allocating.
///
/// ```
/// use flakeid::Id;
///
/// let id = Id::new(2116500430648709162);
/// assert_eq!(i64::try_from(id)?, 2116500430648709162);
/// assert_eq!(format!("{id:x}"), "1d5f51ed8fc7102a");
/// assert!(Id::try_from(-1i64).is_err());
/// let late = Id::new(1 << 63); // a Discord ID of 2084
/// assert_eq!(u64::from(late), 9223372036854775808);
/// assert!(i64::try_from(late).is_err());
/// let batch = [id, id];
/// assert_eq!(Id::as_u64s(&batch), &[2116500430648709162, 2116500430648709162]);
/// # Ok::<(), flakeid::Error>(())
/// ```
///
/// [`GeneratorBuilder::resume_after`]: crate::GeneratorBuilder::resume_after
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct Id(u64);

impl Id {
    /// Wraps a raw value. Every `u64` is the ID of some layout; whether it fits yours is
    /// [`Layout::decompose`]'s (or [`Id::decompose`]'s) answer.
    pub const fn new(raw: u64) -> Id {
        Id(raw)
    }

    /// The ID as an `i64`, for a signed 64-bit column: [`Error::WiderThanI64`] for an ID
    /// of 2^63 or more.
    pub const fn to_i64(self) -> Result<i64, Error> {
        if self.0 > i64::MAX as u64 {
            Err(Error::WiderThanI64 { id: self.0 })
        } else {
            Ok(self.0 as i64)
        }
    }

    pub(crate) const fn from_raw(raw: u64) -> Id {
        Id(raw)
    }

    /// The raw value.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// A slice of IDs as the raw `u64`s they are, without a copy (`Id` is
    /// `repr(transparent)` over `u64`): a batch from
    /// [`Generator::next_ids`](crate::Generator::next_ids) goes straight into
    /// [`Decoder::decode`](crate::decode::Decoder::decode).
    #[allow(unsafe_code)]
    pub const fn as_u64s(ids: &[Id]) -> &[u64] {
        // SAFETY: `Id` is `repr(transparent)` over `u64`, so a `[Id]` has the layout of a
        // `[u64]` of the same length; the borrow keeps its lifetime. (Tested against
        // `Id::get` per element in `tests/id.rs`, and run under Miri.)
        unsafe { core::slice::from_raw_parts(ids.as_ptr().cast::<u64>(), ids.len()) }
    }

    /// Splits the ID under `layout`.
    pub fn decompose(self, layout: &Layout) -> Result<Parts, Error> {
        layout.decompose(self.0)
    }

    /// Writes the ID in `encoding` into `buf`, without allocating.
    pub fn encode(self, encoding: Encoding, buf: &mut [u8; Encoding::MAX_LEN]) -> &str {
        encoding.encode(self.0, buf)
    }
}

impl From<Id> for u64 {
    fn from(id: Id) -> u64 {
        id.0
    }
}

impl TryFrom<Id> for i64 {
    type Error = Error;

    /// As [`Id::to_i64`]: an ID of 2^63 or more is [`Error::WiderThanI64`].
    fn try_from(id: Id) -> Result<i64, Error> {
        id.to_i64()
    }
}

impl From<u64> for Id {
    /// As [`Id::new`].
    fn from(raw: u64) -> Id {
        Id(raw)
    }
}

impl TryFrom<i64> for Id {
    type Error = Error;

    /// A negative value is [`Error::NegativeId`] (the message says how an ID of 2^63 or
    /// more turns negative in a signed column).
    fn try_from(raw: i64) -> Result<Id, Error> {
        match u64::try_from(raw) {
            Ok(v) => Ok(Id(v)),
            Err(_) => Err(Error::NegativeId { value: raw }),
        }
    }
}

impl fmt::LowerHex for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(&self.0, f)
    }
}

impl fmt::UpperHex for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::UpperHex::fmt(&self.0, f)
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
