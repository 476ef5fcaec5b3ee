//! The bit layout of an ID: field widths, field order, tick unit and epoch, and its
//! arithmetic (compose, decompose, ticks and instants). Building a custom layout is
//! `builder`, Sonyflake's settings rules `sonyflake`, the layout string `text`.

mod builder;
pub(crate) mod names;
mod node_fields;
mod presets;
mod range;
#[cfg(feature = "std")]
mod sonyflake;
#[cfg(test)]
mod tests;
mod text;
mod time;

pub use crate::field::{NodeFields, NodeParts};
pub use builder::LayoutBuilder;
pub use names::PresetNames;
pub use presets::{
    DISCORD_EPOCH_MS, INSTAGRAM_EPOCH_MS, Preset, SONYFLAKE_V1_EPOCH_MS, SONYFLAKE_V2_EPOCH_MS,
    TWEPOCH_MS,
};
pub use range::IdRange;
#[cfg(feature = "std")]
pub use sonyflake::SonyflakeSettings;

pub use crate::clock::CLOCK_END_UNIX_NS;
pub use time::END_WARNING;

use core::time::Duration;
#[cfg(feature = "std")]
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Field};

pub(crate) const NS_PER_MS: u64 = 1_000_000;

/// Which field sits above which, after the time field (always the most significant).
///
/// Exhaustive, and staying so: with the time on top, two fields have two orders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Order {
    /// `time | node | sequence`: Twitter Snowflake's order.
    TimeNodeSequence,
    /// `time | sequence | node`: Sonyflake's order.
    TimeSequenceNode,
}

/// Where a layout's tick boundaries lie, when the unit is longer than 1 ms and the epoch
/// does not fall on a multiple of it. The two rules give the same ticks whenever the epoch
/// is a whole number of units after 1970 (every preset).
///
/// ```
/// use flakeid::{Layout};
/// use flakeid::layout::Grid;
///
/// // A 10 ms unit and an epoch 3 ms past a unit boundary: an instant 8 ms after the epoch
/// // is in tick 1 on Unix's grid (boundaries at whole 10 ms since 1970), and still in
/// // tick 0 on the epoch's grid (boundaries at epoch + k x 10 ms).
/// let unix: Layout = "seq=8,node=16,unit=10ms,epoch=1000003".parse()?;
/// let epoch: Layout = "seq=8,node=16,unit=10ms,epoch=1000003,grid=epoch".parse()?;
/// let at = 1_000_011 * 1_000_000; // Unix ns, 8 ms after the epoch
/// assert_eq!((unix.ticks_at(at)?, epoch.ticks_at(at)?), (1, 0));
/// assert_eq!(epoch.grid(), Grid::Epoch);
/// assert_eq!(epoch.unix_ms_of(0)?, 1_000_003);
/// assert_eq!(unix.unix_ms_of(1)?, 1_000_010);
/// # Ok::<(), flakeid::Error>(())
/// ```
///
/// Exhaustive, and staying so: ticks are counted either on the calendar's units or from
/// the epoch; there is no third anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Grid {
    /// Ticks on whole units since 1970: `floor(t / unit) - floor(epoch / unit)`, Sonyflake's
    /// rule and the default (`grid=unix`).
    #[default]
    Unix,
    /// Ticks counted from the epoch instant itself: `floor((t - epoch) / unit)`, ferroid's
    /// rule (`grid=epoch`).
    Epoch,
}

/// The fields of one ID, as [`Layout::decompose`] returns them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Parts {
    /// Ticks (units of the layout's time unit) since the layout's epoch.
    pub ticks: u64,
    /// The sequence number within the tick.
    pub sequence: u64,
    /// The node id (for Snowflake, `datacenter << worker_bits | worker`).
    pub node: u64,
}

/// A bit layout: how an ID's up to 64 bits split into time, sequence and node, the length
/// of one tick and the epoch ticks count from. An ID is any `u64` that fits its layout;
/// layouts of at most 63 bits ([`Layout::is_i64_safe`]) also fit a signed 64-bit column.
///
/// The presets are bit-exact with the reference implementations
/// ([`Layout::presets`] lists them with their sources):
///
/// | preset | time | node | sequence | unit | epoch | lifetime | IDs/s per node | nodes | i64 | JS |
/// |---|---|---|---|---|---|---|---|---|---|---|
/// | [`Layout::snowflake`] (`twitter`) | 41 | 10 (5 dc + 5 worker) | 12 | 1 ms | 2010-11-04T01:42:54.657Z | 69.68 y | 4,096,000 | 1,024 | yes | no |
/// | [`Layout::sonyflake`] | 39 | 16 | 8 | 10 ms | 2025-01-01T00:00:00Z | 174.21 y | 25,600 | 65,536 | yes | no |
/// | [`Layout::sonyflake_v1`] | 39 | 16 | 8 | 10 ms | 2014-09-01T00:00:00Z | 174.21 y | 25,600 | 65,536 | yes | no |
/// | [`Layout::discord`] | 42 | 10 (5 worker + 5 process) | 12 | 1 ms | 2015-01-01T00:00:00Z | 139.37 y | 4,096,000 | 1,024 | no | no |
/// | [`Layout::instagram`] | 41 | 13 (shard) | 10 | 1 ms | 2011-08-24T21:07:01.721Z | 69.68 y | 1,024,000 | 8,192 | no | no |
/// | [`Layout::mastodon`] | 48 | 0 | 16 | 1 ms | 1970-01-01T00:00:00Z | 8,919.4 y | 65,536,000 | 1 | no | no |
/// | [`Layout::javascript_safe`] | 41 | 5 | 7 | 1 ms | 2025-01-01T00:00:00Z | 69.68 y | 128,000 | 32 | yes | yes |
///
/// Elapsed ticks are `floor(unix_ns / unit) - floor(epoch_ns / unit)`: tick boundaries are
/// absolute, as in Sonyflake; for a 1 ms unit and a whole-ms epoch this is Snowflake's
/// `now_ms - epoch_ms`. [`Grid::Epoch`] (`grid=epoch`) counts from the epoch instant
/// instead, as ferroid does; the two differ only for an epoch off the unit's grid.
///
/// Instants are `i128` Unix nanoseconds throughout (before 1970 and past 2554 included).
/// From a tick count to a time, pick by what you need:
///
/// | function | gives | use it for |
/// |---|---|---|
/// | [`Layout::unix_ms_of`] | `u64` Unix milliseconds | JSON, databases, most logs |
/// | [`Layout::unix_ns_of`] | `i128` Unix nanoseconds, exact | arithmetic, units that are not whole ms |
/// | [`Layout::time_of`] | `SystemTime` | std's time APIs |
///
/// Each refuses a tick count wider than the time field; [`Layout::ticks_at`] goes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    time_bits: u8,
    sequence_bits: u8,
    node_bits: u8,
    datacenter_bits: u8,
    /// The names of the node's two parts where it is split (`DatacenterWorker` where not).
    parts: NodeParts,
    order: Order,
    grid: Grid,
    unit_ns: u64,
    epoch_unix_ns: u64,
    /// Derived when the layout is made ([`Layout::derived`]), so that
    /// [`Layout::unix_ms_of`] is one multiply and one add: the start of tick 0 in whole
    /// Unix milliseconds (rounded down), and the unit in milliseconds, 0 where the unit is
    /// not a whole number of them (then the exact 128-bit path).
    tick0_ms: u64,
    unit_ms: u64,
    /// The fields' shifts and masks, derived with the rest: [`Layout::decompose`] and every
    /// caller that reaches the layout through a reference loads them, never works them out.
    cuts: Cuts,
}

/// Where an ID's fields sit: each field's shift and mask, and the largest ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Cuts {
    max_id: u64,
    max_ticks: u64,
    max_sequence: u64,
    max_node: u64,
    /// The node's low part (the worker), below its high part (the datacenter).
    max_worker: u64,
    /// The tick counts below it take [`Layout::unix_ms_of`]'s multiply-add, with one
    /// comparison: `max_ticks + 1` where the unit is a whole number of milliseconds, 0
    /// where it is not (every tick count then takes the exact path).
    ms_ticks_end: u64,
    time_shift: u8,
    sequence_shift: u8,
    node_shift: u8,
    worker_bits: u8,
}

impl Cuts {
    /// Before [`Layout::derived`] sets them.
    pub(crate) const NONE: Cuts = Cuts {
        max_id: 0,
        max_ticks: 0,
        max_sequence: 0,
        max_node: 0,
        max_worker: 0,
        ms_ticks_end: 0,
        time_shift: 0,
        sequence_shift: 0,
        node_shift: 0,
        worker_bits: 0,
    };
}

/// The widest ID a JavaScript number holds exactly: 53 bits (`Number.MAX_SAFE_INTEGER`).
pub const JAVASCRIPT_SAFE_BITS: u32 = 53;

/// The widest ID a signed 64-bit column (`i64`, SQL `BIGINT`, Java `long`) holds as a
/// non-negative number: 63 bits. A cap for [`LayoutBuilder::max_bits`].
pub const I64_SAFE_BITS: u32 = 63;

/// The widest ID: 64 bits.
pub const MAX_BITS: u32 = 64;

/// The low `bits` bits set (0 to 64 bits).
pub(crate) const fn mask(bits: u8) -> u64 {
    // Branch-free: a shift by 64 (bits = 0) is `None`, so 0.
    match u64::MAX.checked_shr(64 - bits as u32) {
        Some(m) => m,
        None => 0,
    }
}

pub(crate) const fn check(field: Field, value: u64, max: u64) -> Result<u64, Error> {
    if value > max {
        Err(Error::OutOfRange { field, value, max })
    } else {
        Ok(value)
    }
}

/// A [`SystemTime`] as signed Unix nanoseconds (every `SystemTime` fits).
#[cfg(feature = "std")]
pub(crate) fn system_time_ns(time: SystemTime) -> i128 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

/// A non-negative span of signed nanoseconds as a [`Duration`], saturating at
/// `Duration::MAX` (about 584 billion years).
pub(crate) fn duration_of_ns(ns: i128) -> Duration {
    let ns = ns.max(0) as u128;
    match u64::try_from(ns / 1_000_000_000) {
        Ok(secs) => Duration::new(secs, (ns % 1_000_000_000) as u32),
        Err(_) => Duration::MAX,
    }
}

impl Layout {
    /// Width of the time field.
    pub const fn time_bits(&self) -> u32 {
        self.time_bits as u32
    }
    /// Width of the sequence field.
    pub const fn sequence_bits(&self) -> u32 {
        self.sequence_bits as u32
    }
    /// Width of the node field (datacenter and worker together, for Snowflake).
    pub const fn node_bits(&self) -> u32 {
        self.node_bits as u32
    }
    /// Width of Snowflake's datacenter part, the high bits of the node field (0 if none).
    pub const fn datacenter_bits(&self) -> u32 {
        self.datacenter_bits as u32
    }
    /// The layout with its derived fields (`tick0_ms`, `unit_ms`, `cuts`) set from the others:
    /// every constructor ends here.
    pub(crate) const fn derived(mut self) -> Layout {
        if self.unit_ns.is_multiple_of(NS_PER_MS) {
            self.tick0_ms = self.tick0_ns() / NS_PER_MS;
            self.unit_ms = self.unit_ns / NS_PER_MS;
        } else {
            self.tick0_ms = 0;
            self.unit_ms = 0;
        }
        let (sequence_shift, node_shift) = match self.order {
            Order::TimeNodeSequence => (0, self.sequence_bits),
            Order::TimeSequenceNode => (self.node_bits, 0),
        };
        let worker_bits = self.worker_bits() as u8;
        self.cuts = Cuts {
            max_id: mask(self.time_bits + self.sequence_bits + self.node_bits),
            max_ticks: mask(self.time_bits),
            max_sequence: mask(self.sequence_bits),
            max_node: mask(self.node_bits),
            max_worker: mask(worker_bits),
            ms_ticks_end: if self.unit_ms != 0 {
                mask(self.time_bits).saturating_add(1)
            } else {
                0
            },
            time_shift: self.sequence_bits + self.node_bits,
            sequence_shift,
            node_shift,
            worker_bits,
        };
        self
    }
    /// The same layout with the node field not split into datacenter and worker: the
    /// same IDs, named differently.
    #[cfg(feature = "claim")]
    pub(crate) const fn without_datacenter_split(mut self) -> Layout {
        self.datacenter_bits = 0;
        self.parts = NodeParts::DatacenterWorker;
        self
    }
    /// Width of Snowflake's worker part, the low bits of the node field.
    pub const fn worker_bits(&self) -> u32 {
        (self.node_bits - self.datacenter_bits) as u32
    }
    /// Total width of an ID in bits (at most 64).
    pub const fn bits(&self) -> u32 {
        (self.time_bits + self.sequence_bits + self.node_bits) as u32
    }
    /// The field order.
    pub const fn order(&self) -> Order {
        self.order
    }
    /// Where tick boundaries lie ([`Grid`]).
    pub const fn grid(&self) -> Grid {
        self.grid
    }
    /// How far tick boundaries lie past whole units since 1970, in nanoseconds: 0 on
    /// [`Grid::Unix`], `epoch mod unit` on [`Grid::Epoch`]. Tick `k` starts at
    /// `(epoch_tick + k) x unit + phase`.
    pub const fn phase_ns(&self) -> u64 {
        match self.grid {
            Grid::Unix => 0,
            Grid::Epoch => self.epoch_unix_ns % self.unit_ns,
        }
    }
    /// The start of tick 0 in Unix nanoseconds, as the clocks count: `epoch_tick x unit +
    /// phase`, at most the epoch. Tick `k` starts `k` units later.
    pub(crate) const fn tick0_ns(&self) -> u64 {
        self.epoch_tick() * self.unit_ns + self.phase_ns()
    }
    /// Whether every ID fits a signed 64-bit column as a non-negative number: at most
    /// [`I64_SAFE_BITS`] (63) bits.
    pub const fn is_i64_safe(&self) -> bool {
        self.bits() <= I64_SAFE_BITS
    }
    /// The tick unit in nanoseconds.
    pub const fn unit_ns(&self) -> u64 {
        self.unit_ns
    }
    /// The tick unit.
    pub const fn unit(&self) -> Duration {
        Duration::from_nanos(self.unit_ns)
    }
    /// The epoch in Unix nanoseconds (never before 1970, never after the clock's range),
    /// signed like every instant of the layout API ([`Layout::ticks_at`],
    /// [`Layout::unix_ns_of`], [`Layout::end_unix_ns`]).
    pub const fn epoch_unix_ns(&self) -> i128 {
        self.epoch_unix_ns as i128
    }
    /// The epoch as the clocks count: `u64` Unix nanoseconds.
    pub(crate) const fn epoch_ns(&self) -> u64 {
        self.epoch_unix_ns
    }
    /// The epoch in Unix milliseconds (rounded down).
    pub const fn epoch_unix_ms(&self) -> u64 {
        self.epoch_unix_ns / NS_PER_MS
    }
    /// The absolute tick the epoch falls in: `floor(epoch_ns / unit)` (on either grid:
    /// the epoch's grid is Unix's shifted by less than a unit).
    pub(crate) const fn epoch_tick(&self) -> u64 {
        self.epoch_unix_ns / self.unit_ns
    }

    /// Shift of the time field.
    pub(crate) const fn time_shift(&self) -> u32 {
        self.cuts.time_shift as u32
    }
    /// Shift of the sequence field.
    pub(crate) const fn sequence_shift(&self) -> u32 {
        self.cuts.sequence_shift as u32
    }
    /// Shift of the node field.
    pub(crate) const fn node_shift(&self) -> u32 {
        self.cuts.node_shift as u32
    }
    /// Largest tick count.
    pub const fn max_ticks(&self) -> u64 {
        self.cuts.max_ticks
    }
    /// Largest sequence number.
    pub const fn max_sequence(&self) -> u64 {
        self.cuts.max_sequence
    }
    /// Largest node id.
    pub const fn max_node(&self) -> u64 {
        self.cuts.max_node
    }
    /// Largest ID of this layout.
    pub const fn max_id(&self) -> u64 {
        self.cuts.max_id
    }

    /// How long the layout lasts: `2^time_bits` ticks.
    pub const fn lifetime(&self) -> Duration {
        let ns = (1u128 << self.time_bits) * self.unit_ns as u128;
        // Cannot truncate: `build` bounds the end instant to 63 bits of milliseconds.
        Duration::new((ns / 1_000_000_000) as u64, (ns % 1_000_000_000) as u32)
    }
    /// The lifetime in Julian years of 365.25 days.
    pub const fn lifetime_years(&self) -> f64 {
        self.lifetime().as_secs_f64() / (365.25 * 86_400.0)
    }
    /// The first instant, in Unix nanoseconds, that no longer fits the time field. It may
    /// lie past [`CLOCK_END_UNIX_NS`], where IDs still decode and compose but no clock
    /// reaches.
    pub const fn end_unix_ns(&self) -> i128 {
        // At most 63 bits of milliseconds (`build` checks), so it fits with room to spare.
        (self.epoch_tick() as i128 + (1i128 << self.time_bits)) * self.unit_ns as i128
            + self.phase_ns() as i128
    }
    /// The first instant, in Unix milliseconds (rounded up), that no longer fits.
    pub const fn end_unix_ms(&self) -> u64 {
        let ms = NS_PER_MS as i128;
        ((self.end_unix_ns() + ms - 1) / ms) as u64
    }
    /// Whether a generator can mint until the end of the layout: false when the layout
    /// outlasts what a clock of `u64` nanoseconds can name ([`CLOCK_END_UNIX_NS`], in the
    /// year 2554); such a generator stops there with [`MintError::ClockRangeEnd`](crate::MintError::ClockRangeEnd).
    pub const fn ends_within_clock_range(&self) -> bool {
        self.end_unix_ns() <= CLOCK_END_UNIX_NS as i128 + 1
    }
    /// How many IDs one node can mint per second at most.
    pub const fn ids_per_second_per_node(&self) -> f64 {
        (1u64 << self.sequence_bits) as f64 * 1e9 / self.unit_ns as f64
    }
    /// How many distinct node ids the layout has room for: `2^node_bits`, one more than
    /// [`Layout::max_node`], the largest.
    pub const fn node_count(&self) -> u64 {
        1u64 << self.node_bits
    }

    /// Builds an ID from its fields; each is range-checked, never masked.
    pub fn compose(&self, ticks: u64, sequence: u64, node: u64) -> Result<u64, Error> {
        check(Field::Ticks, ticks, self.max_ticks())?;
        check(Field::Sequence, sequence, self.max_sequence())?;
        self.check_node(node)?;
        Ok(self.compose_unchecked(ticks, sequence, node))
    }

    /// Builds an ID from fields already known to be in range (out-of-range bits spill into
    /// neighbouring fields; use [`Layout::compose`] for untrusted input).
    #[inline(always)]
    pub(crate) const fn compose_unchecked(&self, ticks: u64, sequence: u64, node: u64) -> u64 {
        ticks << self.time_shift() | sequence << self.sequence_shift() | node << self.node_shift()
    }

    /// `node` if it fits the node field, else [`Error::OutOfRange`].
    pub const fn check_node(&self, node: u64) -> Result<u64, Error> {
        check(Field::Node, node, self.max_node())
    }

    /// The node id of the node's two parts, (high, low): Snowflake's (datacenter, worker),
    /// Discord's (worker, process) ([`Layout::node_parts`]), each range-checked (a range
    /// error names the part as the layout does).
    pub fn node_of(&self, datacenter: u64, worker: u64) -> Result<u64, Error> {
        if self.datacenter_bits == 0 {
            return Err(Error::NoDatacenterField);
        }
        let (high, low) = self.parts.fields();
        check(high, datacenter, mask(self.datacenter_bits))?;
        check(low, worker, mask(self.worker_bits() as u8))?;
        Ok(datacenter << self.worker_bits() | worker)
    }

    /// Splits a node id into its two parts, (high, low): Snowflake's (datacenter, worker),
    /// Discord's (worker, process).
    pub const fn split_node(&self, node: u64) -> (u64, u64) {
        (node >> self.cuts.worker_bits, node & self.cuts.max_worker)
    }

    /// Splits an ID into its fields; an ID with bits above the layout's width is an error.
    #[inline]
    pub fn decompose(&self, id: u64) -> Result<Parts, Error> {
        if id > self.max_id() {
            return Err(Error::IdOutOfLayout {
                id,
                bits: self.bits(),
                index: None,
            });
        }
        Ok(Parts {
            ticks: id >> self.time_shift(),
            sequence: (id >> self.sequence_shift()) & self.max_sequence(),
            node: (id >> self.node_shift()) & self.max_node(),
        })
    }
}
