//! The bit layout of an ID: field widths, field order, tick unit and epoch, and its
//! arithmetic (compose, decompose, ticks and instants). Building a custom layout is
//! `builder`, Sonyflake's settings rules `sonyflake`, the layout string `text`.

mod builder;
#[cfg(feature = "std")]
mod sonyflake;
#[cfg(test)]
mod tests;
mod text;

pub use builder::LayoutBuilder;
#[cfg(feature = "std")]
pub use sonyflake::SonyflakeSettings;

use core::time::Duration;
#[cfg(feature = "std")]
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Field};

pub(crate) const NS_PER_MS: u64 = 1_000_000;

/// Which field sits above which, after the time field (always the most significant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Order {
    /// `time | node | sequence`: Twitter Snowflake's order.
    TimeNodeSequence,
    /// `time | sequence | node`: Sonyflake's order.
    TimeSequenceNode,
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

/// A bit layout: how an ID's 63 usable bits split into time, sequence and node, the length
/// of one tick and the epoch ticks count from.
///
/// The presets are bit-exact with the reference implementations:
///
/// | preset | time | node | sequence | unit | epoch | lifetime | IDs/s per node | nodes |
/// |---|---|---|---|---|---|---|---|---|
/// | [`Layout::snowflake`] | 41 | 10 (5 dc + 5 worker) | 12 | 1 ms | 2010-11-04T01:42:54.657Z | 69.68 y | 4,096,000 | 1,024 |
/// | [`Layout::sonyflake`] | 39 | 16 | 8 | 10 ms | 2025-01-01T00:00:00Z | 174.21 y | 25,600 | 65,536 |
/// | [`Layout::sonyflake_v1`] | 39 | 16 | 8 | 10 ms | 2014-09-01T00:00:00Z | 174.21 y | 25,600 | 65,536 |
///
/// Elapsed ticks are `floor(unix_ns / unit) - floor(epoch_ns / unit)`: tick boundaries are
/// absolute, as in Sonyflake; for a 1 ms unit and a whole-ms epoch this is Snowflake's
/// `now_ms - epoch_ms`.
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
    order: Order,
    unit_ns: u64,
    epoch_unix_ns: u64,
}

/// Twitter's epoch, 2010-11-04T01:42:54.657Z, in Unix milliseconds.
pub const TWEPOCH_MS: u64 = 1_288_834_974_657;
/// Sonyflake v2's default start time, 2025-01-01T00:00:00Z, in Unix milliseconds.
pub const SONYFLAKE_V2_EPOCH_MS: u64 = 1_735_689_600_000;
/// Sonyflake v1's default start time, 2014-09-01T00:00:00Z, in Unix milliseconds.
pub const SONYFLAKE_V1_EPOCH_MS: u64 = 1_409_529_600_000;

/// The widest ID a JavaScript number holds exactly: 53 bits (`Number.MAX_SAFE_INTEGER`).
pub const JAVASCRIPT_SAFE_BITS: u32 = 53;

pub(crate) const fn mask(bits: u8) -> u64 {
    (1u64 << bits) - 1
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

/// The last instant a clock of `u64` Unix nanoseconds can name:
/// 2554-07-21T23:34:33.709551615Z. Layouts may last longer (their IDs decode and compose
/// past it), but no [`Clock`](crate::Clock) reaches further, so generators stop there with
/// [`MintError::ClockRangeEnd`](crate::MintError::ClockRangeEnd).
pub const CLOCK_END_UNIX_NS: u64 = u64::MAX;

impl Layout {
    /// Twitter Snowflake: `0 | time 41 | datacenter 5 | worker 5 | sequence 12`, 1 ms, twepoch.
    pub const fn snowflake() -> Layout {
        Layout {
            time_bits: 41,
            sequence_bits: 12,
            node_bits: 10,
            datacenter_bits: 5,
            order: Order::TimeNodeSequence,
            unit_ns: NS_PER_MS,
            epoch_unix_ns: TWEPOCH_MS * NS_PER_MS,
        }
    }

    /// Sonyflake v2 defaults: `0 | time 39 | sequence 8 | machine 16`, 10 ms, 2025-01-01Z.
    pub const fn sonyflake() -> Layout {
        Layout {
            time_bits: 39,
            sequence_bits: 8,
            node_bits: 16,
            datacenter_bits: 0,
            order: Order::TimeSequenceNode,
            unit_ns: 10 * NS_PER_MS,
            epoch_unix_ns: SONYFLAKE_V2_EPOCH_MS * NS_PER_MS,
        }
    }

    /// IDs JavaScript holds exactly (at most 2^53 - 1, `Number.MAX_SAFE_INTEGER`), for IDs
    /// that travel as JSON numbers: `0 | time 41 | node 5 | sequence 7`, 1 ms, epoch
    /// 2025-01-01T00:00:00Z. 69.7 years (to 2094), 128,000 IDs/s per node, 32 nodes.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// let js = Layout::javascript_safe();
    /// assert_eq!(js.bits(), 53);
    /// assert!(js.max_id() <= (1 << 53) - 1);
    /// assert!(js.is_javascript_safe() && !Layout::snowflake().is_javascript_safe());
    /// ```
    pub const fn javascript_safe() -> Layout {
        Layout {
            time_bits: 41,
            sequence_bits: 7,
            node_bits: 5,
            datacenter_bits: 0,
            order: Order::TimeNodeSequence,
            unit_ns: NS_PER_MS,
            epoch_unix_ns: SONYFLAKE_V2_EPOCH_MS * NS_PER_MS,
        }
    }

    /// Whether every ID of this layout is at most 2^53 - 1, so a JavaScript number (an
    /// IEEE double) holds it exactly.
    pub const fn is_javascript_safe(&self) -> bool {
        self.time_bits as u32 + self.sequence_bits as u32 + self.node_bits as u32
            <= JAVASCRIPT_SAFE_BITS
    }

    /// Sonyflake v1: the v2 bits with v1's start time, 2014-09-01T00:00:00Z.
    pub const fn sonyflake_v1() -> Layout {
        Layout {
            epoch_unix_ns: SONYFLAKE_V1_EPOCH_MS * NS_PER_MS,
            ..Layout::sonyflake()
        }
    }

    /// A builder for custom layouts (defaults: Snowflake's order, 1 ms, Unix epoch).
    pub fn builder() -> LayoutBuilder {
        LayoutBuilder::default()
    }

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
    /// Width of Snowflake's worker part, the low bits of the node field.
    pub const fn worker_bits(&self) -> u32 {
        (self.node_bits - self.datacenter_bits) as u32
    }
    /// Total width of an ID in bits (at most 63).
    pub const fn bits(&self) -> u32 {
        (self.time_bits + self.sequence_bits + self.node_bits) as u32
    }
    /// The field order.
    pub const fn order(&self) -> Order {
        self.order
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
    /// The absolute tick the epoch falls in: `floor(epoch_ns / unit)`.
    pub const fn epoch_tick(&self) -> u64 {
        self.epoch_unix_ns / self.unit_ns
    }

    /// Shift of the time field.
    pub const fn time_shift(&self) -> u32 {
        (self.sequence_bits + self.node_bits) as u32
    }
    /// Shift of the sequence field.
    pub const fn sequence_shift(&self) -> u32 {
        match self.order {
            Order::TimeNodeSequence => 0,
            Order::TimeSequenceNode => self.node_bits as u32,
        }
    }
    /// Shift of the node field.
    pub const fn node_shift(&self) -> u32 {
        match self.order {
            Order::TimeNodeSequence => self.sequence_bits as u32,
            Order::TimeSequenceNode => 0,
        }
    }
    /// Largest tick count.
    pub const fn max_ticks(&self) -> u64 {
        mask(self.time_bits)
    }
    /// Largest sequence number.
    pub const fn max_sequence(&self) -> u64 {
        mask(self.sequence_bits)
    }
    /// Largest node id.
    pub const fn max_node(&self) -> u64 {
        mask(self.node_bits)
    }
    /// Largest ID of this layout.
    pub const fn max_id(&self) -> u64 {
        mask(self.bits() as u8)
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
    pub const fn compose_unchecked(&self, ticks: u64, sequence: u64, node: u64) -> u64 {
        ticks << self.time_shift() | sequence << self.sequence_shift() | node << self.node_shift()
    }

    /// `node` if it fits the node field, else [`Error::OutOfRange`].
    pub const fn check_node(&self, node: u64) -> Result<u64, Error> {
        check(Field::Node, node, self.max_node())
    }

    /// The node id of a Snowflake (datacenter, worker) pair, each range-checked.
    pub fn node_of(&self, datacenter: u64, worker: u64) -> Result<u64, Error> {
        if self.datacenter_bits == 0 {
            return Err(Error::NoDatacenterField);
        }
        check(Field::Datacenter, datacenter, mask(self.datacenter_bits))?;
        check(Field::Worker, worker, mask(self.worker_bits() as u8))?;
        Ok(datacenter << self.worker_bits() | worker)
    }

    /// Splits a node id into Snowflake's (datacenter, worker).
    pub const fn split_node(&self, node: u64) -> (u64, u64) {
        let worker_bits = self.worker_bits();
        (node >> worker_bits, node & mask(worker_bits as u8))
    }

    /// Splits an ID into its fields; an ID with bits above the layout's width is an error.
    #[inline]
    pub fn decompose(&self, id: u64) -> Result<Parts, Error> {
        if id > self.max_id() {
            return Err(Error::IdOutOfLayout {
                id,
                bits: self.bits(),
            });
        }
        Ok(Parts {
            ticks: id >> self.time_shift(),
            sequence: (id >> self.sequence_shift()) & self.max_sequence(),
            node: (id >> self.node_shift()) & self.max_node(),
        })
    }

    /// The tick count of an instant given in Unix nanoseconds (any `i128`: before 1970 is
    /// [`Error::BeforeEpoch`], past the layout's end [`Error::PastLifetime`], even past
    /// the year 2554 that clocks stop at, so every decoded time composes back).
    pub fn ticks_at(&self, unix_ns: i128) -> Result<u64, Error> {
        let epoch_ns = i128::from(self.epoch_unix_ns);
        let tick = unix_ns.div_euclid(i128::from(self.unit_ns));
        let ticks = tick - i128::from(self.epoch_tick());
        if ticks < 0 {
            return Err(Error::BeforeEpoch {
                by: duration_of_ns(epoch_ns.saturating_sub(unix_ns)),
                epoch_unix_ns: self.epoch_unix_ns,
            });
        }
        if ticks > i128::from(self.max_ticks()) {
            return Err(Error::PastLifetime {
                end_unix_ms: self.end_unix_ms(),
            });
        }
        Ok(ticks as u64)
    }

    #[cfg(feature = "std")]
    /// The tick count of a [`SystemTime`] (see [`Layout::ticks_at`]).
    pub fn ticks_at_time(&self, time: SystemTime) -> Result<u64, Error> {
        self.ticks_at(system_time_ns(time))
    }

    /// `ticks` if it fits the time field, else [`Error::OutOfRange`].
    fn check_ticks(&self, ticks: u64) -> Result<u64, Error> {
        check(Field::Ticks, ticks, self.max_ticks())
    }

    /// Unix nanoseconds at the start of tick `ticks` (unit-aligned, like Sonyflake's
    /// `ToTime`): the one to use for exact arithmetic. A tick count wider than the time
    /// field is [`Error::OutOfRange`]; every other value has an exact answer.
    #[inline]
    pub fn unix_ns_of(&self, ticks: u64) -> Result<i128, Error> {
        self.check_ticks(ticks)?;
        Ok((i128::from(self.epoch_tick()) + i128::from(ticks)) * i128::from(self.unit_ns))
    }

    /// Unix milliseconds (rounded down) at the start of tick `ticks`: what JSON and most
    /// databases store. A tick count wider than the time field is [`Error::OutOfRange`];
    /// for every other value the answer fits (`build` bounds a layout's end to 63 bits of
    /// milliseconds).
    #[inline]
    pub fn unix_ms_of(&self, ticks: u64) -> Result<u64, Error> {
        Ok(self.unix_ns_of(ticks)?.div_euclid(i128::from(NS_PER_MS)) as u64)
    }

    /// [`Layout::unix_ms_of`] for the batch decoder, which flags rows wider than the layout
    /// itself: any `ticks`, exact for those that fit, meaningless (but no panic) beyond.
    #[inline]
    pub(crate) fn unix_ms_of_unchecked(&self, ticks: u64) -> u64 {
        let ns = (u128::from(self.epoch_tick()) + u128::from(ticks))
            .saturating_mul(u128::from(self.unit_ns));
        (ns / u128::from(NS_PER_MS)) as u64
    }

    #[cfg(feature = "std")]
    /// The start of tick `ticks` as a [`SystemTime`], for std's time APIs. A tick count
    /// wider than the time field is [`Error::OutOfRange`], and so is a time this
    /// platform's `SystemTime` cannot hold.
    pub fn time_of(&self, ticks: u64) -> Result<SystemTime, Error> {
        let ns = self.unix_ns_of(ticks)?;
        UNIX_EPOCH
            .checked_add(duration_of_ns(ns))
            .ok_or(Error::OutOfRange {
                field: Field::Ticks,
                value: ticks,
                max: self.max_ticks(),
            })
    }
}
