//! The portable scalar kernel: always compiled, the oracle every SIMD kernel is tested
//! against, and the tail of their loops.

use super::{Out, Plan};
use crate::layout::Layout;

/// Decodes `ids[..]` into rows `start..start + ids.len()` of the columns; returns the OR of
/// every ID's invalid bits.
///
/// # Safety
/// Every non-null column of `out` must be valid for writes of rows
/// `start..start + ids.len()`.
#[inline(always)]
pub(super) unsafe fn kernel(
    plan: &Plan,
    layout: &Layout,
    ids: &[u64],
    out: &Out,
    start: usize,
) -> u64 {
    let mut bad = 0;
    for (i, &id) in ids.iter().enumerate() {
        let row = start + i;
        bad |= id & plan.invalid;
        let ticks = id >> plan.time_shift;
        // SAFETY (each write): `row < start + ids.len()`, and the caller guarantees every
        // non-null column is valid for those rows.
        unsafe {
            if !out.ticks.is_null() {
                *out.ticks.add(row) = ticks;
            }
            if !out.unix_ms.is_null() {
                *out.unix_ms.add(row) = match plan.unit_ms {
                    Some(unit_ms) => ticks.wrapping_mul(unit_ms).wrapping_add(plan.base_ms),
                    None => layout.unix_ms_of_unchecked(ticks),
                };
            }
            if !out.sequence.is_null() {
                *out.sequence.add(row) = (id >> plan.sequence_shift) & plan.sequence_mask;
            }
            if !out.node.is_null() {
                *out.node.add(row) = (id >> plan.node_shift) & plan.node_mask;
            }
        }
    }
    bad
}
