//! The command line: clap's definitions of every subcommand and flag.

use clap::{Args, Parser, Subcommand, ValueEnum};

const LAYOUT_HELP: &str = "Layout: a preset (snowflake, alias twitter; sonyflake, alias \
sonyflake-v2; sonyflake-v1; js-safe, alias javascript-safe: 53-bit IDs JavaScript holds \
exactly; names ignore case) or a custom layout `key=value,...` with keys time, seq, node \
(bits), dc (datacenter bits inside node), order (tns = time|node|seq, tsn = time|seq|node), \
unit (e.g. 1ms, 10ms, 1500us, 1s) and epoch (RFC 3339 or Unix ms; without it ticks count \
from 1970). Example: seq=12,node=10,unit=1ms,epoch=2024-01-01T00:00:00Z";

#[derive(Parser)]
#[command(
    name = "flakeid",
    version,
    about = "Mint, decode, compose and explain 64-bit Snowflake-family IDs",
    after_help = "Examples:\n  flakeid gen -n 5 --datacenter 1 --worker 2\n  flakeid gen --layout sonyflake --machine-id 2565 --format hex\n  flakeid decode 2116500430648709162\n  flakeid layout --layout sonyflake\n  flakeid compose --time 2026-10-31T12:00:00Z --sequence 42 --datacenter 3 --worker 17"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Mint new IDs, one per line, strictly increasing.
    #[command(
        after_help = "Example:\n  flakeid gen -n 3 --datacenter 1 --worker 2\n  flakeid gen --layout sonyflake --machine-id-from private-ip --format json"
    )]
    Gen(GenArgs),
    /// Decode IDs (decimal, 0x hex or base32) from the arguments or standard input.
    #[command(
        after_help = "Example:\n  flakeid decode 2116500430648709162\n  flakeid gen -n 1000 --node 1 | flakeid decode --json"
    )]
    Decode(DecodeArgs),
    /// Build an ID from its fields; each is range-checked.
    #[command(
        after_help = "Example:\n  flakeid compose --time 2026-10-31T12:00:00Z --sequence 42 --datacenter 3 --worker 17\n  flakeid compose --layout sonyflake --ticks 5775840000 --sequence 7 --machine-id 2565"
    )]
    Compose(ComposeArgs),
    /// Show a layout's facts: fields, unit, epoch, lifetime, capacity.
    #[command(
        after_help = "Example:\n  flakeid layout\n  flakeid layout --layout 'seq=8,node=4,time=41,epoch=2025-01-01T00:00:00Z' --json"
    )]
    Layout(LayoutArgs),
    /// Measure sustained minting: IDs per second and the share of the layout's cap.
    #[command(
        after_help = "Example:\n  flakeid bench --seconds 2\n  flakeid bench --threads 2 --sharded --layout 'seq=22,node=4,epoch=2025-01-01T00:00:00Z'"
    )]
    Bench(BenchArgs),
}

#[derive(Args)]
pub(crate) struct LayoutArg {
    #[arg(long, short = 'l', default_value = "snowflake", help = LAYOUT_HELP)]
    pub(crate) layout: String,
}

/// Reads a count or an id: a non-negative integer, with a message that says so (clap's
/// own would call `-1` an unexpected argument).
pub(crate) fn non_negative(text: &str) -> Result<u64, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("must be a non-negative integer (got {text:?})"))
}

#[derive(Args, Default)]
pub(crate) struct NodeArgs {
    /// Node id (the whole node field).
    #[arg(long, value_parser = non_negative, allow_negative_numbers = true,
          conflicts_with_all = ["datacenter", "worker", "machine_id", "machine_id_from"])]
    pub(crate) node: Option<u64>,
    /// Snowflake datacenter id (with --worker).
    #[arg(long, value_parser = non_negative, allow_negative_numbers = true, requires = "worker")]
    pub(crate) datacenter: Option<u64>,
    /// Snowflake worker id (with --datacenter).
    #[arg(long, value_parser = non_negative, allow_negative_numbers = true, requires = "datacenter")]
    pub(crate) worker: Option<u64>,
    /// Sonyflake machine id (the node field of a Sonyflake-ordered layout; --node is the
    /// same for any layout).
    #[arg(long, value_parser = non_negative, allow_negative_numbers = true,
          conflicts_with_all = ["datacenter", "worker", "machine_id_from"])]
    pub(crate) machine_id: Option<u64>,
    /// Derive the machine id: `private-ip` is Sonyflake's rule (last two octets of the first
    /// private IPv4 address).
    #[arg(long, value_enum)]
    pub(crate) machine_id_from: Option<MachineIdSource>,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum MachineIdSource {
    PrivateIp,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum Format {
    Decimal,
    Hex,
    Base32,
    Json,
}

/// How `decode` reads its input IDs.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum InputEncoding {
    /// Per ID: `0x...` is hex, digits only decimal, other 13 characters base32.
    Auto,
    Decimal,
    Hex,
    Base32,
}

#[derive(Args)]
pub(crate) struct GenArgs {
    #[command(flatten)]
    pub(crate) layout: LayoutArg,
    #[command(flatten)]
    pub(crate) node: NodeArgs,
    /// How many IDs.
    #[arg(short = 'n', long, default_value_t = 1, value_parser = non_negative,
          allow_negative_numbers = true)]
    pub(crate) count: u64,
    /// Output format (json prints each ID as a JSON string, safe for JavaScript).
    #[arg(long, value_enum, default_value_t = Format::Decimal)]
    pub(crate) format: Format,
}

#[derive(Args)]
pub(crate) struct DecodeArgs {
    #[command(flatten)]
    pub(crate) layout: LayoutArg,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// How the input IDs are written. `auto` guesses per ID, and base32 text that looks
    /// like decimal (digits only) or hex (`0X...`) is read that way: give `base32` for
    /// base32 input.
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) encoding: InputEncoding,
    /// IDs; with none, read one per line from standard input. A line may also be a JSON
    /// string ("123") or a JSON object with an "id" field (what `gen --format json` and
    /// `decode --json` write). Blank lines and empty arguments are skipped.
    pub(crate) ids: Vec<String>,
}

#[derive(Args)]
pub(crate) struct ComposeArgs {
    #[command(flatten)]
    pub(crate) layout: LayoutArg,
    /// The time: RFC 3339 (2026-10-31T12:00:00Z; years past 9999 in the expanded form
    /// +71654-01-01T00:00:00Z that `decode` prints) or Unix milliseconds (1793448000000).
    #[arg(long, conflicts_with = "ticks", allow_negative_numbers = true)]
    pub(crate) time: Option<String>,
    /// The time part as ticks since the epoch (instead of --time).
    #[arg(long, value_parser = non_negative, allow_negative_numbers = true)]
    pub(crate) ticks: Option<u64>,
    /// The sequence number.
    #[arg(long, short = 's', default_value_t = 0, value_parser = non_negative,
          allow_negative_numbers = true)]
    pub(crate) sequence: u64,
    #[command(flatten)]
    pub(crate) node: NodeArgs,
}

#[derive(Args)]
pub(crate) struct LayoutArgs {
    #[command(flatten)]
    pub(crate) layout: LayoutArg,
    /// JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct BenchArgs {
    #[command(flatten)]
    pub(crate) layout: LayoutArg,
    /// Minting threads.
    #[arg(long, short = 't', default_value_t = 1, value_parser = non_negative,
          allow_negative_numbers = true)]
    pub(crate) threads: u64,
    /// One shard per thread (a ShardedGenerator, node ids 0, 1, ...), each thread pinned
    /// to a core and leasing its shard, instead of one generator all threads share.
    #[arg(long)]
    pub(crate) sharded: bool,
    /// Read the coarse clock on the fast path (CoarseClock: a background thread
    /// publishes the time every millisecond) instead of the monotonic clock.
    #[arg(long)]
    pub(crate) coarse: bool,
    /// How long to run.
    #[arg(long, default_value_t = 2.0)]
    pub(crate) seconds: f64,
}
