//! serde support (feature `serde`): [`Id`] serialises as a number by default; pick a form
//! per field with `#[serde(with = ...)]`:
//!
//! - [`as_string`]: a decimal string, for JSON read by JavaScript, whose numbers lose
//!   digits past 2^53 (or use [`Layout::javascript_safe`](crate::Layout::javascript_safe));
//! - [`as_number`]: a number, and only a number, when deserialising.
//!
//! Deserialising [`Id`] itself accepts a number or a string in any of the crate's
//! encodings. Every form rejects what no layout can hold (negative, 2^63 or more, not an
//! integer) with a message that says so. Whether an ID fits *your* layout is
//! `layout.decompose(id)`'s question, after deserialising.
//!
//! ```
//! use flakeid::Id;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, PartialEq, Debug)]
//! struct Order {
//!     #[serde(with = "flakeid::serde::as_string")]
//!     id: Id,
//!     customer: Id,
//! }
//!
//! let order = Order { id: Id::new(2116500430648709162)?, customer: Id::new(42)? };
//! let json = serde_json::to_string(&order).unwrap();
//! assert_eq!(json, r#"{"id":"2116500430648709162","customer":42}"#);
//! assert_eq!(serde_json::from_str::<Order>(&json).unwrap(), order);
//! # Ok::<(), flakeid::Error>(())
//! ```

use core::fmt;

use ::serde::de::{self, Deserializer, Visitor};
use ::serde::{Deserialize, Serialize, Serializer};

use crate::encoding::Encoding;
use crate::id::Id;

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.get())
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Id, D::Error> {
        deserializer.deserialize_any(IdVisitor {
            numbers: true,
            strings: true,
        })
    }
}

/// Which forms a visitor takes.
struct IdVisitor {
    numbers: bool,
    strings: bool,
}

impl IdVisitor {
    fn checked<E: de::Error>(&self, raw: u64) -> Result<Id, E> {
        Id::new(raw).map_err(|_| {
            E::custom(format_args!(
                "ID {raw} is out of every layout: IDs are at most 2^63 - 1"
            ))
        })
    }
}

impl Visitor<'_> for IdVisitor {
    type Value = Id;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.numbers, self.strings) {
            (true, true) => f.write_str("a 63-bit ID, as a number or a string"),
            (true, false) => f.write_str("a 63-bit ID as a number"),
            _ => f.write_str("a 63-bit ID as a string"),
        }
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
        if !self.numbers {
            return Err(E::invalid_type(de::Unexpected::Unsigned(v), &self));
        }
        self.checked(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
        if !self.numbers {
            return Err(E::invalid_type(de::Unexpected::Signed(v), &self));
        }
        match u64::try_from(v) {
            Ok(v) => self.checked(v),
            Err(_) => Err(E::custom(format_args!("ID {v} is negative"))),
        }
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Id, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Err(E::custom(format_args!(
                "ID {v} is out of every layout: IDs are at most 2^63 - 1"
            ))),
        }
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Id, E> {
        match u128::try_from(v) {
            Ok(v) => self.visit_u128(v),
            Err(_) => Err(E::custom(format_args!("ID {v} is negative"))),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Id, E> {
        Err(E::invalid_type(de::Unexpected::Float(v), &self))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
        if !self.strings {
            return Err(E::invalid_type(de::Unexpected::Str(v), &self));
        }
        let raw = Encoding::parse_any(v).map_err(|e| E::custom(format_args!("ID {v:?}: {e}")))?;
        self.checked(raw)
    }
}

/// `#[serde(with = "flakeid::serde::as_string")]`: the ID as a decimal string; reads a
/// string in any encoding, or a number.
pub mod as_string {
    use super::*;

    /// Writes the ID as a decimal string.
    pub fn serialize<S: Serializer>(id: &Id, serializer: S) -> Result<S::Ok, S::Error> {
        let mut buf = [0u8; crate::encoding::MAX_LEN];
        serializer.serialize_str(id.encode(Encoding::Decimal, &mut buf))
    }

    /// Reads a string in any encoding (or a number).
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Id, D::Error> {
        deserializer.deserialize_any(IdVisitor {
            numbers: true,
            strings: true,
        })
    }
}

/// `#[serde(with = "flakeid::serde::as_number")]`: the ID as a number, and only a number.
pub mod as_number {
    use super::*;

    /// Writes the ID as an unsigned number.
    pub fn serialize<S: Serializer>(id: &Id, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(id.get())
    }

    /// Reads a number; a string is an error.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Id, D::Error> {
        deserializer.deserialize_u64(IdVisitor {
            numbers: true,
            strings: false,
        })
    }
}
