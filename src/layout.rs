//! The bit layout of an ID: field widths, field order, tick unit and epoch.

use core::fmt;
use core::str::FromStr;
use core::time::Duration;
#[cfg(feature = "std")]
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Field, ParseErrorKind};
use crate::rfc3339;

const NS_PER_MS: u64 = 1_000_000;

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

fn mask(bits: u8) -> u64 {
    (1u64 << bits) - 1
}

fn check(field: Field, value: u64, max: u64) -> Result<u64, Error> {
    if value > max {
        Err(Error::OutOfRange { field, value, max })
    } else {
        Ok(value)
    }
}

#[cfg(feature = "std")]
/// Sonyflake v2's settings, with Go's meaning: zero values pick the defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SonyflakeSettings {
    /// Sequence width; 0 means 8, otherwise 1..=30.
    pub bits_sequence: u32,
    /// Machine-id width; 0 means 16, otherwise 1..=30.
    pub bits_machine_id: u32,
    /// Tick unit; zero means 10 ms, otherwise at least 1 ms (need not be whole ms).
    pub time_unit: Duration,
    /// Epoch; `None` means 2025-01-01T00:00:00Z. Must not lie in the future.
    pub start_time: Option<SystemTime>,
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
/// [`Error::ClockRangeEnd`].
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

    #[cfg(feature = "std")]
    /// A Sonyflake v2 layout under Sonyflake's own rules (0 means default; 1..=30 bits for
    /// sequence and machine; time bits `63 - sequence - machine` at least 32; unit >= 1 ms;
    /// start time not ahead of now).
    pub fn sonyflake_v2(settings: SonyflakeSettings) -> Result<Layout, Error> {
        let seq = match settings.bits_sequence {
            0 => 8,
            b @ 1..=30 => b,
            bits => return Err(Error::InvalidSequenceBits { bits }),
        };
        let machine = match settings.bits_machine_id {
            0 => 16,
            b @ 1..=30 => b,
            bits => return Err(Error::InvalidNodeBits { bits }),
        };
        let time = 63 - seq - machine;
        if time < 32 {
            return Err(Error::TimeBitsTooFew {
                bits: time,
                min: 32,
            });
        }
        let unit = match settings.time_unit {
            Duration::ZERO => Duration::from_millis(10),
            u => u,
        };
        let epoch = match settings.start_time {
            None => UNIX_EPOCH + Duration::from_millis(SONYFLAKE_V2_EPOCH_MS),
            Some(t) => t,
        };
        Layout::builder()
            .time_bits(time)
            .sequence_bits(seq)
            .node_bits(machine)
            .order(Order::TimeSequenceNode)
            .unit(unit)
            .epoch(epoch)
            .build()
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
    /// The epoch in Unix nanoseconds (never before 1970, never after the clock's range).
    pub const fn epoch_unix_ns(&self) -> u64 {
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
    pub fn max_ticks(&self) -> u64 {
        mask(self.time_bits)
    }
    /// Largest sequence number.
    pub fn max_sequence(&self) -> u64 {
        mask(self.sequence_bits)
    }
    /// Largest node id.
    pub fn max_node(&self) -> u64 {
        mask(self.node_bits)
    }
    /// Largest ID of this layout.
    pub fn max_id(&self) -> u64 {
        mask(self.bits() as u8)
    }

    /// How long the layout lasts: `2^time_bits` ticks.
    pub fn lifetime(&self) -> Duration {
        let ns = (1u128 << self.time_bits) * u128::from(self.unit_ns);
        // Cannot truncate: `build` bounds the end instant to 63 bits of milliseconds.
        Duration::new((ns / 1_000_000_000) as u64, (ns % 1_000_000_000) as u32)
    }
    /// The lifetime in Julian years of 365.25 days.
    pub fn lifetime_years(&self) -> f64 {
        self.lifetime().as_secs_f64() / (365.25 * 86_400.0)
    }
    /// The first instant, in Unix nanoseconds, that no longer fits the time field. It may
    /// lie past [`CLOCK_END_UNIX_NS`], where IDs still decode and compose but no clock
    /// reaches.
    pub fn end_unix_ns(&self) -> i128 {
        // At most 63 bits of milliseconds (`build` checks), so it fits with room to spare.
        (i128::from(self.epoch_tick()) + (1i128 << self.time_bits)) * i128::from(self.unit_ns)
    }
    /// The first instant, in Unix milliseconds (rounded up), that no longer fits.
    pub fn end_unix_ms(&self) -> u64 {
        let ms = i128::from(NS_PER_MS);
        ((self.end_unix_ns() + ms - 1) / ms) as u64
    }
    /// Whether a generator can mint until the end of the layout: false when the layout
    /// outlasts what a clock of `u64` nanoseconds can name ([`CLOCK_END_UNIX_NS`], in the
    /// year 2554); such a generator stops there with [`Error::ClockRangeEnd`].
    pub fn ends_within_clock_range(&self) -> bool {
        self.end_unix_ns() <= i128::from(CLOCK_END_UNIX_NS) + 1
    }
    /// How many IDs one node can mint per second at most.
    pub fn ids_per_second_per_node(&self) -> f64 {
        (1u64 << self.sequence_bits) as f64 * 1e9 / self.unit_ns as f64
    }
    /// How many distinct node ids the layout has room for.
    pub fn max_nodes(&self) -> u64 {
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
    pub fn compose_unchecked(&self, ticks: u64, sequence: u64, node: u64) -> u64 {
        ticks << self.time_shift() | sequence << self.sequence_shift() | node << self.node_shift()
    }

    /// `node` if it fits the node field, else [`Error::OutOfRange`].
    pub fn check_node(&self, node: u64) -> Result<u64, Error> {
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
    pub fn split_node(&self, node: u64) -> (u64, u64) {
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

/// Builds a custom [`Layout`]; every rule broken gets its own [`Error`].
#[derive(Debug, Clone)]
pub struct LayoutBuilder {
    time_bits: u32,
    sequence_bits: u32,
    node_bits: u32,
    datacenter_bits: u32,
    order: Order,
    unit: Duration,
    epoch: Result<u64, Error>,
    max_bits: u32,
}

impl Default for LayoutBuilder {
    fn default() -> Self {
        LayoutBuilder {
            time_bits: 41,
            sequence_bits: 12,
            node_bits: 10,
            datacenter_bits: 0,
            order: Order::TimeNodeSequence,
            unit: Duration::from_millis(1),
            epoch: Ok(0),
            max_bits: 63,
        }
    }
}

impl LayoutBuilder {
    /// Caps the ID width: `build` fails with [`Error::WiderThanCap`] when the fields add
    /// up to more. `max_bits(JAVASCRIPT_SAFE_BITS)` keeps every ID exact in JavaScript.
    ///
    /// ```
    /// use flakeid::{Error, JAVASCRIPT_SAFE_BITS, Layout};
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
        if bits > 63 {
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
        // compute it without overflow: (epoch tick + 2^time_bits) x unit.
        let end_ns = (u128::from(epoch_unix_ns / unit_ns) + (1u128 << self.time_bits))
            .checked_mul(u128::from(unit_ns));
        if end_ns.is_none_or(|ns| ns / u128::from(NS_PER_MS) > i64::MAX as u128) {
            return Err(Error::LayoutEndsTooLate);
        }
        let layout = Layout {
            time_bits: self.time_bits as u8,
            sequence_bits: self.sequence_bits as u8,
            node_bits: self.node_bits as u8,
            datacenter_bits: self.datacenter_bits as u8,
            order: self.order,
            unit_ns,
            epoch_unix_ns,
        };
        Ok(layout)
    }
}

/// A signed epoch as the builder keeps it: before 1970 and past the clock's range are
/// errors naming the real limit.
fn epoch_from_ns(ns: i128) -> Result<u64, Error> {
    if ns < 0 {
        return Err(Error::EpochBeforeUnix {
            by: duration_of_ns(-ns),
        });
    }
    u64::try_from(ns).map_err(|_| Error::EpochInFuture {
        epoch_unix_ms: u64::try_from(ns / i128::from(NS_PER_MS)).unwrap_or(u64::MAX),
    })
}

// ---- The layout string: `time=41,seq=12,node=10,dc=5,order=tns,unit=1ms,epoch=...` ----

fn write_unit(f: &mut fmt::Formatter<'_>, ns: u64) -> fmt::Result {
    if ns.is_multiple_of(1_000_000_000) {
        write!(f, "{}s", ns / 1_000_000_000)
    } else if ns.is_multiple_of(NS_PER_MS) {
        write!(f, "{}ms", ns / NS_PER_MS)
    } else if ns.is_multiple_of(1_000) {
        write!(f, "{}us", ns / 1_000)
    } else {
        write!(f, "{ns}ns")
    }
}

/// Reads `10ms`, `1500us`, `1s`...; whether the unit is allowed is the builder's
/// business, so a unit too long or too short gets the same error from both.
fn parse_unit(s: &str) -> Result<Duration, Error> {
    let bad = Error::Parse(ParseErrorKind::Layout(
        "unit must be a whole number with ns, us, ms or s (e.g. 10ms)",
    ));
    let split = s.find(|c: char| !c.is_ascii_digit()).ok_or(bad.clone())?;
    let (num, suffix) = s.split_at(split);
    let n: u64 = num.parse().map_err(|_| bad.clone())?;
    Ok(match suffix {
        "ns" => Duration::from_nanos(n),
        "us" | "µs" => Duration::from_micros(n),
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        _ => return Err(bad),
    })
}

impl fmt::Display for Layout {
    /// The canonical layout string, which [`Layout::from_str`] reads back to an equal layout.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "time={},seq={},node={}",
            self.time_bits, self.sequence_bits, self.node_bits
        )?;
        if self.datacenter_bits > 0 {
            write!(f, ",dc={}", self.datacenter_bits)?;
        }
        let order = match self.order {
            Order::TimeNodeSequence => "tns",
            Order::TimeSequenceNode => "tsn",
        };
        write!(f, ",order={order},unit=")?;
        write_unit(f, self.unit_ns)?;
        f.write_str(",epoch=")?;
        rfc3339::write(f, i128::from(self.epoch_unix_ns))
    }
}

impl FromStr for Layout {
    type Err = Error;

    /// Reads a preset name (`snowflake`, `sonyflake`, `sonyflake-v2`, `sonyflake-v1`) or a
    /// custom layout `key=value,...` with keys `time`, `seq`, `node` (bits; `time` defaults
    /// to what is left of 63), `dc` (datacenter bits inside `node`, default 0), `order`
    /// (`tns` = time|node|sequence, the default, or `tsn` = time|sequence|node), `unit`
    /// (`1ms` default; `ns`, `us`, `ms`, `s`) and `epoch` (RFC 3339 or Unix milliseconds;
    /// default 1970-01-01T00:00:00Z).
    fn from_str(s: &str) -> Result<Layout, Error> {
        let s = s.trim();
        let named = |names: &[&str]| names.iter().any(|n| s.eq_ignore_ascii_case(n));
        if named(&["snowflake", "twitter"]) {
            return Ok(Layout::snowflake());
        } else if named(&["sonyflake", "sonyflake-v2"]) {
            return Ok(Layout::sonyflake());
        } else if named(&["sonyflake-v1"]) {
            return Ok(Layout::sonyflake_v1());
        } else if named(&["js-safe", "javascript-safe"]) {
            return Ok(Layout::javascript_safe());
        }
        let layout_err = |what| Error::Parse(ParseErrorKind::Layout(what));
        if s.is_empty() {
            return Err(Error::Parse(ParseErrorKind::Empty));
        }
        if !s.contains('=') {
            return Err(Error::Parse(ParseErrorKind::UnknownPreset));
        }
        let bits = |v: &str| {
            v.parse::<u32>()
                .map_err(|_| layout_err("bit widths are whole numbers"))
        };
        let mut b = Layout::builder().datacenter_bits(0);
        let (mut time, mut seq, mut node) = (None, None, None);
        let mut seen = [false; 7];
        for part in s.split(',') {
            let (key, value) = part
                .split_once('=')
                .ok_or(layout_err("expected key=value pairs or a preset name"))?;
            let (key, value) = (key.trim(), value.trim());
            let slot = match key {
                "time" => 0,
                "seq" | "sequence" => 1,
                "node" | "machine" => 2,
                "dc" | "datacenter" => 3,
                "order" => 4,
                "unit" => 5,
                "epoch" => 6,
                _ => {
                    return Err(layout_err(
                        "unknown key (time, seq, node, dc, order, unit, epoch)",
                    ));
                }
            };
            if core::mem::replace(&mut seen[slot], true) {
                return Err(layout_err("a key appears twice"));
            }
            match slot {
                0 => time = Some(bits(value)?),
                1 => seq = Some(bits(value)?),
                2 => node = Some(bits(value)?),
                3 => b = b.datacenter_bits(bits(value)?),
                4 => {
                    b = b.order(match value {
                        "tns" | "time-node-sequence" | "snowflake" => Order::TimeNodeSequence,
                        "tsn" | "time-sequence-node" | "sonyflake" => Order::TimeSequenceNode,
                        _ => return Err(layout_err("order is tns or tsn")),
                    })
                }
                5 => b.unit = parse_unit(value)?,
                _ => {
                    let ns = if !value.is_empty() && value.bytes().all(|c| c.is_ascii_digit()) {
                        // Unix ms; more digits than any epoch has are surely in the future.
                        value
                            .parse::<u64>()
                            .map_or(i128::MAX, |ms| i128::from(ms) * i128::from(NS_PER_MS))
                    } else {
                        rfc3339::parse(value)?
                    };
                    b.epoch = epoch_from_ns(ns);
                }
            }
        }
        let seq = seq.ok_or(layout_err("seq is required"))?;
        let node = node.ok_or(layout_err("node is required"))?;
        let time = match time {
            Some(t) => t,
            None => 63u32.saturating_sub(seq.saturating_add(node)),
        };
        let b = b.time_bits(time).sequence_bits(seq).node_bits(node);
        // Without std there is no clock to call an epoch "in the future" against.
        #[cfg(feature = "std")]
        return b.build();
        #[cfg(not(feature = "std"))]
        return b.build_at(u64::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE_MS: u64 = 1_793_448_000_000; // 2026-10-31T12:00:00Z

    #[test]
    fn snowflake_worked_example() {
        let l = Layout::snowflake();
        let ticks = l.ticks_at(i128::from(EXAMPLE_MS * NS_PER_MS)).unwrap();
        assert_eq!(ticks, 504_613_025_343);
        let node = l.node_of(3, 17).unwrap();
        let id = l.compose(ticks, 42, node).unwrap();
        assert_eq!(id, 2_116_500_430_648_709_162);
        let p = l.decompose(id).unwrap();
        assert_eq!(
            p,
            Parts {
                ticks,
                sequence: 42,
                node
            }
        );
        assert_eq!(l.split_node(p.node), (3, 17));
        assert_eq!(l.unix_ms_of(p.ticks), Ok(EXAMPLE_MS));
    }

    #[test]
    fn sonyflake_worked_example() {
        let l = Layout::sonyflake();
        let ticks = l.ticks_at(i128::from(EXAMPLE_MS * NS_PER_MS)).unwrap();
        let id = l.compose(ticks, 7, 2565).unwrap();
        assert_eq!(id, 96_902_515_261_901_317);
        let p = l.decompose(id).unwrap();
        assert_eq!((p.ticks, p.sequence, p.node), (ticks, 7, 2565));
        assert_eq!(l.unix_ms_of(p.ticks), Ok(EXAMPLE_MS));
    }

    #[test]
    fn preset_facts() {
        let s = Layout::snowflake();
        assert_eq!(format!("{:.2}", s.lifetime_years()), "69.68");
        assert_eq!(s.end_unix_ms(), 3_487_858_230_209);
        assert_eq!(s.ids_per_second_per_node(), 4_096_000.0);
        assert_eq!(s.max_nodes(), 1024);
        let y = Layout::sonyflake();
        assert_eq!(format!("{:.2}", y.lifetime_years()), "174.21");
        assert_eq!(
            rfc3339::Timestamp(y.end_unix_ns()).to_string(),
            "2199-03-19T03:28:58.880Z"
        );
        assert_eq!(y.ids_per_second_per_node(), 25_600.0);
        assert_eq!(y.max_nodes(), 65_536);
        assert_eq!(
            Layout::sonyflake_v1().epoch_unix_ms(),
            SONYFLAKE_V1_EPOCH_MS
        );
    }

    #[test]
    fn sonyflake_v2_rules() {
        let s = |seq, mach, unit_ms| SonyflakeSettings {
            bits_sequence: seq,
            bits_machine_id: mach,
            time_unit: Duration::from_millis(unit_ms),
            start_time: None,
        };
        assert_eq!(
            Layout::sonyflake_v2(s(0, 0, 0)).unwrap(),
            Layout::sonyflake()
        );
        assert_eq!(
            Layout::sonyflake_v2(s(31, 0, 0)),
            Err(Error::InvalidSequenceBits { bits: 31 })
        );
        assert_eq!(
            Layout::sonyflake_v2(s(8, 31, 0)),
            Err(Error::InvalidNodeBits { bits: 31 })
        );
        assert_eq!(
            Layout::sonyflake_v2(s(16, 16, 0)),
            Err(Error::TimeBitsTooFew { bits: 31, min: 32 })
        );
        assert!(Layout::sonyflake_v2(s(15, 16, 0)).is_ok());
        let sub_ms = SonyflakeSettings {
            time_unit: Duration::from_micros(999),
            ..s(0, 0, 0)
        };
        assert_eq!(
            Layout::sonyflake_v2(sub_ms),
            Err(Error::InvalidTimeUnit {
                unit: Duration::from_micros(999)
            })
        );
        let future = SonyflakeSettings {
            start_time: Some(SystemTime::now() + Duration::from_secs(3600)),
            ..s(0, 0, 0)
        };
        assert!(matches!(
            Layout::sonyflake_v2(future),
            Err(Error::EpochInFuture { .. })
        ));
        let odd_unit = SonyflakeSettings {
            time_unit: Duration::from_micros(1500),
            ..s(0, 0, 0)
        };
        let l = Layout::sonyflake_v2(odd_unit).unwrap();
        assert_eq!(l.unit_ns(), 1_500_000);
    }

    #[test]
    fn builder_rules() {
        let b = Layout::builder;
        assert_eq!(
            b().time_bits(42).sequence_bits(12).node_bits(10).build(),
            Err(Error::LayoutTooWide { bits: 64 })
        );
        assert_eq!(
            b().time_bits(u32::MAX).build(),
            Err(Error::LayoutTooWide { bits: u32::MAX })
        );
        assert_eq!(
            b().time_bits(0).build(),
            Err(Error::TimeBitsTooFew { bits: 0, min: 1 })
        );
        assert_eq!(
            b().datacenter_bits(11).build(),
            Err(Error::InvalidDatacenterBits {
                datacenter_bits: 11,
                node_bits: 10
            })
        );
        assert_eq!(
            b().unit(Duration::from_nanos(999_999)).build(),
            Err(Error::InvalidTimeUnit {
                unit: Duration::from_nanos(999_999)
            })
        );
        assert_eq!(
            b().epoch_unix_ms(2_000).build_at(1_000 * NS_PER_MS),
            Err(Error::EpochInFuture {
                epoch_unix_ms: 2_000
            })
        );
        assert_eq!(
            b().time_bits(63).sequence_bits(0).node_bits(0).build(),
            Err(Error::LayoutEndsTooLate)
        );
        // A JavaScript-safe 53-bit layout.
        let js = b()
            .time_bits(41)
            .sequence_bits(8)
            .node_bits(4)
            .build()
            .unwrap();
        assert_eq!(js.max_id(), (1 << 53) - 1);
    }

    #[test]
    fn range_checks_never_mask() {
        let l = Layout::snowflake();
        assert_eq!(
            l.compose(1 << 41, 0, 0),
            Err(Error::OutOfRange {
                field: Field::Ticks,
                value: 1 << 41,
                max: (1 << 41) - 1
            })
        );
        assert!(matches!(
            l.compose(0, 4096, 0),
            Err(Error::OutOfRange {
                field: Field::Sequence,
                ..
            })
        ));
        assert!(matches!(
            l.compose(0, 0, 1024),
            Err(Error::OutOfRange {
                field: Field::Node,
                ..
            })
        ));
        assert!(matches!(
            l.node_of(32, 0),
            Err(Error::OutOfRange {
                field: Field::Datacenter,
                ..
            })
        ));
        assert!(matches!(
            l.node_of(0, 32),
            Err(Error::OutOfRange {
                field: Field::Worker,
                ..
            })
        ));
        assert_eq!(
            Layout::sonyflake().node_of(0, 0),
            Err(Error::NoDatacenterField)
        );
        assert_eq!(
            l.decompose(1 << 63),
            Err(Error::IdOutOfLayout {
                id: 1 << 63,
                bits: 63
            })
        );
    }

    #[test]
    fn time_edges() {
        let l = Layout::snowflake();
        let ns = |ms: u64| i128::from(ms * NS_PER_MS);
        assert_eq!(l.ticks_at(ns(TWEPOCH_MS)), Ok(0));
        assert_eq!(
            l.ticks_at(ns(TWEPOCH_MS) - 1),
            Err(Error::BeforeEpoch {
                by: Duration::from_nanos(1),
                epoch_unix_ns: TWEPOCH_MS * NS_PER_MS,
            })
        );
        let last = l.end_unix_ms() - 1;
        assert_eq!(l.ticks_at(ns(last)), Ok(l.max_ticks()));
        assert_eq!(
            l.ticks_at(ns(l.end_unix_ms())),
            Err(Error::PastLifetime {
                end_unix_ms: 3_487_858_230_209
            })
        );
        // Sonyflake's rule: unit boundaries are absolute, not relative to the epoch.
        let odd = Layout::builder()
            .unit(Duration::from_millis(10))
            .epoch_unix_ms(1_005)
            .build()
            .unwrap();
        assert_eq!(odd.epoch_tick(), 100);
        assert_eq!(odd.ticks_at(1_010 * 1_000_000), Ok(1));
        assert_eq!(odd.unix_ms_of(1), Ok(1_010));
    }

    /// A 41-bit layout with a 1 s unit lasts to the year 71654, far past 2554 where `u64`
    /// nanoseconds end: its times compose and decode there, and every time before 1970
    /// or the epoch names the real distance.
    #[test]
    fn one_time_domain_past_2554_and_before_1970() {
        let l: Layout = "time=41,seq=12,node=10,unit=1s,epoch=2025-01-01T00:00:00Z"
            .parse()
            .unwrap();
        assert!(!l.ends_within_clock_range());
        assert_eq!(
            rfc3339::Timestamp(l.end_unix_ns()).to_string(),
            "+71709-04-11T01:12:32.000Z"
        );
        let far = rfc3339::parse("+71654-01-01T00:00:00Z").unwrap();
        let ticks = l.ticks_at(far).unwrap();
        assert_eq!(l.unix_ns_of(ticks), Ok(far));
        #[cfg(feature = "std")]
        {
            let time = UNIX_EPOCH + Duration::from_nanos(u64::MAX) + Duration::from_secs(3600);
            let t = l.ticks_at_time(time).unwrap();
            let start = l.time_of(t).unwrap();
            assert!(start <= time && time.duration_since(start).unwrap() < l.unit());
        }
        // Before 1970: the distance is exact, not clamped to u64 nanoseconds.
        let year0 = rfc3339::parse("0000-01-01T00:00:00Z").unwrap();
        match Layout::snowflake().ticks_at(year0) {
            Err(Error::BeforeEpoch { by, epoch_unix_ns }) => {
                assert_eq!(epoch_unix_ns, TWEPOCH_MS * NS_PER_MS);
                assert_eq!(
                    i128::from(by.as_secs()) * 1_000_000_000 + i128::from(by.subsec_nanos()),
                    i128::from(TWEPOCH_MS * NS_PER_MS) - year0
                );
            }
            other => panic!("{other:?}"),
        }
        // An epoch after 2554 is in the future, not "before 1970"; before 1970 says so.
        assert!(matches!(
            "seq=1,node=1,epoch=+10000-01-01T00:00:00Z".parse::<Layout>(),
            Err(Error::EpochInFuture { .. })
        ));
        assert!(matches!(
            "seq=1,node=1,epoch=99999999999999999999999".parse::<Layout>(),
            Err(Error::EpochInFuture { .. })
        ));
        assert_eq!(
            "seq=1,node=1,epoch=1969-12-31T23:59:59Z".parse::<Layout>(),
            Err(Error::EpochBeforeUnix {
                by: Duration::from_secs(1)
            })
        );
        #[cfg(feature = "std")]
        assert_eq!(
            Layout::builder()
                .epoch(UNIX_EPOCH - Duration::from_secs(60))
                .build(),
            Err(Error::EpochBeforeUnix {
                by: Duration::from_secs(60)
            })
        );
    }

    /// Every tick function on every tick value: an answer or a typed error, no panic (the
    /// test profile has overflow checks on), including the widest unit a layout takes.
    #[test]
    fn tick_functions_on_extreme_values() {
        let widest_unit = Layout::builder()
            .time_bits(1)
            .sequence_bits(0)
            .node_bits(0)
            .unit(Duration::from_nanos(u64::MAX))
            .build()
            .unwrap();
        for l in [Layout::snowflake(), Layout::sonyflake(), widest_unit] {
            for ticks in [0, 1, l.max_ticks(), l.max_ticks() + 1, u64::MAX] {
                let fits = ticks <= l.max_ticks();
                assert_eq!(l.unix_ns_of(ticks).is_ok(), fits, "{l} {ticks}");
                assert_eq!(l.unix_ms_of(ticks).is_ok(), fits, "{l} {ticks}");
                #[cfg(feature = "std")]
                assert_eq!(l.time_of(ticks).is_ok(), fits, "{l} {ticks}");
                if let Ok(ns) = l.unix_ns_of(ticks) {
                    assert_eq!(l.ticks_at(ns), Ok(ticks));
                    assert!(ns < l.end_unix_ns());
                }
                let _ = l.unix_ms_of_unchecked(ticks);
            }
            for ns in [i128::MIN, -1, 0, i128::from(u64::MAX), i128::MAX] {
                let _ = l.ticks_at(ns);
            }
        }
        // The old answers: a wrapped time one ms before the epoch, or a panic.
        assert!(Layout::snowflake().unix_ms_of(u64::MAX).is_err());
    }

    /// One error for a unit too long, from the builder and from the string alike; units
    /// print back in the largest whole unit.
    #[test]
    fn units_too_long_are_refused_and_print_back_whole() {
        let too_long = Duration::from_nanos(u64::MAX) + Duration::from_nanos(1);
        assert_eq!(
            Layout::builder().unit(too_long).build(),
            Err(Error::InvalidTimeUnit { unit: too_long })
        );
        assert_eq!(
            Layout::builder().unit(Duration::MAX).build(),
            Err(Error::InvalidTimeUnit {
                unit: Duration::MAX
            })
        );
        assert_eq!(
            "seq=1,node=1,unit=18446744074s".parse::<Layout>(),
            Err(Error::InvalidTimeUnit {
                unit: Duration::from_secs(18_446_744_074)
            })
        );
        let l: Layout = "time=30,seq=1,node=1,unit=1s".parse().unwrap();
        assert!(l.to_string().contains(",unit=1s,"), "{l}");
        let l: Layout = "time=30,seq=1,node=1,unit=1500ms".parse().unwrap();
        assert!(l.to_string().contains(",unit=1500ms,"), "{l}");
        assert_eq!(l.to_string().parse::<Layout>(), Ok(l));
    }

    #[test]
    fn layout_strings_round_trip() {
        for l in [
            Layout::snowflake(),
            Layout::sonyflake(),
            Layout::sonyflake_v1(),
        ] {
            assert_eq!(l.to_string().parse::<Layout>().unwrap(), l);
        }
        assert_eq!("Snowflake".parse::<Layout>().unwrap(), Layout::snowflake());
        let custom: Layout = "seq=10,node=0,order=tsn,unit=1500us,epoch=1700000000000"
            .parse()
            .unwrap();
        assert_eq!(custom.time_bits(), 53);
        assert_eq!(custom.unit_ns(), 1_500_000);
        assert_eq!(custom.to_string().parse::<Layout>().unwrap(), custom);
        for bad in [
            "",
            "time=41",
            "seq=12,node=10,order=xyz",
            "seq=12,node=10,unit=10",
            "seq=12,node=10,bogus=1",
            "seq=12,seq=12,node=10",
            "seq=a,node=1",
            "sonyflake_v1",
        ] {
            assert!(
                matches!(bad.parse::<Layout>(), Err(Error::Parse(_))),
                "{bad}"
            );
        }
        assert_eq!(
            "time=50,seq=12,node=10".parse::<Layout>(),
            Err(Error::LayoutTooWide { bits: 72 })
        );
    }
}
