//! From a span of time to the IDs a layout gives it ([`Layout::id_range`]): the bounds of a
//! `WHERE id BETWEEN first AND last` over a column of IDs.

use super::*;
use crate::id::Id;

/// The IDs a layout gives to a span of time, both ends inclusive (SQL's `BETWEEN`), as
/// [`Layout::id_range`] returns them.
///
/// Every ID minted at an instant of the span lies in `first..=last`, whatever its sequence
/// and node. An ID only knows its tick, so where the span's start or end falls inside a
/// tick, the IDs of that whole tick are in the range, some minted up to one tick outside
/// the span: for a layout of 1 ms ticks and a span in whole milliseconds the range is exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdRange {
    /// The lowest ID of the span's first tick (sequence and node 0).
    pub first: Id,
    /// The highest ID of the span's last tick (sequence and node at their largest).
    pub last: Id,
}

impl IdRange {
    /// Whether `id` lies in the range.
    pub fn contains(&self, id: Id) -> bool {
        self.first <= id && id <= self.last
    }
}

impl Layout {
    /// The IDs this layout gives to the instants from `from_unix_ms` (inclusive) to
    /// `to_unix_ms` (exclusive), in Unix milliseconds: see [`IdRange`] for what the range
    /// holds, and [`Layout::id_range_ns`] for the rules at the layout's ends.
    ///
    /// ```
    /// use flakeid::{Id, Layout};
    ///
    /// let layout = Layout::snowflake();
    /// // 2026-12-07, the whole day (Unix ms, the end exclusive).
    /// let day = layout.id_range(1_796_601_600_000, 1_796_688_000_000)?;
    /// let noon = layout.compose(layout.ticks_at(1_796_644_800_000 * 1_000_000)?, 7, 3)?;
    /// assert!(day.contains(Id::new(noon)));
    /// // SQL: WHERE id BETWEEN {first} AND {last}
    /// assert!(day.first < day.last);
    /// # Ok::<(), flakeid::Error>(())
    /// ```
    pub fn id_range(&self, from_unix_ms: u64, to_unix_ms: u64) -> Result<IdRange, Error> {
        let ms = i128::from(NS_PER_MS);
        self.id_range_ns(i128::from(from_unix_ms) * ms, i128::from(to_unix_ms) * ms)
    }

    /// [`Layout::id_range`] to the nanosecond: the instants from `from_unix_ns` (inclusive)
    /// to `to_unix_ns` (exclusive).
    ///
    /// A span that begins before the layout's epoch starts at its first ID, and one that
    /// ends past the layout's lifetime ends at its last: no ID lies outside them. A span
    /// with no instant in the layout's lifetime is [`Error::BeforeEpoch`] (it ends by the
    /// epoch) or [`Error::PastLifetime`] (it starts at or past the end), and an empty span
    /// (`to` not after `from`) is [`Error::EmptySpan`].
    pub fn id_range_ns(&self, from_unix_ns: i128, to_unix_ns: i128) -> Result<IdRange, Error> {
        if to_unix_ns <= from_unix_ns {
            return Err(Error::EmptySpan {
                from_unix_ns,
                to_unix_ns,
            });
        }
        // The span's last instant first: before the epoch, the whole span is.
        let last = match self.ticks_at(to_unix_ns - 1) {
            Ok(ticks) => ticks,
            Err(Error::PastLifetime { .. }) => self.max_ticks(),
            Err(e) => return Err(e),
        };
        let first = match self.ticks_at(from_unix_ns) {
            Ok(ticks) => ticks,
            Err(Error::BeforeEpoch { .. }) => 0,
            Err(e) => return Err(e),
        };
        // The lowest ID of the first tick and the highest of the last.
        Ok(IdRange {
            first: Id::new(self.compose_unchecked(first, 0, 0)),
            last: Id::new(self.compose_unchecked(last, self.max_sequence(), self.max_node())),
        })
    }
}
