//! The text the flakeid tool and the flakeid service share, below both: decoded IDs as rows
//! in every format ([`rows`]: aligned table, JSON lines, CSV), a layout's facts as JSON
//! ([`layout`]) and a span of time and its IDs ([`range`]). Which node fields a decoded ID
//! shows is the core's rule (`Layout::node_fields`).
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
//! let len = writer.row(&mut out, &row);
//! assert_eq!(out.len(), 54 + len);
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
