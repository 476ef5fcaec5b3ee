//! [`ParseError`]: text that is not an ID, a timestamp or a layout. Below the parsers of
//! `rfc3339`, `encoding` and `layout::text`, which return it: it imports none of them, only
//! the leaf of preset names its message lists (`layout/names.rs`).

use core::fmt;

/// Text that is not an ID, a timestamp or a layout: what [`Id`](crate::Id)'s and
/// [`Encoding`](crate::Encoding)'s parsers return, and what [`Error::Parse`](crate::Error::Parse) carries from
/// the layout string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParseError {
    /// The text was empty (after trimming nothing is left).
    Empty,
    /// A character that is not a digit of the encoding.
    InvalidDigit {
        /// Byte offset of the offending character (0 for the first; the message counts
        /// from 1, as every message of the crate does).
        at: usize,
    },
    /// A `0x` prefix with no hex digits after it.
    NoDigits,
    /// More characters than the encoding allows for 64 bits.
    TooLong,
    /// The number does not fit in 64 bits.
    Overflow,
    /// Text that is none of the encodings [`Encoding::parse_any`](crate::Encoding::parse_any)
    /// tells apart: not all digits (decimal), no `0x` (hex), not 13 characters (base32).
    UnknownEncoding {
        /// How many characters the text has.
        len: usize,
    },
    /// A name that is not a preset and not `key=value` pairs.
    UnknownPreset,
    /// A malformed RFC 3339 timestamp.
    Timestamp,
    /// A malformed layout description; the message says which part.
    Layout(&'static str),
    /// A key of a layout string that is none of its keys (`bogus` of `seq=12,bogus=1`).
    UnknownLayoutKey(LayoutKey),
}

/// The key a layout string named that is none of its keys, as [`ParseError`] carries it
/// (the first 24 bytes; a longer key is cut at a character boundary).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LayoutKey {
    bytes: [u8; 24],
    len: u8,
    cut: bool,
}

impl LayoutKey {
    /// Keeps `key` (its first 24 bytes).
    pub(crate) fn new(key: &str) -> LayoutKey {
        let mut len = key.len().min(24);
        while !key.is_char_boundary(len) {
            len -= 1;
        }
        let mut bytes = [0; 24];
        bytes[..len].copy_from_slice(&key.as_bytes()[..len]);
        LayoutKey {
            bytes,
            len: len as u8,
            cut: len < key.len(),
        }
    }

    /// The key (its first 24 bytes, when it was longer).
    pub fn as_str(&self) -> &str {
        // Cut at a character boundary of a `str`: always UTF-8.
        core::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Empty => f.write_str("empty input"),
            ParseError::InvalidDigit { at } => {
                write!(f, "invalid character at byte {} (counting from 1)", at + 1)
            }
            ParseError::NoDigits => {
                f.write_str("no hex digits after 0x: give them, as in 0x1d5f51ed8fc7102a")
            }
            ParseError::TooLong => f.write_str("too many digits for a 64-bit id"),
            ParseError::Overflow => f.write_str(
                "number does not fit in 64 bits (the largest ID is 18446744073709551615)",
            ),
            ParseError::UnknownEncoding { len } => write!(
                f,
                "not an ID: not decimal (digits only), not 0x hex, not 13-character base32 (this has {len} character{})",
                if *len == 1 { "" } else { "s" }
            ),
            ParseError::UnknownPreset => write!(
                f,
                "unknown layout: the presets are {}, names ignoring case (Layout::presets lists them); or give key=value pairs such as seq=12,node=10,epoch=2024-01-01T00:00:00Z",
                crate::layout::names::PresetNames
            ),
            ParseError::Timestamp => {
                f.write_str("not an RFC 3339 timestamp (e.g. 2026-10-31T12:00:00Z)")
            }
            ParseError::Layout(what) => write!(f, "invalid layout: {what}"),
            ParseError::UnknownLayoutKey(key) => write!(
                f,
                "invalid layout: unknown key {:?}{}: the keys are time, seq, node, dc, parts, order, unit, epoch and grid",
                key.as_str(),
                if key.cut { " (cut)" } else { "" }
            ),
        }
    }
}

impl core::error::Error for ParseError {}
