//! The portable scalar kernel: always compiled, the oracle every SIMD kernel is tested
//! against, and the tail of their loops.
#![allow(unsafe_code)] // the kernel writes through the output columns' raw pointers

use super::{Out, Plan};
use crate::layout::Layout;

/// Decodes `ids[..]` into rows (the `u32` sequence and node columns if `N`, else the
/// `u64` ones) `start..start + ids.len()` of the columns; returns the OR of
/// every ID's invalid bits.
///
/// # Safety
/// Every non-null column of `out` must be valid for writes of rows
/// `start..start + ids.len()`.
#[inline(always)]
pub(super) unsafe fn kernel<const N: bool>(
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
        // SAFETY: (each write) `row < start + ids.len()`, and the caller guarantees every
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
            // `N` (narrow) picks the `u32` columns at compile time, so the loop tests one
            // pointer per field as it did with only `u64` columns (testing both at run
            // time made the in-cache loop up to 3x slower). They are used only for fields
            // of at most 32 bits, so the masked value fits and `as` loses nothing.
            if N {
                if !out.sequence32.is_null() {
                    *out.sequence32.add(row) =
                        ((id >> plan.sequence_shift) & plan.sequence_mask) as u32;
                }
                if !out.node32.is_null() {
                    *out.node32.add(row) = ((id >> plan.node_shift) & plan.node_mask) as u32;
                }
            } else {
                if !out.sequence.is_null() {
                    *out.sequence.add(row) = (id >> plan.sequence_shift) & plan.sequence_mask;
                }
                if !out.node.is_null() {
                    *out.node.add(row) = (id >> plan.node_shift) & plan.node_mask;
                }
            }
        }
    }
    bad
}
