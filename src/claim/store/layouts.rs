//! The record of a layout in a store and the preset it names: a leaf the claim errors
//! read to name a recorded layout.

use std::string::{String, ToString};

/// The record of a layout in a store ([`ClaimStore::bind_layout`](super::ClaimStore::bind_layout)): the layout string of
/// what decides the value of an ID (field widths, order, unit, epoch, grid), without the
/// datacenter split of the node field, which names bits but does not move them.
pub fn layout_record(layout: &crate::Layout) -> String {
    layout.without_datacenter_split().to_string()
}

/// The preset a layout record is, if it is one: `snowflake` for
/// `layout_record(&Layout::snowflake())`, as the tool and the messages name it.
pub fn layout_preset(record: &str) -> Option<&'static str> {
    let record = layout_record(&record.parse::<crate::Layout>().ok()?);
    crate::Layout::presets()
        .iter()
        .find(|p| layout_record(&p.layout) == record)
        .map(|p| p.name)
}
