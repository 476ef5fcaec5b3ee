//! The text the flakeid tool and the flakeid service share, below both: decoded IDs as rows
//! in every format ([`rows`]: aligned table, JSON lines, CSV), a layout's facts as JSON
//! ([`layout`]), a span of time and its IDs ([`range`]), and [`NodeFields`], the one rule for which node fields a decoded ID shows.
//!
//! ```
//! use flakeid::Layout;
//! use flakeid_text::rows::{Row, RowFormat, RowWriter};
//!
//! let layout = Layout::snowflake();
//! let id = 1_541_815_603_606_036_480u64; // a Twitter ID
//! let d = layout.decompose(id)?;
//! let mut writer = RowWriter::new(&layout, RowFormat::Csv);
//! let mut out = Vec::new();
//! writer.header(&mut out);
//! let (ticks, sequence, node) = (d.ticks, d.sequence, d.node);
//! let row = Row { id, ticks, unix_ms: layout.unix_ms_of(ticks)?, sequence, node };
//! let at = out.len();
//! let end = writer.row(&mut out, at, &row);
//! out.truncate(end);
//! let text = String::from_utf8(out)?;
//! assert!(text.starts_with("id,time,unix_ms,ticks,sequence,node,datacenter,worker\n1541815603606036480,2022-"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod batch;
pub mod layout;
mod line;
pub mod range;
pub mod rows;

use flakeid::Layout;
use flakeid::layout::Order;

/// Which node fields a decoded ID of a layout shows beside `node`: the rule the table, JSON
/// and CSV rows, the service's JSON and its gRPC answers all follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeFields {
    /// `datacenter` and `worker`: the layout splits its node field (Twitter's Snowflake).
    pub datacenter_worker: bool,
    /// `machine`: the layout puts the node last, as Sonyflake names it.
    pub machine: bool,
    /// The names of the node's two parts, when `datacenter_worker`: Discord's own
    /// (`worker`, `process`) for its layout, Twitter's (`datacenter`, `worker`) otherwise.
    pub split_names: (&'static str, &'static str),
}

impl NodeFields {
    /// The node fields of `layout`'s IDs.
    pub fn of(layout: &Layout) -> NodeFields {
        let discord = layout::preset_of(layout).is_some_and(|p| p.name == "discord");
        NodeFields {
            datacenter_worker: layout.datacenter_bits() > 0,
            machine: layout.order() == Order::TimeSequenceNode,
            split_names: if discord {
                ("worker", "process")
            } else {
                ("datacenter", "worker")
            },
        }
    }
}
