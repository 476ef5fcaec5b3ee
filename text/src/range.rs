//! A span of time and the IDs a layout gives it ([`flakeid::Layout::id_range`]), as the
//! tool (`flakeid range`) and the service (`GET /v1/range`) take and show them.

use flakeid::layout::IdRange;
use flakeid::rfc3339::Timestamp;
use flakeid::{Error, Layout};

/// An instant as the tool's time flags and the service's parameters take it: Unix
/// milliseconds (digits only) or RFC 3339, with the expanded years `decode` prints past
/// 9999. In Unix nanoseconds.
///
/// ```
/// use flakeid_text::range::parse_instant;
///
/// assert_eq!(parse_instant("1796601600000")?, 1_796_601_600_000_000_000);
/// assert_eq!(parse_instant("2026-12-07T00:00:00Z")?, 1_796_601_600_000_000_000);
/// # Ok::<(), flakeid::Error>(())
/// ```
pub fn parse_instant(text: &str) -> Result<i128, Error> {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        // Digits past what i128 nanoseconds hold are past every layout's end anyway.
        return Ok(t
            .parse::<i128>()
            .ok()
            .and_then(|ms| ms.checked_mul(1_000_000))
            .unwrap_or(i128::MAX));
    }
    Ok(flakeid::rfc3339::parse(t)?)
}

/// `range`, the IDs `layout` gives to the instants from `from_unix_ns` (inclusive) to
/// `to_unix_ns` (exclusive) ([`Layout::id_range_ns`]), as one JSON object (no newline):
/// `first` and `last` (decimal strings, as `decode --json` writes IDs), the span as given
/// (`from`, `to`), and the instants the range covers, which the span's edge ticks may widen
/// (`first_tick_start`, `last_tick_end`, exclusive).
///
/// ```
/// use flakeid::Layout;
/// use flakeid_text::range::range_json;
///
/// let (layout, ms) = (Layout::sonyflake(), 1_000_000i128);
/// let (from, to) = (1_796_601_600_005 * ms, 1_796_601_600_025 * ms);
/// let json = range_json(&layout, from, to, layout.id_range_ns(from, to)?)?;
/// assert!(json.contains(r#""first_tick_start":"2026-12-07T00:00:00.000Z""#));
/// assert!(json.contains(r#""last_tick_end":"2026-12-07T00:00:00.030Z""#));
/// # Ok::<(), flakeid::Error>(())
/// ```
pub fn range_json(
    layout: &Layout,
    from_unix_ns: i128,
    to_unix_ns: i128,
    range: IdRange,
) -> Result<String, Error> {
    let first_tick = layout.decompose(range.first.get())?.ticks;
    let last_tick = layout.decompose(range.last.get())?.ticks;
    // The next tick's start; past the last tick, the layout's end.
    let last_end = if last_tick < layout.max_ticks() {
        layout.unix_ns_of(last_tick + 1)?
    } else {
        layout.end_unix_ns()
    };
    Ok(format!(
        "{{\"first\":\"{}\",\"last\":\"{}\",\"from\":\"{}\",\"to\":\"{}\",\"first_tick_start\":\"{}\",\"last_tick_end\":\"{}\"}}",
        range.first,
        range.last,
        Timestamp(from_unix_ns),
        Timestamp(to_unix_ns),
        Timestamp(layout.unix_ns_of(first_tick)?),
        Timestamp(last_end),
    ))
}
