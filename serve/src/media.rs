//! The `Accept` header, read once into its media ranges and their weights (RFC 9110,
//! 12.5.1), and the one of a route's forms the client prefers.

use axum::http::{HeaderMap, header};

/// The media ranges a request accepts, with their weights (`q`, in thousandths).
#[derive(Debug, Default)]
pub(crate) struct Accept {
    ranges: Vec<(String, u16)>,
}

impl Accept {
    /// The request's `Accept` headers (all of them, each a comma-separated list). A range
    /// that cannot be read is left out; none at all accepts anything.
    pub(crate) fn of(headers: &HeaderMap) -> Accept {
        let mut ranges = Vec::new();
        for value in headers.get_all(header::ACCEPT) {
            let Ok(text) = value.to_str() else { continue };
            for item in text.split(',') {
                let mut parts = item.split(';');
                let range = parts.next().unwrap_or("").trim().to_ascii_lowercase();
                if range.is_empty() || !range.contains('/') {
                    continue;
                }
                let mut q = 1000;
                for p in parts {
                    if let Some((k, v)) = p.split_once('=')
                        && k.trim().eq_ignore_ascii_case("q")
                    {
                        q = weight(v.trim()).unwrap_or(0);
                    }
                }
                ranges.push((range, q));
            }
        }
        Accept { ranges }
    }

    /// Of `offered` (media types, in the route's order of preference), the one the client
    /// weighs highest (the most specific range that matches a type gives its weight; a
    /// weight of 0 refuses it); the first offered where the client sends no `Accept`, or
    /// where nothing offered is acceptable (the route's default, rather than a 406).
    pub(crate) fn pick<'a>(&self, offered: &[&'a str]) -> &'a str {
        if self.ranges.is_empty() {
            return offered[0];
        }
        let mut best: Option<(&'a str, u16)> = None;
        for &media in offered {
            let q = self.weight_of(media);
            if q > 0 && best.is_none_or(|(_, b)| q > b) {
                best = Some((media, q));
            }
        }
        best.map_or(offered[0], |(m, _)| m)
    }

    /// The weight of `media` (`type/subtype`): that of the most specific range matching it.
    fn weight_of(&self, media: &str) -> u16 {
        let (kind, _) = media.split_once('/').unwrap_or((media, ""));
        let mut found: Option<(u8, u16)> = None;
        for (range, q) in &self.ranges {
            let specificity = if range == media {
                2
            } else if range.strip_suffix("/*") == Some(kind) {
                1
            } else if range == "*/*" {
                0
            } else {
                continue;
            };
            if found.is_none_or(|(s, _)| specificity > s) {
                found = Some((specificity, *q));
            }
        }
        found.map_or(0, |(_, q)| q)
    }
}

/// A weight (`0`, `0.5`, `1.000`) in thousandths; `None` for anything else.
fn weight(text: &str) -> Option<u16> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths = format!("{frac:0<3}").parse::<u16>().ok()?;
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn accept(values: &[&str]) -> Accept {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        }
        Accept::of(&headers)
    }

    const OFFERED: [&str; 3] = ["application/json", "text/plain", "application/octet-stream"];

    /// The form picked is the one the client weighs highest, by the most specific range
    /// that names it, whatever the order or spelling: not the first substring found.
    #[test]
    fn the_client_s_weights_pick_the_form() {
        let cases: [(&[&str], &str); 12] = [
            (&[], "application/json"),
            (&["*/*"], "application/json"),
            (&["text/plain"], "text/plain"),
            (&["TEXT/Plain; charset=utf-8"], "text/plain"),
            (&["application/octet-stream"], "application/octet-stream"),
            // Refused outright, though it is named: the substring match took it.
            (&["text/plain;q=0, application/json"], "application/json"),
            (
                &["text/plain;q=0.5, application/octet-stream;q=0.9"],
                "application/octet-stream",
            ),
            (&["text/*;q=0.8, application/json;q=0.2"], "text/plain"),
            (&["*/*;q=0.1, text/plain;q=0"], "application/json"),
            (&["image/png"], "application/json"),
            (
                &["application/json;q=0.3", "text/plain;q=0.4"],
                "text/plain",
            ),
            (
                &["text/plain;q=2, application/json;q=0.1"],
                "application/json",
            ),
        ];
        for (values, want) in cases {
            assert_eq!(accept(values).pick(&OFFERED), want, "{values:?}");
        }
    }

    #[test]
    fn weights_are_read_to_the_thousandth() {
        for (text, want) in [
            ("1", Some(1000)),
            ("1.0", Some(1000)),
            ("1.000", Some(1000)),
            ("0", Some(0)),
            ("0.5", Some(500)),
            ("0.125", Some(125)),
            ("1.5", None),
            ("0.1234", None),
            ("2", None),
            ("x", None),
        ] {
            assert_eq!(weight(text), want, "{text}");
        }
    }
}
