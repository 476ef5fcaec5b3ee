//! The value parsers of the flags: counts, durations, rates, ranges, each with a message
//! that says what to give.

/// Reads a count or an id: a non-negative integer, with a message that says so (clap's
/// own would call `-1` an unexpected argument).
pub(super) fn non_negative(text: &str) -> Result<u64, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("must be a non-negative integer (got {text:?})"))
}

/// `+D` or `-D` (or `D`), a duration as [`duration`] reads it, in signed nanoseconds.
pub(super) fn signed_duration(text: &str) -> Result<i64, String> {
    let t = text.trim();
    let (sign, rest) = match t.as_bytes().first() {
        Some(b'-') => (-1, &t[1..]),
        Some(b'+') => (1, &t[1..]),
        _ => (1, t),
    };
    let d = duration(rest)?;
    i64::try_from(d.as_nanos())
        .map(|ns| sign * ns)
        .map_err(|_| format!("{text:?} is too long an offset"))
}

/// A rate: a positive number of IDs per second.
pub(super) fn positive_rate(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(r) if r > 0.0 && r.is_finite() => Ok(r),
        _ => Err(format!(
            "must be a positive number of IDs per second (got {text:?})"
        )),
    }
}

/// `A..B`, with A < B.
pub(super) fn node_range(text: &str) -> Result<std::ops::Range<u64>, String> {
    let bad = || format!("give a range A..B of node ids, B excluded, as 0..4 (got {text:?})");
    let (a, b) = text.trim().split_once("..").ok_or_else(bad)?;
    let (a, b): (u64, u64) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
    if a >= b {
        return Err(format!("the range {a}..{b} is empty: give A..B with A < B"));
    }
    Ok(a..b)
}

/// A duration: a whole number and a unit (ns, us, ms, s, m, h, d), as 500ms or 5s.
pub(super) fn duration(text: &str) -> Result<std::time::Duration, String> {
    use std::time::Duration;
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let bad = || {
        format!(
            "give a whole number and a unit (ns, us, ms, s, m, h, d), as 500ms or 5s (got {text:?})"
        )
    };
    let n: u64 = n.parse().map_err(|_| bad())?;
    let d = match unit {
        "ns" => Duration::from_nanos(n),
        "us" => Duration::from_micros(n),
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.saturating_mul(60)),
        "h" => Duration::from_secs(n.saturating_mul(3600)),
        "d" => Duration::from_secs(n.saturating_mul(86_400)),
        _ => return Err(bad()),
    };
    Ok(d)
}
