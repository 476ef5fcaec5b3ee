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

/// The most digits [`leading_digits`] reads: 19 never overflow a `u64`.
pub(super) const MAX_DIGITS: usize = 19;

/// The run of ASCII digits that starts `block`, up to [`MAX_DIGITS`]: its value and
/// length (a 20th digit ends the run, so the caller sees a line that goes on). Eight
/// bytes at a time where `block` has 24 to read (SWAR: a mask of the bytes that are not
/// digits, then three multiplications for eight digits), else a byte at a time; both
/// give the same answer (tested below).
#[inline(always)]
pub(super) fn leading_digits(block: &[u8]) -> (u64, usize) {
    let Some(words) = block.first_chunk::<24>() else {
        return leading_digits_bytewise(block);
    };
    let word = |at: usize| u64::from_le_bytes(words[at..at + 8].try_into().expect("8 of 24 bytes"));
    let (w0, w1, w2) = (word(0), word(8), word(16));
    let mut len = digit_run(w0);
    if len == 8 {
        len += digit_run(w1);
        if len == 16 {
            len += digit_run(w2);
        }
    }
    let len = len.min(MAX_DIGITS);
    // The digits of a word, the first `keep` of them, as the value they spell.
    let part = |w: u64, keep: usize| eight_digits(w << (8 * (8 - keep)));
    let value = match len {
        0 => 0,
        1..=8 => part(w0, len),
        9..=16 => part(w0, 8) * POW10[len - 8] + part(w1, len - 8),
        _ => part(w0, 8) * POW10[len - 8] + part(w1, 8) * POW10[len - 16] + part(w2, len - 16),
    };
    (value, len)
}

/// Powers of ten up to 10^11, the most [`leading_digits`] scales a block by.
const POW10: [u64; 12] = {
    let mut p = [1u64; 12];
    let mut i = 1;
    while i < 12 {
        p[i] = p[i - 1] * 10;
        i += 1;
    }
    p
};

/// [`leading_digits`] a byte at a time: for the end of the input, and the oracle.
fn leading_digits_bytewise(block: &[u8]) -> (u64, usize) {
    let mut v = 0u64;
    let mut i = 0;
    while i < MAX_DIGITS && i < block.len() && block[i].is_ascii_digit() {
        v = v * 10 + u64::from(block[i] - b'0');
        i += 1;
    }
    (v, i)
}

/// How many of the eight bytes of `w` (the first in the lowest) are digits before the
/// first that is not. A byte is a digit when its high nibble is 3 both as it is and with
/// 6 added (0x30..=0x39); a carry out of a byte that is not a digit only reaches bytes
/// after it, which are not counted.
#[inline(always)]
fn digit_run(w: u64) -> usize {
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const THREES: u64 = 0x3030_3030_3030_3030;
    let off = (w & HIGH ^ THREES) | (w.wrapping_add(0x0606_0606_0606_0606) & HIGH ^ THREES);
    // 0x80 in each byte of `off` that is not zero, without carries between bytes.
    let not_digit =
        (((off & 0x7F7F_7F7F_7F7F_7F7F) + 0x7F7F_7F7F_7F7F_7F7F) | off) & 0x8080_8080_8080_8080;
    (not_digit.trailing_zeros() / 8) as usize
}

/// The value of the eight ASCII digits in `w`, the most significant in the lowest byte
/// (a byte of zero counts as a leading zero): digits to pairs, pairs to fours, fours to
/// eight, one multiplication each. They wrap on purpose: what overflows is the top
/// lane's, which the masks drop.
#[inline(always)]
fn eight_digits(w: u64) -> u64 {
    let w = w & 0x0F0F_0F0F_0F0F_0F0F;
    let w = w.wrapping_mul(10 << 8 | 1) >> 8 & 0x00FF_00FF_00FF_00FF;
    let w = w.wrapping_mul(100 << 16 | 1) >> 16 & 0x0000_FFFF_0000_FFFF;
    w.wrapping_mul(10_000 << 32 | 1) >> 32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time reader gives the byte-at-a-time one's value and length for every
    /// run length 0 to 24, behind every byte that can end it, at every offset in a block
    /// long or short.
    #[test]
    fn leading_digits_equal_the_bytewise_oracle() {
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut checked = 0;
        for len in 0..=24 {
            for end in 0..=255u8 {
                for _ in 0..4 {
                    let mut block: Vec<u8> = (0..len).map(|_| b'0' + (next() % 10) as u8).collect();
                    block.push(end);
                    block.extend((0..(next() % 30)).map(|_| next() as u8));
                    for cut in [block.len(), len + 1, len, 24, 25] {
                        let b = &block[..cut.min(block.len())];
                        assert_eq!(leading_digits(b), leading_digits_bytewise(b), "{b:?}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 100_000);
        // The extremes: 19 nines, and a zero-led run.
        let nines = b"9999999999999999999\n.....";
        assert_eq!(leading_digits(nines), (9_999_999_999_999_999_999, 19));
        assert_eq!(leading_digits(b"0000000000000000000000001"), (0, 19));
    }
}
