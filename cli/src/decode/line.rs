//! One input line's ID text: a bare ID, a JSON string or a JSON object with an `id` field; and the hint a bad ID's message gives.

use super::*;

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
