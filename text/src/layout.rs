//! The text the tool and the service share: a layout's facts as JSON (`flakeid layout
//! --json`, `GET /v1/layout`) and the names they use.

use flakeid::Layout;
use flakeid::layout::{Grid, Order, Preset};
use flakeid::rfc3339::Timestamp;

/// IDs per second as an integer when whole, else with two decimals.
pub fn rate_text(rate: f64) -> String {
    if rate.fract() == 0.0 {
        format!("{rate:.0}")
    } else {
        format!("{rate:.2}")
    }
}

/// The preset a layout is, if any (by value: `--layout 'time=42,...'` spelled out is
/// Discord too).
pub fn preset_of(l: &Layout) -> Option<&'static Preset> {
    Layout::presets().iter().find(|p| p.layout == *l)
}

fn json_text(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// The facts of one layout as a JSON object (no newline); `node_fields` lists the node
/// fields its decoded IDs show, the names compose takes back.
pub fn layout_json(l: &Layout) -> String {
    let end = Timestamp(l.end_unix_ns());
    let epoch = Timestamp(l.epoch_unix_ns());
    let first = Timestamp(l.unix_ns_of(0).unwrap_or(0));
    let rate = match l.ids_per_second_per_node() {
        r if r > JSON_SAFE_MAX as f64 => format!("\"{}\"", rate_text(r)),
        r => rate_text(r),
    };
    let preset = preset_of(l);
    let mut text = format!(
        "{{\"layout\":\"{l}\",\"time_bits\":{},\"sequence_bits\":{},\"node_bits\":{},\"datacenter_bits\":{},\"worker_bits\":{},\"order\":\"{}\",\"grid\":\"{}\",\"unit_ns\":{},\"epoch_unix_ms\":{},\"epoch\":\"{epoch}\",\"first_tick_starts\":\"{first}\",\"lifetime_years\":{:.2},\"end\":\"{end}\",\"ids_per_second_per_node\":{rate},\"max_nodes\":{},\"bits\":{},\"i64_safe\":{},\"javascript_safe\":{},\"mintable_to_end\":{}",
        l.time_bits(),
        l.sequence_bits(),
        l.node_bits(),
        l.datacenter_bits(),
        l.worker_bits(),
        order_name(l.order()),
        grid_name(l.grid()),
        json_int(l.unit_ns()),
        json_int(l.epoch_unix_ms()),
        l.lifetime_years(),
        json_int(l.node_count()),
        l.bits(),
        l.is_i64_safe(),
        l.is_javascript_safe(),
        l.ends_within_clock_range(),
    );
    {
        use std::fmt::Write as _;
        let names: Vec<&str> = l.node_fields().iter().map(|f| f.name()).collect();
        let _ = write!(text, ",\"node_fields\":{}", serde_json::Value::from(names));
    }
    if let Some(p) = preset {
        use std::fmt::Write as _;
        let _ = write!(
            text,
            ",\"preset\":{},\"aliases\":{},\"source\":{}",
            json_text(p.name),
            serde_json::Value::from(p.aliases.to_vec()),
            json_text(p.source)
        );
        if let Some(note) = p.note {
            let _ = write!(text, ",\"note\":{}", json_text(note));
        }
    }
    text.push('}');
    text
}

/// The largest integer every JSON reader holds exactly: 2^53 - 1 (JavaScript's
/// `Number.MAX_SAFE_INTEGER`, the bound of [`Layout::is_javascript_safe`]).
pub const JSON_SAFE_MAX: u64 = (1 << flakeid::layout::JAVASCRIPT_SAFE_BITS) - 1;

/// An integer as JSON: a number up to [`JSON_SAFE_MAX`], a decimal string above it, so
/// that no reader rounds it.
pub fn json_int(v: u64) -> serde_json::Value {
    if v <= JSON_SAFE_MAX {
        v.into()
    } else {
        v.to_string().into()
    }
}

/// A tick grid's name in the layout string and JSON: `unix` or `epoch`.
pub fn grid_name(g: Grid) -> &'static str {
    match g {
        Grid::Unix => "unix",
        Grid::Epoch => "epoch",
    }
}

/// A field order as the JSON shows it: `time|node|sequence` or `time|sequence|node`.
pub fn order_name(o: Order) -> &'static str {
    match o {
        Order::TimeNodeSequence => "time|node|sequence",
        Order::TimeSequenceNode => "time|sequence|node",
    }
}

/// What the tool and the service say when `layout` runs out within `margin` of `now_ns`
/// (Unix ns; [`Layout::ends_within`]), or already has: its end, the time left, and what to
/// do. `None` where its end lies further off.
pub fn ending_text(layout: &Layout, margin: std::time::Duration, now_ns: i128) -> Option<String> {
    let left = layout.ends_within(margin, now_ns)?;
    let end = Timestamp(layout.end_unix_ns());
    Some(match left.is_zero() {
        true => format!(
            "the layout ran out at {end}: no ID can be minted in it; move to a layout with a later end (a later epoch or more time bits)"
        ),
        false => format!(
            "the layout runs out at {end}, in {:.1} days: after that no ID can be minted in it; move to a layout with a later end (a later epoch or more time bits) before then",
            left.as_secs_f64() / 86_400.0
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every integer of the layout JSON survives a reader that holds numbers as `f64`:
    /// numbers up to 2^53 - 1, decimal strings above (a layout of 60 node bits has 2^60 nodes).
    #[test]
    fn integers_above_2_53_are_strings() {
        let wide: Layout = "time=2,seq=1,node=60".parse().unwrap();
        let v: serde_json::Value = serde_json::from_str(&layout_json(&wide)).unwrap();
        assert_eq!(v["max_nodes"], serde_json::json!((1u64 << 60).to_string()));
        let v: serde_json::Value =
            serde_json::from_str(&layout_json(&Layout::snowflake())).unwrap();
        assert_eq!(v["max_nodes"], serde_json::json!(1024));
        assert_eq!(json_int(JSON_SAFE_MAX).to_string(), "9007199254740991");
        assert_eq!(
            json_int(JSON_SAFE_MAX + 1).to_string(),
            "\"9007199254740992\""
        );
    }
}
