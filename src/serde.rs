//! serde support (feature `serde`): [`Id`] serialises as a number by default; pick a form
//! per field with `#[serde(with = ...)]`:
//!
//! - [`as_string`]: a decimal string, for JSON read by JavaScript, whose numbers lose
//!   digits past 2^53 (or use [`Layout::javascript_safe`](crate::Layout::javascript_safe));
//! - [`as_number`]: a number, and only a number, when deserialising;
//! - [`javascript_safe`]: a number, checked on reading against
//!   [`Layout::javascript_safe`](crate::Layout::javascript_safe) (at most 2^53 - 1).
//!
//! - [`as_i64`]: a signed 64-bit number, for a store whose integers are `i64` (SQL
//!   `BIGINT`): writing an ID of 2^63 or more is an error that says so, never a negative
//!   number.
//!
//! Deserialising [`Id`] itself accepts a number or a string in any of the crate's
//! encodings, up to `u64::MAX` (64-bit layouts such as [`Layout::discord`] reach 2^63).
//! Every form rejects what no layout can hold (negative, past `u64::MAX`, not an
//! integer) with a message that says so. To reject what does not fit *your* layout, read
//! through [`deserialize_in`] (a `deserialize_with` function of a few lines, below) or seed a
//! deserializer with [`InLayout`].
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
//! let order = Order { id: Id::new(2116500430648709162), customer: Id::new(42) };
//! let json = serde_json::to_string(&order).unwrap();
//! assert_eq!(json, r#"{"id":"2116500430648709162","customer":42}"#);
//! assert_eq!(serde_json::from_str::<Order>(&json).unwrap(), order);
//! ```
//!
//! Checking against a layout of your own:
//!
//! ```
//! use flakeid::{Id, Layout};
//! use serde::{Deserialize, Deserializer};
//!
//! // 40 time bits, 8 node bits, 8 sequence bits: IDs below 2^56.
//! fn narrow() -> Layout {
//!     Layout::builder().time_bits(40).node_bits(8).sequence_bits(8).build().unwrap()
//! }
//!
//! fn narrow_id<'de, D: Deserializer<'de>>(d: D) -> Result<Id, D::Error> {
//!     flakeid::serde::deserialize_in(&narrow(), d)
//! }
//!
//! #[derive(Deserialize, Debug)]
//! struct Event {
//!     #[serde(deserialize_with = "narrow_id")]
//!     id: Id,
//! }
//!
//! assert!(serde_json::from_str::<Event>(r#"{"id":"4242"}"#).is_ok());
//! let err = serde_json::from_str::<Event>(r#"{"id":72057594037927936}"#).unwrap_err();
//! assert!(err.to_string().contains("56-bit layout"), "{err}");
//! ```

use core::fmt;

use ::serde::de::{self, DeserializeSeed, Deserializer, Visitor};
use ::serde::{Deserialize, Serialize, Serializer};

use crate::encoding::Encoding;
use crate::id::Id;
use crate::layout::Layout;

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.get())
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Id, D::Error> {
        deserializer.deserialize_any(IdVisitor::ANY)
    }
}

/// Reads an ID (a number, or a string in any encoding) and rejects one that does not fit
/// `layout`, with a message naming the layout's width. For `#[serde(deserialize_with)]`
/// functions; see the [module docs](self) for an example.
pub fn deserialize_in<'de, D: Deserializer<'de>>(
    layout: &Layout,
    deserializer: D,
) -> Result<Id, D::Error> {
    InLayout(layout).deserialize(deserializer)
}

/// A [`DeserializeSeed`] that reads an ID (a number, or a string in any encoding) and
/// rejects one that does not fit the layout, for when the layout is known only at run time.
///
/// ```
/// use flakeid::{serde::InLayout, Layout};
/// use serde::de::DeserializeSeed;
///
/// let js = Layout::javascript_safe();
/// let mut ok = serde_json::Deserializer::from_str("9007199254740991");
/// assert_eq!(InLayout(&js).deserialize(&mut ok).unwrap().get(), (1 << 53) - 1);
/// let mut too_big = serde_json::Deserializer::from_str("9007199254740992");
/// assert!(InLayout(&js).deserialize(&mut too_big).is_err());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct InLayout<'a>(pub &'a Layout);

impl<'de> DeserializeSeed<'de> for InLayout<'_> {
    type Value = Id;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Id, D::Error> {
        deserializer.deserialize_any(IdVisitor {
            layout: Some(self.0),
            ..IdVisitor::ANY
        })
    }
}

/// Which forms a visitor takes, and the layout an ID must fit, if any.
struct IdVisitor<'a> {
    numbers: bool,
    strings: bool,
    layout: Option<&'a Layout>,
}

impl IdVisitor<'_> {
    const ANY: IdVisitor<'static> = IdVisitor {
        numbers: true,
        strings: true,
        layout: None,
    };

    fn checked<E: de::Error>(&self, raw: u64) -> Result<Id, E> {
        let id = Id::new(raw);
        if let Some(layout) = self.layout
            && layout.decompose(raw).is_err()
        {
            return Err(E::custom(format_args!(
                "ID {raw} does not fit the {}-bit layout: it must be at most {}",
                layout.bits(),
                layout.max_id()
            )));
        }
        Ok(id)
    }
}

impl Visitor<'_> for IdVisitor<'_> {
    type Value = Id;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.numbers, self.strings) {
            (true, true) => f.write_str("a 64-bit ID, as a number or a string"),
            (true, false) => f.write_str("a 64-bit ID as a number"),
            _ => f.write_str("a 64-bit ID as a string"),
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
        match Id::try_from(v) {
            Ok(id) => self.checked(id.get()),
            Err(e) => Err(E::custom(e)),
        }
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Id, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Err(E::custom(format_args!(
                "ID {v} is out of every layout: IDs are at most 2^64 - 1"
            ))),
        }
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Id, E> {
        match u128::try_from(v) {
            Ok(v) => self.visit_u128(v),
            Err(_) => Err(E::custom(crate::Error::NegativeId {
                value: i64::try_from(v).unwrap_or(i64::MIN),
            })),
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
        let mut buf = [0u8; crate::Encoding::MAX_LEN];
        serializer.serialize_str(id.encode(Encoding::Decimal, &mut buf))
    }

    /// Reads a string in any encoding (or a number).
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Id, D::Error> {
        deserializer.deserialize_any(IdVisitor::ANY)
    }
}

/// `#[serde(with = "flakeid::serde::as_i64")]`: the ID as a signed 64-bit number, for
/// stores whose integers are `i64`. Writing an ID of 2^63 or more fails with
/// [`Error::WiderThanI64`](crate::Error::WiderThanI64)'s message (store it unsigned or as
/// text: [`as_string`]) instead of writing a negative number; reading a negative number
/// fails with [`Error::NegativeId`](crate::Error::NegativeId)'s. Reads a number or a string.
///
/// ```
/// use flakeid::{Id, Layout};
/// use serde::Serialize;
///
/// #[derive(Serialize)]
/// struct Row {
///     #[serde(with = "flakeid::serde::as_i64")]
///     id: Id,
/// }
///
/// let early = Row { id: Id::new(175928847299117063) };
/// assert_eq!(serde_json::to_string(&early).unwrap(), r#"{"id":175928847299117063}"#);
/// let late = Row { id: Id::new(1 << 63) }; // a Discord ID of 2084
/// let err = serde_json::to_string(&late).unwrap_err();
/// assert!(err.to_string().contains("does not fit a signed 64-bit column"), "{err}");
/// ```
pub mod as_i64 {
    use super::*;

    /// Writes the ID as a signed number; an ID of 2^63 or more is an error.
    pub fn serialize<S: Serializer>(id: &Id, serializer: S) -> Result<S::Ok, S::Error> {
        match id.to_i64() {
            Ok(v) => serializer.serialize_i64(v),
            Err(e) => Err(<S::Error as ::serde::ser::Error>::custom(e)),
        }
    }

    /// Reads a number or a string in any encoding; a negative number, or one of 2^63 or
    /// more, is an error.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Id, D::Error> {
        let id = deserializer.deserialize_any(IdVisitor::ANY)?;
        id.to_i64().map(|_| id).map_err(de::Error::custom)
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
            strings: false,
            ..IdVisitor::ANY
        })
    }
}

/// `#[serde(with = "flakeid::serde::javascript_safe")]`: the ID as a number that
/// JavaScript reads exactly: writing and reading both reject an ID that does not fit
/// [`Layout::javascript_safe`] (above 2^53 - 1). Reads a number or a string.
pub mod javascript_safe {
    use super::*;

    const JS: Layout = Layout::javascript_safe();

    /// Writes the ID as an unsigned number; an ID above 2^53 - 1 is an error, since
    /// JavaScript would read it wrong.
    pub fn serialize<S: Serializer>(id: &Id, serializer: S) -> Result<S::Ok, S::Error> {
        if JS.decompose(id.get()).is_err() {
            return Err(<S::Error as ::serde::ser::Error>::custom(format_args!(
                "ID {id} is above 2^53 - 1: JavaScript would not read it exactly"
            )));
        }
        serializer.serialize_u64(id.get())
    }

    /// Reads a number or a string in any encoding, and rejects an ID above 2^53 - 1.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Id, D::Error> {
        deserialize_in(&JS, deserializer)
    }
}
