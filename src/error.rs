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
    /// Text that is none of the encodings [`Encoding::parse_any`](crate::Encoding::parse_any)
    /// tells apart: not all digits (decimal), no `0x` (hex), not 13 characters (base32).
    UnknownEncoding {
        /// How many characters the text has.
        len: usize,
    },
    /// A name that is not a preset and not `key=value` pairs.
    UnknownPreset,
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
    /// The tick unit is shorter than 1 ms, or longer than `u64::MAX` ns (about 584 years).
    InvalidTimeUnit {
        /// The unit asked for.
        unit: Duration,
    },
    /// The layout's epoch lies before 1970-01-01T00:00:00Z.
    EpochBeforeUnix {
        /// How far before 1970.
        by: Duration,
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
        /// The layout's epoch, in Unix nanoseconds.
        epoch_unix_ns: u64,
    },
    /// A generator reached the last instant a clock of `u64` nanoseconds can name
    /// ([`CLOCK_END_UNIX_NS`](crate::CLOCK_END_UNIX_NS), in 2554) before the end of its
    /// layout: the layout's later ticks decode and compose, but cannot be minted.
    ClockRangeEnd,
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
    /// The call would have to wait longer than the bound allows: it has waited `waited`
    /// already, and the clock must still advance `needed`, which would take the total past
    /// `bound` ([`GeneratorBuilder::max_wait`](crate::GeneratorBuilder::max_wait)). Nothing
    /// was minted by the step that failed and the generator is unchanged: retrying later is
    /// safe, and succeeds once the clock has advanced `needed`.
    WaitTooLong {
        /// How much longer the clock has to advance.
        needed: Duration,
        /// How long this call (or [`Ids`](crate::Ids) iterator) had waited already.
        waited: Duration,
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
    /// [`GeneratorBuilder::resume_after`](crate::GeneratorBuilder::resume_after) was given
    /// an ID of another node: resuming after it would not order this node's IDs after it.
    ResumeOtherNode {
        /// The node field of the ID given.
        id_node: u64,
        /// This generator's node.
        node: u64,
    },
    /// [`GeneratorBuilder::resume_after`](crate::GeneratorBuilder::resume_after) was given
    /// an ID whose time lies further ahead of the clock than the wait bound: an ID of
    /// another layout, or of a clock far ahead of this one. The generator would mint what
    /// is left of that tick and then fail every call until the clock got there.
    ResumeAhead {
        /// How far ahead of the clock the ID's tick starts.
        ahead: Duration,
        /// The wait bound it exceeds.
        bound: Duration,
    },
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
            Error::InvalidTimeUnit { unit } => write!(
                f,
                "invalid time unit {unit:?}: a unit is at least 1 ms and at most u64::MAX ns (about 584 years)"
            ),
            Error::EpochBeforeUnix { by } => write!(
                f,
                "the epoch is {by:?} before 1970-01-01T00:00:00Z; an epoch must be 1970 or later"
            ),
            Error::EpochInFuture { epoch_unix_ms } => write!(
                f,
                "start time is ahead: the epoch {} lies in the future; pick an epoch in the past",
                crate::rfc3339::Timestamp(i128::from(*epoch_unix_ms) * 1_000_000)
            ),
            Error::LayoutEndsTooLate => f.write_str(
                "layout lifetime ends past what 63 bits of Unix milliseconds can name (the year 292278994): use fewer time bits or a shorter unit",
            ),
            Error::OutOfRange { field, value, max } => {
                write!(f, "{field} {value} out of range 0..={max}")
            }
            Error::BeforeEpoch { by, epoch_unix_ns } => write!(
                f,
                "time is {by:?} before the layout's epoch {}: give a later time, or a layout with an earlier epoch",
                crate::rfc3339::Timestamp(i128::from(*epoch_unix_ns))
            ),
            Error::ClockRangeEnd => write!(
                f,
                "the clock cannot count past {} (u64 nanoseconds), before this layout ends: its later IDs decode and compose but cannot be minted",
                crate::rfc3339::Timestamp(i128::from(crate::CLOCK_END_UNIX_NS))
            ),
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
                "clock moved backwards; refusing to generate ids for {by:?} (retry once the clock has caught up, or use ClockPolicy::Continue)"
            ),
            Error::WaitTooLong {
                needed,
                waited,
                bound,
            } => write!(
                f,
                "waited {waited:?} of the {bound:?} wait bound; the clock must advance {needed:?} more. Nothing was minted by this step: retry later, or raise max_wait"
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
            Error::ResumeOtherNode { id_node, node } => write!(
                f,
                "cannot resume after an ID of node {id_node}: this generator is node {node}; give the last ID this node minted"
            ),
            Error::ResumeAhead { ahead, bound } => write!(
                f,
                "the ID to resume after lies {ahead:?} ahead of the clock, more than the wait bound of {bound:?}: it is from another layout or a clock far ahead of this one; check the layout, or wait until the clock gets there"
            ),
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
                ParseErrorKind::UnknownEncoding { len } => write!(
                    f,
                    "not an ID: not decimal (digits only), not 0x hex, not 13-character base32 (this has {len} characters)"
                ),
                ParseErrorKind::UnknownPreset => f.write_str(
                    "unknown layout: the presets are snowflake (or twitter), sonyflake (or sonyflake-v2), sonyflake-v1, js-safe (or javascript-safe), names ignoring case; or give key=value pairs such as seq=12,node=10,epoch=2024-01-01T00:00:00Z",
                ),
                ParseErrorKind::Timestamp => {
                    f.write_str("not an RFC 3339 timestamp (e.g. 2026-10-31T12:00:00Z)")
                }
                ParseErrorKind::Layout(what) => write!(f, "invalid layout: {what}"),
            },
        }
    }
}

impl core::error::Error for Error {}
