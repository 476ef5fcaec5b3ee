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

/// Which node fields a decoded ID of a layout shows beside `node`: the core's rule
/// ([`Layout::node_fields`], which [`Layout::node_from`] takes back) as the table, JSON and
/// CSV rows, the service's JSON and its gRPC answers write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeFields {
    /// The layout splits its node field in two (Twitter's Snowflake, Discord).
    pub datacenter_worker: bool,
    /// `machine`: the layout puts the node last, as Sonyflake names it.
    pub machine: bool,
    /// The names of the node's two parts, when `datacenter_worker`: the layout's
    /// [`NodeParts`](flakeid::layout::NodeParts), Twitter's (`datacenter`, `worker`) or
    /// Discord's (`worker`, `process`).
    pub split_names: (&'static str, &'static str),
}

impl NodeFields {
    /// The node fields of `layout`'s IDs.
    pub fn of(layout: &Layout) -> NodeFields {
        let fields = layout.node_fields();
        let (high, low) = layout.node_parts().fields();
        NodeFields {
            datacenter_worker: fields.parts().is_some(),
            machine: fields.machine(),
            split_names: (high.name(), low.name()),
        }
    }
}
