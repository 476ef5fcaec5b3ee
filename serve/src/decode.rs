//! `POST /v1/decode`: a JSON array or lines of IDs in, rows out as `flakeid decode
//! --json` writes them (an array, or NDJSON on `Accept: application/x-ndjson`), through
//! the service's one decode pipeline.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use flakeid::Id;
use flakeid_text::rows::{RowFormat, RowWriter};

use crate::authorized::Authorized;
use crate::routes::JSON;
use crate::{Service, ServiceError};

/// Decoded rows one a line.
const NDJSON: &str = "application/x-ndjson";

/// One element of a JSON array of IDs: a decimal (or `0x`, base32) string, or a number.
enum Element {
    Text(String),
    Number(Option<u64>),
    Other,
}

impl<'de> serde::Deserialize<'de> for Element {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Element, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Element;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an ID as a string or a number")
            }
            fn visit_str<E>(self, v: &str) -> Result<Element, E> {
                Ok(Element::Text(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Element, E> {
                Ok(Element::Number(Some(v)))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Element, E> {
                Ok(Element::Number(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Element, E> {
                Ok(Element::Number(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Element, E> {
                Ok(Element::Other)
            }
            fn visit_unit<E>(self) -> Result<Element, E> {
                Ok(Element::Other)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Element, A::Error> {
                while a.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Element::Other)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Element, A::Error> {
                while a
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Element::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// The IDs of a decode request: a JSON array of strings or numbers, or one per line; at
/// most `max` of them.
fn decode_input(body: &[u8], max: usize) -> Result<Vec<u64>, ServiceError> {
    let bad = ServiceError::BadRequest;
    let text = std::str::from_utf8(body).map_err(|e| {
        bad(format!(
            "the body is not UTF-8 text (byte {} is invalid): send IDs as a JSON array or one per line",
            e.valid_up_to() + 1
        ))
    })?;
    let trimmed = text.trim_start();
    let mut ids = Vec::new();
    if trimmed.starts_with('[') {
        let values: Vec<Element> = serde_json::from_str(trimmed).map_err(|e| {
            bad(format!(
                "the body is not a JSON array of IDs ({e}): send [\"123\", 456] or one ID per line"
            ))
        })?;
        for (i, v) in values.into_iter().enumerate() {
            let id = match v {
                Element::Text(t) => t.parse::<Id>().map_err(|e| e.to_string()),
                Element::Number(Some(n)) => Ok(Id::new(n)),
                Element::Number(None) => {
                    Err("a number that is not a non-negative integer of 64 bits".into())
                }
                Element::Other => Err("neither a string nor a number".into()),
            }
            .map_err(|e| {
                bad(format!(
                    "element {i} of the array: {e}; send IDs as decimal strings or numbers"
                ))
            })?;
            ids.push(id.get());
        }
    } else {
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let id = line.parse::<Id>().map_err(|e| {
                bad(format!(
                    "line {}: {e}; send one ID per line (decimal, 0x hex or base32)",
                    i + 1
                ))
            })?;
            ids.push(id.get());
        }
    }
    if ids.len() > max {
        return Err(bad(format!(
            "{} IDs is more than one request may carry: send at most {max}",
            ids.len()
        )));
    }
    Ok(ids)
}

pub(crate) async fn decode(
    _: Authorized,
    State(s): State<Arc<Service>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ServiceError> {
    let limits = s.limits();
    let body = body.map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ServiceError::TooLarge {
            limit: limits.decode_body_limit(),
            hint: format!("send at most {} IDs a request", limits.max_decode),
        },
        _ => ServiceError::BadRequest(format!("{}: send the IDs as the body", e.body_text())),
    })?;
    let ndjson = crate::media::Accept::of(&headers).pick(&["application/json", NDJSON]) == NDJSON;
    let ids = decode_input(&body, limits.max_decode)?;
    let rows = decode_rows(&s, &ids, ndjson).await?;
    let content_type = if ndjson { NDJSON } else { JSON };
    Ok(([(header::CONTENT_TYPE, content_type)], rows).into_response())
}

/// The rows of `ids` as `flakeid decode --json` writes them: NDJSON, or joined into a
/// JSON array, written a chunk at a time with the thread yielded between chunks. An ID
/// that does not fit the layout is an error naming it.
async fn decode_rows(s: &Service, ids: &[u64], ndjson: bool) -> Result<Vec<u8>, ServiceError> {
    const CHUNK: usize = 4096;
    let mut batch = s.batch();
    let mut writer = RowWriter::new(s.layout(), RowFormat::Json);
    // A row takes about 200 bytes; the writer grows `out` when a row might not fit.
    let mut out = Vec::with_capacity(ids.len() * 224 + 512);
    if !ndjson {
        // The rows of an array end in commas; the last becomes the closing bracket.
        writer = writer.separator(b',');
        out.push(b'[');
    }
    for (k, chunk) in ids.chunks(CHUNK).enumerate() {
        if k > 0 {
            tokio::task::yield_now().await;
        }
        s.decode_into(chunk, k * CHUNK, &mut batch)?;
        writer.rows(&mut out, &batch);
    }
    if !ndjson {
        if !ids.is_empty() {
            out.pop();
        }
        out.push(b']');
    }
    Ok(out)
}
