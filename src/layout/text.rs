//! The layout string, `time=41,seq=12,node=10,dc=5,order=tns,unit=1ms,epoch=...`, and the
//! preset names: [`Layout`]'s `Display` and `FromStr`.

use core::fmt;
use core::str::FromStr;
use core::time::Duration;

use super::builder::epoch_from_ns;
use super::{Grid, Layout, NS_PER_MS, NodeParts, Order};
use crate::error::{Error, ParseError};
use crate::rfc3339;

fn write_unit(f: &mut fmt::Formatter<'_>, ns: u64) -> fmt::Result {
    if ns.is_multiple_of(1_000_000_000) {
        write!(f, "{}s", ns / 1_000_000_000)
    } else if ns.is_multiple_of(NS_PER_MS) {
        write!(f, "{}ms", ns / NS_PER_MS)
    } else if ns.is_multiple_of(1_000) {
        write!(f, "{}us", ns / 1_000)
    } else {
        write!(f, "{ns}ns")
    }
}

/// Reads `10ms`, `1500us`, `1s`...; whether the unit is allowed is the builder's
/// business, so a unit too long or too short gets the same error from both.
fn parse_unit(s: &str) -> Result<Duration, Error> {
    let bad = Error::Parse(ParseError::Layout(
        "unit must be a whole number with ns, us, ms or s (e.g. 10ms)",
    ));
    let split = s.find(|c: char| !c.is_ascii_digit()).ok_or(bad.clone())?;
    let (num, suffix) = s.split_at(split);
    let n: u64 = num.parse().map_err(|_| bad.clone())?;
    Ok(match suffix {
        "ns" => Duration::from_nanos(n),
        "us" | "µs" => Duration::from_micros(n),
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        _ => return Err(bad),
    })
}

impl fmt::Display for Layout {
    /// The canonical layout string, which [`Layout::from_str`] reads back to an equal layout.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "time={},seq={},node={}",
            self.time_bits, self.sequence_bits, self.node_bits
        )?;
        if self.datacenter_bits > 0 {
            write!(f, ",dc={}", self.datacenter_bits)?;
            if self.parts != NodeParts::DatacenterWorker {
                write!(f, ",parts={}", self.parts.as_str())?;
            }
        }
        let order = match self.order {
            Order::TimeNodeSequence => "tns",
            Order::TimeSequenceNode => "tsn",
        };
        write!(f, ",order={order},unit=")?;
        write_unit(f, self.unit_ns)?;
        f.write_str(",epoch=")?;
        rfc3339::write(f, i128::from(self.epoch_unix_ns))?;
        if self.grid == Grid::Epoch {
            f.write_str(",grid=epoch")?;
        }
        Ok(())
    }
}

impl FromStr for Layout {
    type Err = Error;

    /// Reads a preset name (`snowflake` or `twitter`, `sonyflake` or `sonyflake-v2`,
    /// `sonyflake-v1`, `discord`, `instagram`, `mastodon`, `js-safe`: see
    /// [`Layout::presets`]) or a custom layout `key=value,...` with keys `time`, `seq`,
    /// `node` (bits, 64 in all at most; `time` defaults to what is left of 63, so that IDs
    /// fit a signed column unless you ask for 64), `dc` (datacenter bits inside `node`,
    /// default 0), `order` (`tns` = time|node|sequence, the default, or `tsn` =
    /// time|sequence|node), `unit` (`1ms` default; `ns`, `us`, `ms`, `s`), `epoch` (RFC 3339
    /// or Unix milliseconds; default 1970-01-01T00:00:00Z) and `grid` (`unix`, the
    /// default, or `epoch`: see [`Grid`]) and `parts` (the names of the two parts `dc`
    /// splits the node into: `datacenter-worker`, the default, or Discord's
    /// `worker-process`; see [`NodeParts`]). Every rule of [`LayoutBuilder`](super::LayoutBuilder)
    /// is checked but one, the same with and without `std`: an epoch ahead of the clock is
    /// accepted (there is no clock without `std`;
    /// [`LayoutBuilder::build`](crate::layout::LayoutBuilder::build) refuses it).
    fn from_str(s: &str) -> Result<Layout, Error> {
        let s = s.trim();
        if let Some(preset) = super::presets::by_name(s) {
            return Ok(preset.layout);
        }
        let layout_err = |what| Error::Parse(ParseError::Layout(what));
        if s.is_empty() {
            return Err(Error::Parse(ParseError::Empty));
        }
        if !s.contains('=') {
            return Err(Error::Parse(ParseError::UnknownPreset));
        }
        let bits = |v: &str| {
            v.parse::<u32>()
                .map_err(|_| layout_err("bit widths are whole numbers"))
        };
        let mut b = Layout::builder().datacenter_bits(0);
        let (mut time, mut seq, mut node) = (None, None, None);
        let mut seen = [false; 9];
        for part in s.split(',') {
            let (key, value) = part
                .split_once('=')
                .ok_or(layout_err("expected key=value pairs or a preset name"))?;
            let (key, value) = (key.trim(), value.trim());
            let slot = match key {
                "time" => 0,
                "seq" | "sequence" => 1,
                "node" | "machine" => 2,
                "dc" | "datacenter" => 3,
                "order" => 4,
                "unit" => 5,
                "epoch" => 6,
                "grid" => 7,
                "parts" => 8,
                _ => {
                    return Err(Error::Parse(ParseError::UnknownLayoutKey(
                        crate::parse::LayoutKey::new(key),
                    )));
                }
            };
            if core::mem::replace(&mut seen[slot], true) {
                return Err(layout_err("a key appears twice"));
            }
            match slot {
                0 => time = Some(bits(value)?),
                1 => seq = Some(bits(value)?),
                2 => node = Some(bits(value)?),
                3 => b = b.datacenter_bits(bits(value)?),
                4 => {
                    b = b.order(match value {
                        "tns" | "time-node-sequence" | "snowflake" => Order::TimeNodeSequence,
                        "tsn" | "time-sequence-node" | "sonyflake" => Order::TimeSequenceNode,
                        _ => return Err(layout_err("order is tns or tsn")),
                    })
                }
                5 => b.unit = parse_unit(value)?,
                8 => {
                    b = b.node_parts(NodeParts::from_name(value).ok_or(layout_err(
                        "parts is datacenter-worker (Snowflake's names, the default) or worker-process (Discord's)",
                    ))?)
                }
                7 => {
                    b = b.grid(match value {
                        "unix" => Grid::Unix,
                        "epoch" => Grid::Epoch,
                        _ => return Err(layout_err("grid is unix or epoch")),
                    })
                }
                _ => {
                    let ns = if !value.is_empty() && value.bytes().all(|c| c.is_ascii_digit()) {
                        // Unix ms.
                        let ms = value.parse::<u64>().map_err(|_| {
                            layout_err("epoch in Unix milliseconds does not fit in 64 bits: give an RFC 3339 time or Unix ms before 2554")
                        })?;
                        i128::from(ms) * i128::from(NS_PER_MS)
                    } else {
                        rfc3339::parse(value)?
                    };
                    b.epoch = epoch_from_ns(ns);
                }
            }
        }
        if seen[8] && b.datacenter_bits == 0 {
            return Err(layout_err(
                "parts names the two parts dc splits the node into: give dc=BITS with it",
            ));
        }
        let seq = seq.ok_or(layout_err("seq is required"))?;
        let node = node.ok_or(layout_err("node is required"))?;
        let time = match time {
            Some(t) => t,
            None => 63u32.saturating_sub(seq.saturating_add(node)),
        };
        let b = b.time_bits(time).sequence_bits(seq).node_bits(node);
        // The same in every build: without std there is no clock to judge "the future"
        // against, so the string never does (the `flakeid` tool and `LayoutBuilder::build`
        // do).
        b.build_at(u64::MAX)
    }
}
