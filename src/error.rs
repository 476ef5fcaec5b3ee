//! The crate's one error type.

use core::fmt;
use core::time::Duration;

/// A field of an ID, named in range errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// The time part, in ticks since the epoch.
    Ticks,
    /// The per-tick sequence number.
    Sequence,
    /// The node id (the whole node field).
    Node,
    /// Snowflake's datacenter id (the high part of the node field).
    Datacenter,
    /// Snowflake's worker id (the low part of the node field).
    Worker,
}

impl Field {
    /// The field's name as used in messages and JSON keys.
    pub const fn name(self) -> &'static str {
        match self {
            Field::Ticks => "ticks",
            Field::Sequence => "sequence",
            Field::Node => "node",
            Field::Datacenter => "datacenter",
            Field::Worker => "worker",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What kind of text failed to parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The text was empty (after trimming nothing is left).
    Empty,
    /// A character that is not a digit of the encoding.
    InvalidDigit {
        /// Byte offset of the offending character.
        at: usize,
    },
    /// More characters than the encoding allows for 64 bits.
    TooLong,
    /// The number does not fit in 63 bits (IDs are never negative).
    Overflow,
    /// A malformed RFC 3339 timestamp.
    Timestamp,
    /// A malformed layout description; the message says which part.
    Layout(&'static str),
}

/// Everything that can go wrong in flakeid, each with its own variant and message.
///
/// No function of this crate panics on bad input; it returns one of these.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The fields of a layout add up to more than 63 bits.
    LayoutTooWide {
        /// The sum of the field widths.
        bits: u32,
    },
    /// The fields of a layout add up to more than the cap set with
    /// [`LayoutBuilder::max_bits`](crate::LayoutBuilder::max_bits) (53 for IDs that
    /// JavaScript's numbers hold exactly).
    WiderThanCap {
        /// The sum of the field widths.
        bits: u32,
        /// The cap.
        max: u32,
    },
    /// The time field is narrower than the rule allows (at least 1 bit; Sonyflake: 32).
    TimeBitsTooFew {
        /// The width asked for.
        bits: u32,
        /// The least width allowed.
        min: u32,
    },
    /// Sonyflake: the sequence width is not in 1..=30.
    InvalidSequenceBits {
        /// The width asked for.
        bits: u32,
    },
    /// Sonyflake: the machine-id width is not in 1..=30.
    InvalidNodeBits {
        /// The width asked for.
        bits: u32,
    },
    /// The datacenter part is wider than the node field.
    InvalidDatacenterBits {
        /// The datacenter width asked for.
        datacenter_bits: u32,
        /// The node width it must fit in.
        node_bits: u32,
    },
    /// The tick unit is shorter than 1 ms.
    InvalidTimeUnit {
        /// The unit asked for, in nanoseconds.
        unit_ns: u64,
    },
    /// The layout's epoch lies after the current time.
    EpochInFuture {
        /// The epoch, in Unix milliseconds.
        epoch_unix_ms: u64,
    },
    /// The layout would outlive what a 63-bit count of Unix milliseconds can name.
    LayoutEndsTooLate,
    /// A field value does not fit its field; it is never masked.
    OutOfRange {
        /// The field at fault.
        field: Field,
        /// The value given.
        value: u64,
        /// The largest value the field holds.
        max: u64,
    },
    /// A time before the layout's epoch (a clock before the epoch, or compose).
    BeforeEpoch {
        /// How far before the epoch.
        by: Duration,
    },
    /// A time at or after the first instant the layout cannot represent.
    PastLifetime {
        /// The first instant that no longer fits, in Unix milliseconds.
        end_unix_ms: u64,
    },
    /// An ID with bits set above the layout's width (or the sign bit).
    IdOutOfLayout {
        /// The offending ID.
        id: u64,
        /// The layout's width in bits.
        bits: u32,
    },
    /// The clock is behind the last tick used and the policy is to refuse.
    ClockBehind {
        /// How far behind the last tick the clock is.
        by: Duration,
    },
    /// The wait for the clock would last, or has lasted, longer than the bound.
    WaitTooLong {
        /// How much longer the clock has to advance.
        needed: Duration,
        /// The configured bound.
        bound: Duration,
    },
    /// A non-blocking call would have had to wait this long.
    WouldBlock {
        /// How long to wait before trying again.
        wait: Duration,
    },
    /// The layout has node bits but no node id was given.
    NodeMissing,
    /// The generator is leased ([`crate::Generator::lease`]) to other code: it could not
    /// be leased again, or the lease did not end within the wait bound.
    Leased,
    /// A sharded generator needs at least one shard.
    NoShards,
    /// A sharded generator was given fewer node ids than it has shards.
    NodeBlockTooSmall {
        /// Shards asked for.
        shards: usize,
        /// Node ids given.
        nodes: u64,
    },
    /// Datacenter and worker were given for a layout without a datacenter part.
    NoDatacenterField,
    /// No private IPv4 address (10/8, 172.16/12, 192.168/16, 169.254/16) was found.
    NoPrivateIp,
    /// The node-id check hook refused the id.
    NodeRejected {
        /// The refused id.
        node: u64,
    },
    /// A batch-decode column whose length differs from the number of IDs.
    ColumnLength {
        /// The column's name.
        column: &'static str,
        /// Its length.
        len: usize,
        /// The number of IDs.
        expected: usize,
    },
    /// Text that is not a valid ID, timestamp or layout.
    Parse(ParseErrorKind),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::LayoutTooWide { bits } => {
                write!(f, "layout needs {bits} bits; at most 63 fit in an ID")
            }
            Error::WiderThanCap { bits, max } => write!(
                f,
                "layout needs {bits} bits; the cap is {max} (53 keeps IDs exact in JavaScript)"
            ),
            Error::TimeBitsTooFew { bits, min } => {
                write!(f, "bit length for time must be {min} or more (got {bits})")
            }
            Error::InvalidSequenceBits { bits } => {
                write!(f, "invalid bit length for sequence number: {bits} (1..=30)")
            }
            Error::InvalidNodeBits { bits } => {
                write!(f, "invalid bit length for machine id: {bits} (1..=30)")
            }
            Error::InvalidDatacenterBits {
                datacenter_bits,
                node_bits,
            } => write!(
                f,
                "datacenter part of {datacenter_bits} bits does not fit in a node field of {node_bits} bits"
            ),
            Error::InvalidTimeUnit { unit_ns } => {
                write!(f, "invalid time unit: {unit_ns} ns (at least 1 ms)")
            }
            Error::EpochInFuture { epoch_unix_ms } => write!(
                f,
                "start time is ahead: the epoch {} lies in the future",
                crate::rfc3339::Timestamp(i128::from(*epoch_unix_ms) * 1_000_000)
            ),
            Error::LayoutEndsTooLate => {
                f.write_str("layout lifetime ends past what 63 bits of Unix milliseconds can name")
            }
            Error::OutOfRange { field, value, max } => {
                write!(f, "{field} {value} out of range 0..={max}")
            }
            Error::BeforeEpoch { by } => write!(f, "time is {by:?} before the layout's epoch"),
            Error::PastLifetime { end_unix_ms } => write!(
                f,
                "over the time limit: the layout's lifetime ends at {}",
                crate::rfc3339::Timestamp(i128::from(*end_unix_ms) * 1_000_000)
            ),
            Error::IdOutOfLayout { id, bits } => {
                write!(f, "id {id} does not fit the layout's {bits} bits")
            }
            Error::ClockBehind { by } => write!(
                f,
                "clock moved backwards; refusing to generate ids for {by:?}"
            ),
            Error::WaitTooLong { needed, bound } => write!(
                f,
                "clock must advance {needed:?} more, past the wait bound of {bound:?}"
            ),
            Error::WouldBlock { wait } => write!(f, "would block for {wait:?}"),
            Error::NodeMissing => f.write_str("the layout has node bits but no node id was given"),
            Error::Leased => {
                f.write_str("the generator is leased to other code (Generator::lease)")
            }
            Error::NoShards => f.write_str("a sharded generator needs at least one shard"),
            Error::NodeBlockTooSmall { shards, nodes } => write!(
                f,
                "{shards} shards need {shards} node ids, but the block holds {nodes}"
            ),
            Error::NoDatacenterField => {
                f.write_str("the layout has no datacenter field; give a node id instead")
            }
            Error::NoPrivateIp => f.write_str("no private ip address"),
            Error::NodeRejected { node } => write!(f, "invalid machine id: {node} was refused"),
            Error::ColumnLength {
                column,
                len,
                expected,
            } => write!(
                f,
                "column {column} holds {len} rows, not the {expected} IDs given"
            ),
            Error::Parse(kind) => match kind {
                ParseErrorKind::Empty => f.write_str("empty input"),
                ParseErrorKind::InvalidDigit { at } => {
                    write!(f, "invalid character at byte {at}")
                }
                ParseErrorKind::TooLong => f.write_str("too many digits for a 64-bit id"),
                ParseErrorKind::Overflow => f.write_str("number does not fit in 63 bits"),
                ParseErrorKind::Timestamp => {
                    f.write_str("not an RFC 3339 timestamp (e.g. 2026-10-31T12:00:00Z)")
                }
                ParseErrorKind::Layout(what) => write!(f, "invalid layout: {what}"),
            },
        }
    }
}

impl core::error::Error for Error {}
