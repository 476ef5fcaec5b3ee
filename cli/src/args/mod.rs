//! The command line: clap's definitions of every subcommand and flag.

use clap::{Args, Parser, Subcommand, ValueEnum};

mod claim;
pub(crate) mod serve;
mod values;

pub(crate) use claim::{ClaimArgs, ClaimStoreArgs, ClaimsArgs};
pub(crate) use serve::ServeArgs;
use values::{duration, non_negative, positive_rate, signed_duration};

/// The help of `--layout`: the presets (from `Layout::presets`, with their aliases), then
/// the custom layout's keys.
fn layout_help() -> String {
    let presets: Vec<String> = flakeid::Layout::presets()
        .iter()
        .map(|p| match p.aliases {
            [] => p.name.to_string(),
            aliases => format!("{}, alias {}", p.name, aliases.join(", alias ")),
        })
        .collect();
    format!(
        "Layout: a preset ({}; names ignore case; `flakeid layout --list` shows them all; \
js-safe makes 53-bit IDs JavaScript holds exactly) or a custom layout `key=value,...` with keys \
time, seq, node (bits, 64 in all at most), dc (datacenter bits inside node), order (tns = \
time|node|seq, tsn = time|seq|node), unit (e.g. 1ms, 10ms, 1500us, 1s), epoch (RFC 3339 or Unix \
ms; without it ticks count from 1970) and grid (unix, the default: ticks on whole units since \
1970, as Sonyflake; epoch: ticks from the epoch instant, as ferroid). Example: \
seq=12,node=10,unit=1ms,epoch=2024-01-01T00:00:00Z. A node split in two parts takes the names \
decode shows: --datacenter and --worker (Snowflake, custom layouts with dc), Discord's --worker \
and --process",
        presets.join("; ")
    )
}

#[derive(Parser)]
#[command(
    name = "flakeid",
    version,
    about = "Mint, decode, compose and explain 64-bit Snowflake-family IDs",
    after_help = "Examples:\n  flakeid gen -n 5 --datacenter 1 --worker 2\n  flakeid gen --layout sonyflake --machine 2565 --format hex\n  flakeid decode 2116500430648709162\n  flakeid layout --layout sonyflake\n  flakeid compose --time 2026-10-31T12:00:00Z --sequence 42 --datacenter 3 --worker 17"
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
        after_help = "Example:\n  flakeid compose --time 2026-10-31T12:00:00Z --sequence 42 --datacenter 3 --worker 17\n  flakeid compose --layout sonyflake --ticks 5775840000 --sequence 7 --machine 2565"
    )]
    Compose(ComposeArgs),
    /// Show a layout's facts: fields, unit, epoch, lifetime, capacity.
    #[command(
        after_help = "Example:\n  flakeid layout\n  flakeid layout --list\n  flakeid layout --layout discord\n  flakeid layout --layout 'seq=8,node=4,time=41,epoch=2025-01-01T00:00:00Z' --json"
    )]
    Layout(LayoutArgs),
    /// The first and last ID a layout holds for a span of time, for a range query over a
    /// column of IDs (`WHERE id BETWEEN first AND last`): every ID minted from --from
    /// (inclusive) to --to (exclusive) lies between them.
    #[command(
        after_help = "Where --from or --to falls inside a tick, the IDs of that whole tick are in the range (an ID knows only its tick): exact for 1 ms layouts and whole milliseconds. A span that starts before the layout's epoch starts at its first ID; one that ends past its lifetime ends at its last.\n\nExample:\n  flakeid range --from 2026-12-07T00:00:00Z --to 2026-12-08T00:00:00Z\n  flakeid range --layout sonyflake --from 1796601600000 --column order_id\n  flakeid range --from 2026-12-07T00:00:00Z --to 2026-12-07T01:00:00Z --json"
    )]
    Range(RangeArgs),
    /// List the namespaces of a claim store (see `gen --claim`) with their layouts, and the
    /// node ids of each: holder, state and reservation. Repairs a damaged reservation.
    #[command(
        after_help = "Example:\n  flakeid claims --claim file:/var/lib/flakeid --namespace orders\n  flakeid claims --claim file:/var/lib/flakeid --json\n  flakeid claims --claim file:/var/lib/flakeid --namespace orders --repair 3 --window 30s"
    )]
    Claims(ClaimsArgs),
    /// Run the ID service: HTTP/1.1 and HTTP/2 (and gRPC with --grpc-listen) on given or
    /// claimed node ids, one shard per worker thread. Every flag has an environment
    /// variable (FLAKEID_LISTEN, FLAKEID_CLAIM, ...).
    #[command(
        after_help = "Routes: GET /v1/id, GET /v1/ids?count=N (Accept: application/json, text/plain or application/octet-stream), POST /v1/decode, GET /v1/layout, /healthz, /readyz, /metrics.\n\nExample:\n  flakeid serve --node 1\n  flakeid serve --claim etcd://10.0.0.5:2379 --namespace orders --listen 0.0.0.0:8080 --grpc-listen 0.0.0.0:9090\n  curl -s localhost:8080/v1/id\n  curl -s 'localhost:8080/v1/ids?count=3' -H 'Accept: text/plain'"
    )]
    Serve(ServeArgs),
    /// Measure sustained minting: IDs per second and the share of the layout's cap.
    #[command(
        after_help = "Example:\n  flakeid bench --seconds 2\n  flakeid bench --threads 2 --sharded --layout 'seq=22,node=4,epoch=2025-01-01T00:00:00Z'"
    )]
    Bench(BenchArgs),
}

#[derive(Args)]
pub(crate) struct LayoutArg {
    #[arg(long, short = 'l', default_value = "snowflake", help = layout_help())]
    pub(crate) layout: String,
}

#[derive(Args, Default)]
pub(crate) struct NodeArgs {
    /// Node id (the whole node field). Any node field `decode` prints is a flag here, alone
    /// or with the others where they agree.
    #[arg(long, value_parser = non_negative, allow_negative_numbers = true)]
    pub(crate) node: Option<u64>,
    /// Snowflake's datacenter id, the high part of the node (with --worker).
    #[arg(long, value_parser = non_negative, allow_negative_numbers = true)]
    pub(crate) datacenter: Option<u64>,
    /// Snowflake's worker id, the low part of the node (with --datacenter); for a layout
    /// with Discord's parts (`--layout discord`), its internal worker id, the high part
    /// (with --process). As decode names it.
    #[arg(long, value_parser = non_negative, allow_negative_numbers = true,
          visible_alias = "discord-worker")]
    pub(crate) worker: Option<u64>,
    /// Discord's internal process id, the low part of the node (`--layout discord`, with
    /// --worker).
    #[arg(long, value_parser = non_negative, allow_negative_numbers = true,
          visible_alias = "discord-process")]
    pub(crate) process: Option<u64>,
    /// Sonyflake's machine id: the whole node field of a layout whose node ends the ID
    /// (`order=tsn`), as decode names it.
    #[arg(long = "machine", visible_alias = "machine-id", value_parser = non_negative,
          allow_negative_numbers = true)]
    pub(crate) machine_id: Option<u64>,
    /// Derive the machine id: `private-ip` is Sonyflake's rule (last two octets of the first
    /// private IPv4 address).
    #[arg(long, value_enum,
          conflicts_with_all = ["node", "datacenter", "worker", "process", "machine_id"])]
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

/// What `decode` writes.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DecodeFormat {
    Table,
    Json,
    Csv,
}

/// The batch decoder's backend, as `decode --backend` and `FLAKEID_DECODE_BACKEND` name it.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BackendChoice {
    Auto,
    Scalar,
    Avx2,
    Avx512,
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
    /// At most this many IDs per second (each line is flushed), so a long-running `gen`
    /// can be watched or piped.
    #[arg(long, value_parser = positive_rate)]
    pub(crate) rate: Option<f64>,
    /// How long one mint may wait in all: for the next tick, and for a claim's renewal at
    /// the end of its reserved window (e.g. 500ms, 5s, 1m).
    #[arg(long, default_value = "60s", value_parser = duration)]
    pub(crate) max_wait: std::time::Duration,
    /// Warn on stderr when the layout runs out within this long (after its end no ID can
    /// be minted in it); 0s never warns.
    #[arg(long, default_value = "365d", value_parser = duration)]
    pub(crate) end_warning: std::time::Duration,
    #[command(flatten)]
    pub(crate) claim: ClaimArgs,
    /// For tests: read the clock shifted by this much (+2s, -10s), to play a host whose
    /// clock is ahead or behind.
    #[arg(long, hide = true, value_parser = signed_duration, allow_hyphen_values = true)]
    pub(crate) clock_offset: Option<i64>,
}

#[derive(Args)]
pub(crate) struct DecodeArgs {
    #[command(flatten)]
    pub(crate) layout: LayoutArg,
    /// What to write: an aligned table (the default), one JSON object per line, or CSV
    /// with a header (id,time,unix_ms,ticks,sequence,node, then the node's parts:
    /// datacenter,worker; Discord's worker,process; or machine), which spreadsheets, duckdb
    /// and polars read directly. With --column: what the input is (CSV or NDJSON).
    #[arg(long, value_enum)]
    pub(crate) format: Option<DecodeFormat>,
    /// The same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub(crate) json: bool,
    /// The batch decoder's backend: `auto` measures the ones this CPU has once and keeps
    /// the fastest. Overrides FLAKEID_DECODE_BACKEND. The output is the same on every one.
    #[arg(long, value_enum)]
    pub(crate) backend: Option<BackendChoice>,
    /// How the input IDs are written. `auto` guesses per ID, and base32 text that looks
    /// like decimal (digits only) or hex (`0X...`) is read that way: give `base32` for
    /// base32 input.
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) encoding: InputEncoding,
    /// Decode one column of a table on standard input, CSV or NDJSON (told by its first
    /// character), and write each row whole with the decoded fields beside it: by the
    /// column's name (the first CSV line is then the header), or its number from 1 (a
    /// first line whose field there is no ID is taken as the header). Signed IDs (a
    /// database's BIGINT) are read as the same 64 bits.
    #[arg(long, value_name = "NAME|N", conflicts_with = "ids")]
    pub(crate) column: Option<String>,
    /// IDs; with none, read one per line from standard input. A line may also be a JSON
    /// string ("123") or a JSON object with an "id" field (what `gen --format json` and
    /// `decode --json` write). Blank lines and empty arguments are skipped. A negative
    /// decimal is read as the 64 bits of a signed column.
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
pub(crate) struct RangeArgs {
    #[command(flatten)]
    pub(crate) layout: LayoutArg,
    /// The span's start, inclusive: RFC 3339 (2026-12-07T00:00:00Z) or Unix milliseconds
    /// (1796601600000).
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) from: String,
    /// The span's end, exclusive, as --from; the current time if not given.
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) to: Option<String>,
    /// The column the SQL condition names.
    #[arg(long, default_value = "id")]
    pub(crate) column: String,
    /// JSON (first and last ID, and the instants of the ticks they open and close) instead
    /// of the SQL condition.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct LayoutArgs {
    #[command(flatten)]
    pub(crate) layout: LayoutArg,
    /// JSON instead of a table (with --list: one JSON object per line).
    #[arg(long)]
    pub(crate) json: bool,
    /// Every preset: its fields, epoch, unit, lifetime, caps (i64, JavaScript) and source.
    #[arg(long, conflicts_with = "layout")]
    pub(crate) list: bool,
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
    /// Measure on the precise monotonic clock (a clock read per ID) instead of the
    /// library's default, the coarse clock (a background thread publishes the time every
    /// millisecond), which is what `Generator::builder(layout).build()` uses.
    #[arg(long, conflicts_with = "coarse")]
    pub(crate) monotonic: bool,
    /// The coarse clock: the default (kept so that older command lines still run).
    #[arg(long, hide = true)]
    pub(crate) coarse: bool,
    /// How long to run.
    #[arg(long, default_value_t = 2.0)]
    pub(crate) seconds: f64,
}
