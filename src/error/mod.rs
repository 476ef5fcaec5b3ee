//! The errors, split by what a caller can do about them: [`MintError`] from the minting
//! calls (small, for the hot path; `mint`), [`ParseError`] from text (`parse`), and
//! [`Error`] for everything else (a layout or generator that cannot be built, a value that
//! does not fit a layout), which also holds the other two so that `?` gathers all.

mod mint;

pub use crate::field::Field;
pub use crate::parse::{LayoutKey, ParseError};
pub use mint::MintError;

use core::fmt;
use core::time::Duration;

/// A layout or generator that cannot be built, a value that does not fit a layout, and (as
/// [`Error::Mint`] and [`Error::Parse`]) the other two errors, so that `?` gathers all.
///
/// No function of this crate panics on bad input; it returns one of these.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The fields of a layout add up to more than 64 bits.
    LayoutTooWide {
        /// The sum of the field widths.
        bits: u32,
    },
    /// The fields of a layout add up to more than the cap set with
    /// [`LayoutBuilder::max_bits`](crate::layout::LayoutBuilder::max_bits) (53 for IDs that
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
    /// A time at or after the first instant the layout cannot represent.
    PastLifetime {
        /// The first instant that no longer fits, in Unix milliseconds.
        end_unix_ms: u64,
    },
    /// A span of time with no instant in it: its end (exclusive) is not after its start
    /// ([`Layout::id_range`](crate::Layout::id_range)).
    EmptySpan {
        /// The start given, in Unix nanoseconds.
        from_unix_ns: i128,
        /// The end given, in Unix nanoseconds.
        to_unix_ns: i128,
    },
    /// An ID with bits set above the layout's width.
    IdOutOfLayout {
        /// The offending ID.
        id: u64,
        /// The layout's width in bits.
        bits: u32,
        /// Its position in the batch, from the batch decoder (the first such ID); `None`
        /// from a single ID's checks.
        index: Option<usize>,
    },
    /// A negative number given as an ID (from a signed column, say): IDs are never
    /// negative.
    NegativeId {
        /// The number given.
        value: i64,
    },
    /// An ID of 2^63 or more asked for as an `i64`: it does not fit a signed 64-bit
    /// column as a non-negative number.
    WiderThanI64 {
        /// The ID.
        id: u64,
    },
    /// A layout a generator cannot mint: its time and sequence fields take more bits
    /// than the generator's state word holds. Decoding and composing work.
    CannotMint {
        /// Bits the state word would need: the clock's reachable ticks plus the sequence.
        bits: u32,
        /// Bits it holds (63: the top bit is the lease bit).
        max: u32,
    },
    /// The layout has node bits but no node id was given.
    NodeMissing,
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
    /// A node field the layout does not have ([`Layout::node_from`](crate::Layout::node_from)):
    /// Sonyflake's `machine` for Snowflake, `datacenter` for a node not split.
    NotANodeField {
        /// The field given.
        field: Field,
        /// The node fields the layout has (what its decoded IDs show).
        fields: crate::field::NodeFields,
    },
    /// One of the node's two parts without the other.
    NodePartMissing {
        /// The part given.
        given: Field,
        /// The part missing.
        missing: Field,
    },
    /// Two node fields that name different node ids (`node` and `machine` differ, or the
    /// parts do not make the `node` given).
    NodeFieldsDisagree {
        /// The field first given.
        first: Field,
        /// The field that names another node id.
        second: Field,
    },
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
    /// A `u32` batch-decode column for a field wider than 32 bits.
    ColumnTooNarrow {
        /// The column's name.
        column: &'static str,
        /// The field's width in this layout.
        bits: u32,
    },
    /// Text that is not a valid ID, timestamp or layout.
    Parse(ParseError),
    /// Minting failed (see [`MintError`]); for callers that gather every error in one.
    Mint(MintError),
}

/// What the caller of a failed call can do about an [`Error`]: the remedy, which the
/// variant names only one by one ([`Error::kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The settings are wrong (a layout's fields, unit or epoch; a node id, a shard count,
    /// a resume point, a column's length): fix them; the same call fails again until then.
    Settings,
    /// The input is bad (an ID, a time or a field value that does not fit the layout,
    /// text that does not parse): the message says what and where; other input may work.
    Input,
    /// Minting failed: [`MintError`] says whether and when to retry.
    Mint,
    /// The host lacks what was asked of it (no private IPv4 address for a machine id).
    Environment,
}

impl Error {
    /// The remedy for this error: fix the settings, fix the input, retry minting (see
    /// [`MintError::retry_after`]), or fix the host.
    ///
    /// ```
    /// use flakeid::error::ErrorKind;
    /// use flakeid::Layout;
    ///
    /// let bad_layout = "seq=40,node=30".parse::<Layout>().unwrap_err();
    /// assert_eq!(bad_layout.kind(), ErrorKind::Settings);
    /// let bad_id = Layout::snowflake().decompose(u64::MAX).unwrap_err();
    /// assert_eq!(bad_id.kind(), ErrorKind::Input);
    /// ```
    pub const fn kind(&self) -> ErrorKind {
        match self {
            Error::LayoutTooWide { .. }
            | Error::WiderThanCap { .. }
            | Error::TimeBitsTooFew { .. }
            | Error::InvalidSequenceBits { .. }
            | Error::InvalidNodeBits { .. }
            | Error::InvalidDatacenterBits { .. }
            | Error::InvalidTimeUnit { .. }
            | Error::EpochBeforeUnix { .. }
            | Error::EpochInFuture { .. }
            | Error::LayoutEndsTooLate
            | Error::CannotMint { .. }
            | Error::NodeMissing
            | Error::NoShards
            | Error::NodeBlockTooSmall { .. }
            | Error::NoDatacenterField
            | Error::ResumeOtherNode { .. }
            | Error::ResumeAhead { .. }
            | Error::NodeRejected { .. }
            | Error::ColumnLength { .. }
            | Error::ColumnTooNarrow { .. } => ErrorKind::Settings,
            // A layout string that does not parse is a setting, too.
            Error::Parse(ParseError::UnknownPreset | ParseError::Layout(_)) => ErrorKind::Settings,
            // A node id is a setting (a generator's, a shard block's); a tick or sequence
            // number is input (to compose).
            Error::OutOfRange {
                field:
                    Field::Node | Field::Datacenter | Field::Worker | Field::Process | Field::Machine,
                ..
            } => ErrorKind::Settings,
            Error::OutOfRange { .. }
            | Error::BeforeEpoch { .. }
            | Error::PastLifetime { .. }
            | Error::EmptySpan { .. }
            | Error::NotANodeField { .. }
            | Error::NodePartMissing { .. }
            | Error::NodeFieldsDisagree { .. }
            | Error::IdOutOfLayout { .. }
            | Error::NegativeId { .. }
            | Error::WiderThanI64 { .. }
            | Error::Parse(_) => ErrorKind::Input,
            Error::Mint(_) => ErrorKind::Mint,
            Error::NoPrivateIp => ErrorKind::Environment,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::LayoutTooWide { bits } => {
                write!(f, "layout needs {bits} bits; at most 64 fit in an ID")
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
            Error::EmptySpan {
                from_unix_ns,
                to_unix_ns,
            } => write!(
                f,
                "the span from {} to {} holds no instant: its end is exclusive, so give an end later than its start",
                crate::rfc3339::Timestamp(*from_unix_ns),
                crate::rfc3339::Timestamp(*to_unix_ns)
            ),
            Error::PastLifetime { end_unix_ms } => write!(
                f,
                "over the time limit: the layout's lifetime ends at {}",
                crate::rfc3339::Timestamp(i128::from(*end_unix_ms) * 1_000_000)
            ),
            Error::IdOutOfLayout { id, bits, .. } => {
                write!(f, "id {id} does not fit the layout's {bits} bits")
            }
            Error::NegativeId { value } => write!(
                f,
                "ID {value} is negative, and no ID is: an ID of 2^63 or more (a Discord ID after 2084, say) read from a signed 64-bit column comes out negative; read the column as unsigned, or store such IDs as text"
            ),
            Error::WiderThanI64 { id } => write!(
                f,
                "ID {id} is 2^63 or more: it does not fit a signed 64-bit column (i64, BIGINT); store it unsigned (u64, NUMERIC(20)) or as text, or use a layout capped at 63 bits"
            ),
            Error::CannotMint { bits, max } => write!(
                f,
                "this layout cannot be minted: its time and sequence fields need {bits} bits of the generator's state word, which holds {max}; it decodes and composes, and minting needs fewer sequence bits or a node field"
            ),
            Error::NodeMissing => f.write_str("the layout has node bits but no node id was given"),
            Error::NoShards => f.write_str("a sharded generator needs at least one shard"),
            Error::NodeBlockTooSmall { shards, nodes } => write!(
                f,
                "{shards} shards need {shards} node ids, but the block holds {nodes}"
            ),
            Error::NoDatacenterField => {
                f.write_str("the layout has no datacenter field; give a node id instead")
            }
            Error::NotANodeField { field, fields } => write!(
                f,
                "this layout has no {field} field: its node fields are {fields}, as its decoded IDs show them"
            ),
            Error::NodePartMissing { given, missing } => write!(
                f,
                "{given} is one part of the node: give {missing} with it (or the whole node)"
            ),
            Error::NodeFieldsDisagree { first, second } => write!(
                f,
                "{first} and {second} name different node ids: give one of them, or values that agree"
            ),
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
            Error::ColumnTooNarrow { column, bits } => write!(
                f,
                "column {column} is u32 but this layout's {column} field has {bits} bits; decode it into a u64 column (Decoder::decode with Columns)"
            ),
            Error::Parse(e) => fmt::Display::fmt(e, f),
            Error::Mint(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl core::error::Error for Error {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            Error::Mint(e) => Some(e),
            Error::Parse(e) => Some(e),
            _ => None,
        }
    }
}

impl From<MintError> for Error {
    fn from(e: MintError) -> Self {
        Error::Mint(e)
    }
}

impl From<ParseError> for Error {
    fn from(e: ParseError) -> Self {
        Error::Parse(e)
    }
}
