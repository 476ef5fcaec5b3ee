//! [`LayoutBuilder`]: custom layouts, every rule checked at `build`.

use core::time::Duration;
#[cfg(feature = "std")]
use std::time::SystemTime;

#[cfg(feature = "std")]
use super::system_time_ns;
use super::{Cuts, Grid, Layout, MAX_BITS, NS_PER_MS, NodeParts, Order, duration_of_ns};
use crate::error::Error;

/// Builds a custom [`Layout`]; every rule broken gets its own [`Error`].
#[derive(Debug, Clone)]
pub struct LayoutBuilder {
    time_bits: u32,
    sequence_bits: u32,
    node_bits: u32,
    pub(super) datacenter_bits: u32,
    parts: NodeParts,
    order: Order,
    grid: Grid,
    pub(super) unit: Duration,
    pub(super) epoch: Result<u64, Error>,
    max_bits: u32,
}

impl Default for LayoutBuilder {
    fn default() -> Self {
        LayoutBuilder {
            time_bits: 41,
            sequence_bits: 12,
            node_bits: 10,
            datacenter_bits: 0,
            parts: NodeParts::DatacenterWorker,
            order: Order::TimeNodeSequence,
            grid: Grid::Unix,
            unit: Duration::from_millis(1),
            epoch: Ok(0),
            max_bits: MAX_BITS,
        }
    }
}

impl LayoutBuilder {
    /// Caps the ID width: `build` fails with [`Error::WiderThanCap`] when the fields add
    /// up to more. `max_bits(JAVASCRIPT_SAFE_BITS)` keeps every ID exact in JavaScript,
    /// `max_bits(I64_SAFE_BITS)` keeps every ID non-negative in a signed 64-bit column.
    /// Without a cap a layout may use all 64 bits.
    ///
    /// ```
    /// use flakeid::{Error, Layout};
    /// use flakeid::layout::JAVASCRIPT_SAFE_BITS;
    ///
    /// let ok = Layout::builder().time_bits(40).sequence_bits(8).node_bits(5)
    ///     .max_bits(JAVASCRIPT_SAFE_BITS).build()?;
    /// assert!(ok.is_javascript_safe());
    /// let too_wide = Layout::builder().time_bits(41).sequence_bits(8).node_bits(5)
    ///     .max_bits(JAVASCRIPT_SAFE_BITS).build();
    /// assert_eq!(too_wide.unwrap_err(), Error::WiderThanCap { bits: 54, max: 53 });
    /// # Ok::<(), Error>(())
    /// ```
    pub fn max_bits(mut self, bits: u32) -> Self {
        self.max_bits = bits;
        self
    }

    /// Width of the time field (at least 1).
    pub fn time_bits(mut self, bits: u32) -> Self {
        self.time_bits = bits;
        self
    }
    /// Width of the sequence field (0 allowed: one ID per tick).
    pub fn sequence_bits(mut self, bits: u32) -> Self {
        self.sequence_bits = bits;
        self
    }
    /// Width of the node field (0 allowed: a single node).
    pub fn node_bits(mut self, bits: u32) -> Self {
        self.node_bits = bits;
        self
    }
    /// Split the node field into Snowflake's datacenter (these high bits) and worker.
    pub fn datacenter_bits(mut self, bits: u32) -> Self {
        self.datacenter_bits = bits;
        self
    }
    /// The names of the node's two parts where [`datacenter_bits`](Self::datacenter_bits)
    /// splits it: Snowflake's datacenter and worker (the default) or Discord's worker and
    /// process. Decoded IDs show them, and [`Layout::node_from`] takes them.
    pub fn node_parts(mut self, parts: NodeParts) -> Self {
        self.parts = parts;
        self
    }
    /// Where tick boundaries lie: [`Grid::Unix`] (the default) or [`Grid::Epoch`].
    pub fn grid(mut self, grid: Grid) -> Self {
        self.grid = grid;
        self
    }
    /// Field order below the time field.
    pub fn order(mut self, order: Order) -> Self {
        self.order = order;
        self
    }
    /// Tick unit: at least 1 ms and at most `u64::MAX` ns (about 584 years); it need not
    /// be whole ms. Anything else fails at `build` with [`Error::InvalidTimeUnit`].
    pub fn unit(mut self, unit: Duration) -> Self {
        self.unit = unit;
        self
    }
    /// Epoch in Unix milliseconds (one past 2554, where clocks end, fails at `build`
    /// with [`Error::EpochInFuture`]).
    pub fn epoch_unix_ms(mut self, ms: u64) -> Self {
        self.epoch = ms
            .checked_mul(NS_PER_MS)
            .ok_or(Error::EpochInFuture { epoch_unix_ms: ms });
        self
    }
    /// Epoch in Unix nanoseconds.
    pub fn epoch_unix_ns(mut self, ns: u64) -> Self {
        self.epoch = Ok(ns);
        self
    }
    #[cfg(feature = "std")]
    /// Epoch as a [`SystemTime`] (not before 1970: [`Error::EpochBeforeUnix`] at `build`).
    pub fn epoch(mut self, time: SystemTime) -> Self {
        self.epoch = epoch_from_ns(system_time_ns(time));
        self
    }

    #[cfg(feature = "std")]
    /// Checks every rule and builds the layout; the epoch must not be in the future.
    pub fn build(self) -> Result<Layout, Error> {
        self.build_at(crate::clock::system_unix_ns())
    }

    /// As [`LayoutBuilder::build`], judging "the future" against `now_unix_ns`.
    pub fn build_at(self, now_unix_ns: u64) -> Result<Layout, Error> {
        let bits = self
            .time_bits
            .saturating_add(self.sequence_bits)
            .saturating_add(self.node_bits);
        if bits > MAX_BITS {
            return Err(Error::LayoutTooWide { bits });
        }
        if bits > self.max_bits {
            return Err(Error::WiderThanCap {
                bits,
                max: self.max_bits,
            });
        }
        if self.time_bits == 0 {
            return Err(Error::TimeBitsTooFew { bits: 0, min: 1 });
        }
        if self.datacenter_bits > self.node_bits {
            return Err(Error::InvalidDatacenterBits {
                datacenter_bits: self.datacenter_bits,
                node_bits: self.node_bits,
            });
        }
        let unit_ns = match u64::try_from(self.unit.as_nanos()) {
            Ok(ns) if ns >= NS_PER_MS => ns,
            _ => return Err(Error::InvalidTimeUnit { unit: self.unit }),
        };
        let epoch_unix_ns = self.epoch?;
        if epoch_unix_ns > now_unix_ns {
            return Err(Error::EpochInFuture {
                epoch_unix_ms: epoch_unix_ns / NS_PER_MS,
            });
        }
        // The end instant, checked here so that every accessor of a built layout can
        // compute it without overflow: (epoch tick + 2^time_bits) x unit + phase.
        let phase = match self.grid {
            Grid::Unix => 0,
            Grid::Epoch => epoch_unix_ns % unit_ns,
        };
        let end_ns = (u128::from(epoch_unix_ns / unit_ns) + (1u128 << self.time_bits))
            .checked_mul(u128::from(unit_ns))
            .and_then(|ns| ns.checked_add(u128::from(phase)));
        if end_ns.is_none_or(|ns| ns / u128::from(NS_PER_MS) > i64::MAX as u128) {
            return Err(Error::LayoutEndsTooLate);
        }
        let layout = Layout {
            time_bits: self.time_bits as u8,
            sequence_bits: self.sequence_bits as u8,
            node_bits: self.node_bits as u8,
            datacenter_bits: self.datacenter_bits as u8,
            // A node with no parts has no names for them: one layout, one spelling.
            parts: match self.datacenter_bits {
                0 => NodeParts::DatacenterWorker,
                _ => self.parts,
            },
            order: self.order,
            grid: self.grid,
            unit_ns,
            epoch_unix_ns,
            tick0_ms: 0,
            unit_ms: 0,
            cuts: Cuts::NONE,
        }
        .derived();
        Ok(layout)
    }
}

/// A signed epoch as the builder keeps it: before 1970 and past the clock's range are
/// errors naming the real limit.
pub(super) fn epoch_from_ns(ns: i128) -> Result<u64, Error> {
    if ns < 0 {
        return Err(Error::EpochBeforeUnix {
            by: duration_of_ns(-ns),
        });
    }
    u64::try_from(ns).map_err(|_| Error::EpochInFuture {
        epoch_unix_ms: u64::try_from(ns / i128::from(NS_PER_MS)).unwrap_or(u64::MAX),
    })
}

impl Layout {
    /// A builder for custom layouts (defaults: Snowflake's order, 1 ms, Unix epoch).
    pub fn builder() -> LayoutBuilder {
        LayoutBuilder::default()
    }
}
