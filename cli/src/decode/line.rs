//! One input line's ID: its text (a bare ID, a JSON string or a JSON object with an `id`
//! field), the ID read from it for a layout, and why a line has none, with a hint. Below
//! both ways of decoding (`mod.rs`'s lines and `table.rs`'s column).

use flakeid::{Encoding, Error, Layout, ParseError};

use crate::args::InputEncoding;

/// IDs per batch handed to the (SIMD) batch decoder.
pub(super) const DECODE_BATCH: usize = 4096;

/// Why a line is not an ID, and a hint at what to do.
pub(crate) struct BadLine {
    pub(crate) error: String,
    pub(crate) hint: &'static str,
}

impl<E: Into<Error>> From<E> for BadLine {
    fn from(e: E) -> Self {
        BadLine {
            error: e.into().to_string(),
            hint: "",
        }
    }
}

/// An ID of `layout` from its text: decimal, `0x` hex or base32 (as `encoding` says or
/// `auto` guesses), or a negative decimal, read as the 64 bits of a signed column (a
/// database's BIGINT).
pub(super) fn parse_id(
    layout: &Layout,
    encoding: InputEncoding,
    text: &str,
) -> Result<u64, BadLine> {
    let signed = text
        .strip_prefix('-')
        .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()));
    let parsed = match signed {
        Some(_) => text.parse::<i64>().map(|v| v as u64).map_err(|_| BadLine {
            error: "a negative number below -2^63: no 64-bit value".into(),
            hint: "",
        })?,
        None => match encoding {
            InputEncoding::Auto => Encoding::parse_any(text).map_err(|e| {
                let hint = match e {
                    ParseError::UnknownEncoding { .. } => encoding_hint(text),
                    _ => "",
                };
                BadLine {
                    error: e.to_string(),
                    hint,
                }
            })?,
            InputEncoding::Decimal => Encoding::Decimal.parse(text)?,
            InputEncoding::Hex => Encoding::Hex.parse(text)?,
            InputEncoding::Base32 => Encoding::Base32.parse(text)?,
        },
    };
    layout.decompose(parsed).map_err(|e| BadLine {
        error: e.to_string(),
        hint: if parsed > i64::MAX as u64 && layout.is_i64_safe() {
            "; IDs of 2^63 or more come from 64-bit layouts such as discord, instagram or \
                 mastodon: give --layout NAME (flakeid layout --list)"
        } else {
            ""
        },
    })?;
    Ok(parsed)
}

/// The ID text of a line: the line itself, a JSON string, or the `id` field of a JSON
/// object (a string or a number).
pub(super) fn id_text(line: &str) -> Result<std::borrow::Cow<'_, str>, BadLine> {
    if !line.starts_with(['"', '{']) {
        return Ok(line.into());
    }
    let value: JsonLine = serde_json::from_str(line).map_err(|e| BadLine {
        error: format!("not JSON: {e}"),
        hint: "",
    })?;
    let field = match &value {
        JsonLine::Object { ids, .. } if *ids > 1 => {
            return Err(BadLine {
                error: format!(
                    "a JSON object with {ids} \"id\" keys: which one is meant is unclear"
                ),
                hint: "",
            });
        }
        JsonLine::Object { id, .. } => id.as_ref(),
        JsonLine::Other(other) => Some(other),
    };
    match field {
        Some(serde_json::Value::String(s)) => Ok(s.clone().into()),
        Some(serde_json::Value::Number(n)) if n.is_u64() => Ok(n.to_string().into()),
        _ => Err(BadLine {
            error: "JSON without an ID: expected a string, or an object whose \"id\" is a \
                    string or a non-negative integer"
                .into(),
            hint: "",
        }),
    }
}

/// A JSON line: an object (its `id` and how many `id` keys it has; serde_json's own map
/// would keep the last of several silently), or any other value.
pub(super) enum JsonLine {
    Object {
        id: Option<serde_json::Value>,
        ids: usize,
    },
    Other(serde_json::Value),
}

impl<'de> serde::Deserialize<'de> for JsonLine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = JsonLine;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<JsonLine, A::Error> {
                let (mut id, mut ids) = (None, 0);
                while let Some(key) = map.next_key::<String>()? {
                    let value: serde_json::Value = map.next_value()?;
                    if key == "id" {
                        ids += 1;
                        id = Some(value);
                    }
                }
                Ok(JsonLine::Object { id, ids })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<JsonLine, E> {
                Ok(JsonLine::Other(serde_json::Value::String(v.into())))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<JsonLine, E> {
                Ok(JsonLine::Other(v.into()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<JsonLine, E> {
                Ok(JsonLine::Other(v.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<JsonLine, E> {
                Ok(JsonLine::Other(v.into()))
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<JsonLine, E> {
                Ok(JsonLine::Other(v.into()))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<JsonLine, E> {
                Ok(JsonLine::Other(serde_json::Value::Null))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<JsonLine, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<serde_json::Value>()? {
                    items.push(item);
                }
                Ok(JsonLine::Other(serde_json::Value::Array(items)))
            }
        }
        d.deserialize_any(Visit)
    }
}

/// A hint for text `parse_any` could not place.
pub(super) fn encoding_hint(text: &str) -> &'static str {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_hexdigit()) {
        "; if it is hex, write it with 0x or give --encoding hex"
    } else if t.len() == 12 || t.len() == 14 {
        "; base32 IDs have exactly 13 characters"
    } else {
        ""
    }
}
