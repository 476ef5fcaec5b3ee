//! `flakeid`: mint, decode, compose and explain Snowflake-family IDs from the shell.

use std::io::{self, BufRead, BufWriter, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand, ValueEnum};
use flakeid::decode::{Columns, Decoder};
use flakeid::rfc3339::{self, Timestamp};
use flakeid::{
    Clock, CoarseClock, Encoding, Error, Field, Generator, Id, Layout, Order, ParseErrorKind,
    ShardedGenerator,
};

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
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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
struct LayoutArg {
    #[arg(long, short = 'l', default_value = "snowflake", help = LAYOUT_HELP)]
    layout: String,
}

/// Reads a count or an id: a non-negative integer, with a message that says so (clap's
/// own would call `-1` an unexpected argument).
fn non_negative(text: &str) -> Result<u64, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("must be a non-negative integer (got {text:?})"))
}

#[derive(Args, Default)]
struct NodeArgs {
    /// Node id (the whole node field).
    #[arg(long, value_parser = non_negative, allow_negative_numbers = true,
          conflicts_with_all = ["datacenter", "worker", "machine_id", "machine_id_from"])]
    node: Option<u64>,
    /// Snowflake datacenter id (with --worker).
    #[arg(long, value_parser = non_negative, allow_negative_numbers = true, requires = "worker")]
    datacenter: Option<u64>,
    /// Snowflake worker id (with --datacenter).
    #[arg(long, value_parser = non_negative, allow_negative_numbers = true, requires = "datacenter")]
    worker: Option<u64>,
    /// Sonyflake machine id (the node field of a Sonyflake-ordered layout; --node is the
    /// same for any layout).
    #[arg(long, value_parser = non_negative, allow_negative_numbers = true,
          conflicts_with_all = ["datacenter", "worker", "machine_id_from"])]
    machine_id: Option<u64>,
    /// Derive the machine id: `private-ip` is Sonyflake's rule (last two octets of the first
    /// private IPv4 address).
    #[arg(long, value_enum)]
    machine_id_from: Option<MachineIdSource>,
}

#[derive(Clone, Copy, ValueEnum)]
enum MachineIdSource {
    PrivateIp,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    Decimal,
    Hex,
    Base32,
    Json,
}

/// How `decode` reads its input IDs.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum InputEncoding {
    /// Per ID: `0x...` is hex, digits only decimal, other 13 characters base32.
    Auto,
    Decimal,
    Hex,
    Base32,
}

#[derive(Args)]
struct GenArgs {
    #[command(flatten)]
    layout: LayoutArg,
    #[command(flatten)]
    node: NodeArgs,
    /// How many IDs.
    #[arg(short = 'n', long, default_value_t = 1, value_parser = non_negative,
          allow_negative_numbers = true)]
    count: u64,
    /// Output format (json prints each ID as a JSON string, safe for JavaScript).
    #[arg(long, value_enum, default_value_t = Format::Decimal)]
    format: Format,
}

#[derive(Args)]
struct DecodeArgs {
    #[command(flatten)]
    layout: LayoutArg,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
    /// How the input IDs are written. `auto` guesses per ID, and base32 text that looks
    /// like decimal (digits only) or hex (`0X...`) is read that way: give `base32` for
    /// base32 input.
    #[arg(long, value_enum, default_value = "auto")]
    encoding: InputEncoding,
    /// IDs; with none, read one per line from standard input. A line may also be a JSON
    /// string ("123") or a JSON object with an "id" field (what `gen --format json` and
    /// `decode --json` write). Blank lines and empty arguments are skipped.
    ids: Vec<String>,
}

#[derive(Args)]
struct ComposeArgs {
    #[command(flatten)]
    layout: LayoutArg,
    /// The time: RFC 3339 (2026-10-31T12:00:00Z; years past 9999 in the expanded form
    /// +71654-01-01T00:00:00Z that `decode` prints) or Unix milliseconds (1793448000000).
    #[arg(long, conflicts_with = "ticks", allow_negative_numbers = true)]
    time: Option<String>,
    /// The time part as ticks since the epoch (instead of --time).
    #[arg(long, value_parser = non_negative, allow_negative_numbers = true)]
    ticks: Option<u64>,
    /// The sequence number.
    #[arg(long, short = 's', default_value_t = 0, value_parser = non_negative,
          allow_negative_numbers = true)]
    sequence: u64,
    #[command(flatten)]
    node: NodeArgs,
}

#[derive(Args)]
struct LayoutArgs {
    #[command(flatten)]
    layout: LayoutArg,
    /// JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct BenchArgs {
    #[command(flatten)]
    layout: LayoutArg,
    /// Minting threads.
    #[arg(long, short = 't', default_value_t = 1, value_parser = non_negative,
          allow_negative_numbers = true)]
    threads: u64,
    /// One shard per thread (a ShardedGenerator, node ids 0, 1, ...), each thread pinned
    /// to a core and leasing its shard, instead of one generator all threads share.
    #[arg(long)]
    sharded: bool,
    /// Read the coarse clock on the fast path (CoarseClock: a background thread
    /// publishes the time every millisecond) instead of the monotonic clock.
    #[arg(long)]
    coarse: bool,
    /// How long to run.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
}

/// An error with the flag it concerns, printed as `error: --flag: message`.
struct CliError {
    flag: Option<&'static str>,
    message: String,
}

impl CliError {
    fn new(flag: Option<&'static str>, e: impl std::fmt::Display) -> Self {
        CliError {
            flag,
            message: e.to_string(),
        }
    }
}

type CliResult<T = ()> = Result<T, CliError>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Gen(a) => gen_ids(a),
        Command::Decode(a) => decode(a),
        Command::Compose(a) => compose(a),
        Command::Layout(a) => layout(a),
        Command::Bench(a) => bench(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            match e.flag {
                Some(flag) => warn(format_args!("error: {flag}: {}", e.message)),
                None => warn(format_args!("error: {}", e.message)),
            }
            ExitCode::from(2)
        }
    }
}

/// A line on standard error; a closed standard error is not worth a panic.
fn warn(line: std::fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

fn parse_layout(arg: &LayoutArg) -> CliResult<Layout> {
    arg.layout
        .parse()
        .map_err(|e| CliError::new(Some("--layout"), format!("{:?}: {e}", arg.layout)))
}

fn node_flag(field: Field, args: &NodeArgs) -> &'static str {
    match field {
        Field::Datacenter => "--datacenter",
        Field::Worker => "--worker",
        _ if args.machine_id.is_some() => "--machine-id",
        _ if args.machine_id_from.is_some() => "--machine-id-from",
        _ => "--node",
    }
}

/// The node id the flags name, checked against the layout.
fn resolve_node(layout: &Layout, args: &NodeArgs) -> CliResult<u64> {
    let snowflake_order = layout.order() == Order::TimeNodeSequence;
    if snowflake_order && (args.machine_id.is_some() || args.machine_id_from.is_some()) {
        let flag = node_flag(Field::Node, args);
        return Err(CliError::new(
            Some(flag),
            format!(
                "{flag} is Sonyflake's machine id, and this layout is Snowflake-ordered \
                 (time|node|sequence): give {}--node N",
                if layout.datacenter_bits() > 0 {
                    "--datacenter D --worker W, or "
                } else {
                    ""
                }
            ),
        ));
    }
    let node = match (args.node.or(args.machine_id), args.datacenter, args.worker) {
        (Some(n), _, _) => n,
        (None, Some(d), Some(w)) => layout.node_of(d, w).map_err(|e| match e {
            Error::OutOfRange { field, .. } => CliError::new(Some(node_flag(field, args)), e),
            _ => CliError::new(
                Some("--datacenter"),
                "the layout has no datacenter field: give --machine-id M or --node N",
            ),
        })?,
        _ => match args.machine_id_from {
            Some(MachineIdSource::PrivateIp) => flakeid::node::private_ip_machine_id()
                .map(u64::from)
                .map_err(|e| {
                    CliError::new(
                        Some("--machine-id-from"),
                        format!("{e}: give the machine id with --machine-id M (or --node N)"),
                    )
                })?,
            None if layout.node_bits() == 0 => 0,
            None => {
                let hint = if layout.datacenter_bits() > 0 {
                    "--datacenter D --worker W, or --node N"
                } else if !snowflake_order {
                    "--machine-id M, --machine-id-from private-ip, or --node N"
                } else {
                    "--node N"
                };
                return Err(CliError::new(
                    None,
                    format!(
                        "the layout has {} node bits: give a node id with {hint}",
                        layout.node_bits()
                    ),
                ));
            }
        },
    };
    layout
        .check_node(node)
        .map_err(|e| CliError::new(Some(node_flag(Field::Node, args)), e))
}

fn io_err(e: io::Error) -> CliError {
    CliError::new(None, e)
}

fn gen_ids(a: GenArgs) -> CliResult<ExitCode> {
    let layout = parse_layout(&a.layout)?;
    let node = resolve_node(&layout, &a.node)?;
    let generator = Generator::builder(layout)
        .node(node)
        .max_wait(Duration::from_secs(60))
        .build()
        .map_err(|e| CliError::new(None, e))?;
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut batch = vec![Id::default(); 4096];
    let mut buf = [0u8; flakeid::encoding::MAX_LEN];
    // JSON is the decimal text as a string, so JavaScript keeps every digit.
    let (encoding, quoted) = match a.format {
        Format::Decimal => (Encoding::Decimal, false),
        Format::Hex => (Encoding::Hex, false),
        Format::Base32 => (Encoding::Base32, false),
        Format::Json => (Encoding::Decimal, true),
    };
    let mut left = a.count;
    while left > 0 {
        let want = left.min(batch.len() as u64) as usize;
        let n = generator
            .next_ids(&mut batch[..want])
            .map_err(|e| CliError::new(None, e))?;
        for id in &batch[..n] {
            let text = id.encode(encoding, &mut buf);
            let res = if quoted {
                writeln!(out, "\"{text}\"")
            } else {
                writeln!(out, "{text}")
            };
            if let Err(e) = res {
                return quiet_on_broken_pipe(e);
            }
        }
        left -= n as u64;
    }
    out.flush().or_else(quiet_on_broken_pipe)?;
    Ok(ExitCode::SUCCESS)
}

/// `flakeid gen | head` closes the pipe early; that is not an error, for any subcommand.
fn quiet_on_broken_pipe<T>(e: io::Error) -> CliResult<T> {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    Err(io_err(e))
}

/// Writes `text` to standard output, a closed pipe being a normal end.
fn print_out(text: &str) -> CliResult {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .or_else(quiet_on_broken_pipe)
}

/// One decoded row, from the batch decoder's columns.
struct Row {
    id: u64,
    ticks: u64,
    unix_ms: u64,
    sequence: u64,
    node: u64,
}

fn write_json_record(out: &mut impl Write, layout: &Layout, r: &Row) -> io::Result<()> {
    write!(
        out,
        "{{\"id\":\"{}\",\"ticks\":{},\"unix_ms\":{},\"time\":\"{}\",\"sequence\":{},\"node\":{}",
        r.id,
        r.ticks,
        r.unix_ms,
        Timestamp(i128::from(r.unix_ms) * 1_000_000),
        r.sequence,
        r.node
    )?;
    if layout.datacenter_bits() > 0 {
        let (dc, worker) = layout.split_node(r.node);
        write!(out, ",\"datacenter\":{dc},\"worker\":{worker}")?;
    }
    if layout.order() == Order::TimeSequenceNode {
        write!(out, ",\"machine\":{}", r.node)?;
    }
    writeln!(out, "}}")
}

fn write_table_header(out: &mut impl Write, layout: &Layout) -> io::Result<()> {
    write!(
        out,
        "{:<20} {:<25} {:>14} {:>8} {:>8}",
        "id", "time", "ticks", "sequence", "node"
    )?;
    if layout.datacenter_bits() > 0 {
        write!(out, " {:>10} {:>6}", "datacenter", "worker")?;
    }
    writeln!(out)
}

fn write_table_row(out: &mut impl Write, layout: &Layout, r: &Row) -> io::Result<()> {
    write!(
        out,
        "{:<20} {:<25} {:>14} {:>8} {:>8}",
        r.id,
        Timestamp(i128::from(r.unix_ms) * 1_000_000).to_string(),
        r.ticks,
        r.sequence,
        r.node
    )?;
    if layout.datacenter_bits() > 0 {
        let (dc, worker) = layout.split_node(r.node);
        write!(out, " {dc:>10} {worker:>6}")?;
    }
    writeln!(out)
}

/// IDs per batch handed to the (SIMD) batch decoder.
const DECODE_BATCH: usize = 4096;

/// How much of a bad line an error message echoes.
const ECHO_CHARS: usize = 80;

/// Streams IDs through the batch decoder a batch at a time; bad lines are reported on
/// standard error as they are met (after every good line before them is written) and
/// counted.
struct DecodeStream<'a, W: Write> {
    decoder: Decoder,
    encoding: InputEncoding,
    json: bool,
    /// The table's header is written before the first row, so there is none without rows.
    header_written: bool,
    out: &'a mut W,
    ids: Vec<u64>,
    cols: [Vec<u64>; 4],
    bad_lines: u64,
}

/// Why a line is not an ID, and a hint at what to do.
struct BadLine {
    error: String,
    hint: &'static str,
}

impl From<Error> for BadLine {
    fn from(e: Error) -> Self {
        BadLine {
            error: e.to_string(),
            hint: "",
        }
    }
}

/// The ID text of a line: the line itself, a JSON string, or the `id` field of a JSON
/// object (a string or a number).
fn id_text(line: &str) -> Result<std::borrow::Cow<'_, str>, BadLine> {
    if !line.starts_with(['"', '{']) {
        return Ok(line.into());
    }
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| BadLine {
        error: format!("not JSON: {e}"),
        hint: "",
    })?;
    let field = match &value {
        serde_json::Value::Object(map) => map.get("id"),
        other => Some(other),
    };
    match field {
        Some(serde_json::Value::String(s)) => Ok(s.clone().into()),
        Some(serde_json::Value::Number(n)) if n.is_u64() => Ok(n.to_string().into()),
        _ => Err(BadLine {
            error: "JSON without an ID: expected a string, or an object whose \"id\" is a \
                    string or a non-negative integer"
                .into(),
            hint: "",
        }),
    }
}

/// A hint for text `parse_any` could not place.
fn encoding_hint(text: &str) -> &'static str {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_hexdigit()) {
        "; if it is hex, write it with 0x or give --encoding hex"
    } else if t.len() == 12 || t.len() == 14 {
        "; base32 IDs have exactly 13 characters"
    } else {
        ""
    }
}

impl<W: Write> DecodeStream<'_, W> {
    /// Takes one line (or argument) as bytes: skips it when blank, else decodes it or
    /// reports it, with `number` in the report.
    fn push_bytes(&mut self, what: &str, number: u64, bytes: &[u8]) -> CliResult {
        let trimmed = bytes.trim_ascii();
        if trimmed.is_empty() {
            return Ok(());
        }
        let result = match std::str::from_utf8(trimmed) {
            Ok(text) => self.parse(text),
            Err(e) => Err(BadLine {
                error: format!("not UTF-8 text (byte {} is invalid)", e.valid_up_to() + 1),
                hint: "",
            }),
        };
        match result {
            Ok(id) => {
                self.ids.push(id);
                if self.ids.len() == DECODE_BATCH {
                    self.flush_batch()?;
                }
            }
            Err(bad) => {
                // Every good line before this one is out before the report.
                self.flush_batch()?;
                self.out.flush().or_else(quiet_on_broken_pipe)?;
                self.bad_lines += 1;
                warn(format_args!(
                    "{what} {number}: {}: {}{}",
                    echo(trimmed),
                    bad.error,
                    bad.hint
                ));
            }
        }
        Ok(())
    }

    fn parse(&self, line: &str) -> Result<u64, BadLine> {
        let layout = self.decoder.layout();
        let text = id_text(line)?;
        let parsed = match self.encoding {
            InputEncoding::Auto => Encoding::parse_any(&text).map_err(|e| {
                let hint = match e {
                    Error::Parse(ParseErrorKind::UnknownEncoding { .. }) => encoding_hint(&text),
                    _ => "",
                };
                BadLine {
                    error: e.to_string(),
                    hint,
                }
            })?,
            InputEncoding::Decimal => Encoding::Decimal.parse(&text)?,
            InputEncoding::Hex => Encoding::Hex.parse(&text)?,
            InputEncoding::Base32 => Encoding::Base32.parse(&text)?,
        };
        Ok(layout.decompose(parsed).map(|_| parsed)?)
    }

    fn flush_batch(&mut self) -> CliResult {
        let n = self.ids.len();
        if n == 0 {
            return Ok(());
        }
        let [t, m, s, nd] = &mut self.cols;
        for c in [&mut *t, &mut *m, &mut *s, &mut *nd] {
            c.resize(n, 0);
        }
        self.decoder
            .decode(
                &self.ids,
                Columns {
                    ticks: Some(t),
                    unix_ms: Some(m),
                    sequence: Some(s),
                    node: Some(nd),
                },
            )
            .map_err(|e| CliError::new(None, e))?;
        let layout = *self.decoder.layout();
        if !self.json && !self.header_written {
            self.header_written = true;
            write_table_header(self.out, &layout).or_else(quiet_on_broken_pipe)?;
        }
        for i in 0..n {
            let row = Row {
                id: self.ids[i],
                ticks: t[i],
                unix_ms: m[i],
                sequence: s[i],
                node: nd[i],
            };
            let res = if self.json {
                write_json_record(self.out, &layout, &row)
            } else {
                write_table_row(self.out, &layout, &row)
            };
            res.or_else(quiet_on_broken_pipe)?;
        }
        self.ids.clear();
        Ok(())
    }
}

/// At most [`ECHO_CHARS`] characters of a bad line, quoted and escaped, with the length
/// when it was cut.
fn echo(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(ECHO_CHARS).collect();
    if chars.next().is_some() {
        format!("{head:?}... ({} bytes)", bytes.len())
    } else {
        format!("{head:?}")
    }
}

/// The UTF-8 byte order mark, skipped at the start of the input.
const BOM: &[u8] = b"\xEF\xBB\xBF";

fn decode(a: DecodeArgs) -> CliResult<ExitCode> {
    let layout = parse_layout(&a.layout)?;
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut stream = DecodeStream {
        decoder: Decoder::new(&layout),
        encoding: a.encoding,
        json: a.json,
        header_written: false,
        out: &mut out,
        ids: Vec::with_capacity(DECODE_BATCH),
        cols: std::array::from_fn(|_| Vec::with_capacity(DECODE_BATCH)),
        bad_lines: 0,
    };
    if a.ids.is_empty() {
        // Bytes, not `String`s: a line that is not UTF-8 is one bad line, not the end.
        let mut reader = io::stdin().lock();
        let mut line = Vec::new();
        let mut line_no = 0u64;
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Whatever was read before the failure is still written.
                    stream.flush_batch()?;
                    stream.out.flush().or_else(quiet_on_broken_pipe)?;
                    return Err(CliError::new(
                        None,
                        format!("reading standard input after line {line_no}: {e}"),
                    ));
                }
            }
            line_no += 1;
            let bytes = match line_no {
                1 => line.strip_prefix(BOM).unwrap_or(&line),
                _ => &line,
            };
            stream.push_bytes("line", line_no, bytes)?;
        }
    } else {
        for (i, text) in a.ids.iter().enumerate() {
            stream.push_bytes("argument", i as u64 + 1, text.as_bytes())?;
        }
    }
    stream.flush_batch()?;
    let bad_lines = stream.bad_lines;
    out.flush().or_else(quiet_on_broken_pipe)?;
    Ok(if bad_lines > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// A `--time`: Unix milliseconds (digits only), or RFC 3339 with the expanded years
/// `decode` prints past 9999.
fn parse_time(text: &str) -> Result<i128, Error> {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        // Digits past what i128 nanoseconds hold are past every layout's end anyway.
        return Ok(t
            .parse::<i128>()
            .ok()
            .and_then(|ms| ms.checked_mul(1_000_000))
            .unwrap_or(i128::MAX));
    }
    rfc3339::parse(t)
}

fn compose(a: ComposeArgs) -> CliResult<ExitCode> {
    let layout = parse_layout(&a.layout)?;
    let node = resolve_node(&layout, &a.node)?;
    let (ticks, flag) = match (&a.time, a.ticks) {
        (Some(t), _) => {
            let ticks = parse_time(t)
                .and_then(|ns| layout.ticks_at(ns))
                .map_err(|e| CliError::new(Some("--time"), e))?;
            (ticks, "--time")
        }
        (None, Some(t)) => (t, "--ticks"),
        (None, None) => {
            return Err(CliError::new(
                None,
                "give the time with --time (RFC 3339, e.g. 2026-10-31T12:00:00Z, or Unix ms) \
                 or the raw tick count with --ticks",
            ));
        }
    };
    let id = layout.compose(ticks, a.sequence, node).map_err(|e| {
        let flag = match e {
            Error::OutOfRange {
                field: Field::Sequence,
                ..
            } => "--sequence",
            Error::OutOfRange {
                field: Field::Ticks,
                ..
            } => flag,
            _ => node_flag(Field::Node, &a.node),
        };
        CliError::new(Some(flag), e)
    })?;
    print_out(&format!("{id}\n"))?;
    Ok(ExitCode::SUCCESS)
}

/// IDs per second as an integer when whole, else with two decimals.
fn rate_text(rate: f64) -> String {
    if rate.fract() == 0.0 {
        format!("{rate:.0}")
    } else {
        format!("{rate:.2}")
    }
}

/// What a user should know before using a layout: printed on standard error.
fn layout_warnings(l: &Layout, text: &str) -> Vec<String> {
    let now = i128::from(flakeid::SystemClock.unix_ns());
    let end = Timestamp(l.end_unix_ns());
    let year_ns = 365 * 86_400 * 1_000_000_000i128;
    let mut warnings = Vec::new();
    if l.end_unix_ns() <= now {
        warnings.push(format!(
            "this layout's lifetime ended at {end}: no ID can be minted; give a later epoch= or more time bits"
        ));
    } else if l.end_unix_ns() - now <= year_ns {
        warnings.push(format!(
            "this layout's lifetime ends at {end}, within a year; give a later epoch= or more time bits"
        ));
    }
    let custom = text.contains('=');
    if custom
        && !text
            .split(',')
            .any(|kv| kv.trim_start().starts_with("epoch"))
    {
        warnings.push(format!(
            "no epoch= given: ticks count from 1970-01-01T00:00:00Z, so the layout ends at {end}; \
             give epoch=<a recent time> to have the whole lifetime ahead"
        ));
    }
    if !l.ends_within_clock_range() {
        warnings.push(format!(
            "generators stop at {} (the end of u64 nanoseconds), before this layout ends at {end}; \
             its later IDs decode and compose, but cannot be minted",
            Timestamp(i128::from(flakeid::CLOCK_END_UNIX_NS))
        ));
    }
    warnings
}

fn layout(a: LayoutArgs) -> CliResult<ExitCode> {
    let l = parse_layout(&a.layout)?;
    let end = Timestamp(l.end_unix_ns());
    let epoch = Timestamp(i128::from(l.epoch_unix_ns()));
    // Tick 0 starts on a multiple of the unit, which is the epoch only if it is on one.
    let first_tick = l.unix_ns_of(0).unwrap_or(0);
    let first = Timestamp(first_tick);
    let rate = rate_text(l.ids_per_second_per_node());
    let text = if a.json {
        format!(
            "{{\"layout\":\"{l}\",\"time_bits\":{},\"sequence_bits\":{},\"node_bits\":{},\"datacenter_bits\":{},\"worker_bits\":{},\"order\":\"{}\",\"unit_ns\":{},\"epoch_unix_ms\":{},\"epoch\":\"{epoch}\",\"first_tick_starts\":\"{first}\",\"lifetime_years\":{:.2},\"end\":\"{end}\",\"ids_per_second_per_node\":{rate},\"max_nodes\":{},\"bits\":{},\"javascript_safe\":{},\"mintable_to_end\":{}}}\n",
            l.time_bits(),
            l.sequence_bits(),
            l.node_bits(),
            l.datacenter_bits(),
            l.worker_bits(),
            order_name(l.order()),
            l.unit_ns(),
            l.epoch_unix_ms(),
            l.lifetime_years(),
            l.max_nodes(),
            l.bits(),
            l.is_javascript_safe(),
            l.ends_within_clock_range(),
        )
    } else {
        let mut t = String::new();
        use std::fmt::Write as _;
        let _ = writeln!(t, "layout          {l}");
        let _ = writeln!(t, "fields          {}", field_diagram(&l));
        let _ = writeln!(t, "unit            {:?}", l.unit());
        let _ = writeln!(t, "epoch           {epoch}");
        if first_tick != i128::from(l.epoch_unix_ns()) {
            let _ = writeln!(
                t,
                "tick 0 starts   {first} (the epoch is not on a unit boundary: ticks start at Unix multiples of the unit)"
            );
        }
        let _ = writeln!(t, "lifetime        {:.2} years", l.lifetime_years());
        let _ = writeln!(
            t,
            "ends            {end} (first instant that no longer fits)"
        );
        let _ = writeln!(t, "IDs/s per node  {rate}");
        let _ = writeln!(t, "nodes           {}", l.max_nodes());
        let _ = writeln!(
            t,
            "ID width        {} bits{}",
            l.bits(),
            if l.is_javascript_safe() {
                " (JavaScript-safe)"
            } else {
                ""
            }
        );
        t
    };
    for w in layout_warnings(&l, &a.layout.layout) {
        warn(format_args!("warning: {w}"));
    }
    print_out(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn order_name(o: Order) -> &'static str {
    match o {
        Order::TimeNodeSequence => "time|node|sequence",
        Order::TimeSequenceNode => "time|sequence|node",
    }
}

fn field_diagram(l: &Layout) -> String {
    let node = if l.datacenter_bits() > 0 {
        format!(
            "datacenter {} | worker {}",
            l.datacenter_bits(),
            l.worker_bits()
        )
    } else {
        format!("node {}", l.node_bits())
    };
    let pad = if l.bits() < 63 {
        format!("0 x{} | ", 64 - l.bits())
    } else {
        "0 | ".to_owned()
    };
    match l.order() {
        Order::TimeNodeSequence => format!(
            "{pad}time {} | {node} | sequence {}",
            l.time_bits(),
            l.sequence_bits()
        ),
        Order::TimeSequenceNode => format!(
            "{pad}time {} | sequence {} | {node}",
            l.time_bits(),
            l.sequence_bits()
        ),
    }
}

type BenchWorker = std::thread::JoinHandle<Result<(), Error>>;

/// Starts the bench threads: all on shard 0 (shared), or thread `t` pinned to core `t`
/// and leasing shard `t`.
fn spawn_bench<C: Clock + Send + Sync + 'static>(
    sharded: Result<ShardedGenerator<C>, Error>,
    threads: u64,
    leased: bool,
    stop: &Arc<AtomicBool>,
    total: &Arc<AtomicU64>,
) -> CliResult<Vec<BenchWorker>> {
    let sharded = Arc::new(sharded.map_err(|e| CliError::new(None, e))?);
    Ok((0..threads as usize)
        .map(|t| {
            let sharded = Arc::clone(&sharded);
            let (stop, total) = (Arc::clone(stop), Arc::clone(total));
            std::thread::spawn(move || -> Result<(), Error> {
                if leased {
                    flakeid::affinity::pin_current_thread(t);
                    let mut lease = sharded.shards()[t].lease()?;
                    mint_until(&stop, &total, |wait| match wait {
                        true => lease.next_id(),
                        false => lease.try_next_id(),
                    })
                } else {
                    let g = &sharded.shards()[0];
                    mint_until(&stop, &total, |wait| match wait {
                        true => g.next_id(),
                        false => g.try_next_id(),
                    })
                }
            })
        })
        .collect())
}

/// A wait for the next tick longer than this is slept in slices of at most
/// [`BENCH_SLEEP_SLICE`], checking the deadline between them; a shorter one is left to
/// `next_id`, which spins at the boundary (so a 1 ms layout still reaches its cap).
const BENCH_SLEEP_ABOVE: Duration = Duration::from_millis(1);
const BENCH_SLEEP_SLICE: Duration = Duration::from_millis(10);

/// Mints until `stop`, adding the count to `total` every 65,536 IDs and at the end.
/// `mint(false)` must not wait (`try_next_id`), `mint(true)` may (`next_id`). The deadline
/// is checked every 1,024 IDs and at every wait for a tick, so a layout that mints a few
/// IDs per second stops on time too.
fn mint_until(
    stop: &AtomicBool,
    total: &AtomicU64,
    mut mint: impl FnMut(bool) -> Result<Id, Error>,
) -> Result<(), Error> {
    let mut count = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..1024 {
            match mint(false) {
                Ok(id) => {
                    std::hint::black_box(id);
                }
                Err(Error::WouldBlock { wait }) if wait > BENCH_SLEEP_ABOVE => {
                    std::thread::sleep((wait - BENCH_SLEEP_ABOVE / 2).min(BENCH_SLEEP_SLICE));
                    break;
                }
                Err(Error::WouldBlock { .. }) => {
                    std::hint::black_box(mint(true)?);
                }
                Err(e) => return Err(e),
            }
            count += 1;
        }
        if count >= 1 << 16 {
            total.fetch_add(std::mem::take(&mut count), Ordering::Relaxed);
        }
    }
    total.fetch_add(count, Ordering::Relaxed);
    Ok(())
}

fn bench(a: BenchArgs) -> CliResult<ExitCode> {
    let layout = parse_layout(&a.layout)?;
    if a.threads == 0 || a.threads > 1024 {
        return Err(CliError::new(Some("--threads"), "must be 1..=1024"));
    }
    if !(a.seconds > 0.0 && a.seconds <= 3600.0) {
        return Err(CliError::new(Some("--seconds"), "must be in (0, 3600]"));
    }
    let shards = if a.sharded { a.threads } else { 1 };
    if shards > layout.max_nodes() {
        return Err(CliError::new(
            Some("--threads"),
            format!(
                "{shards} shards need {shards} node ids; the layout has {}",
                layout.max_nodes()
            ),
        ));
    }
    let builder = ShardedGenerator::builder(layout)
        .nodes(0..shards)
        .shards(shards as usize)
        .max_wait(Duration::from_secs(5));
    let duration = Duration::from_secs_f64(a.seconds);
    let stop = Arc::new(AtomicBool::new(false));
    let total = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let workers = if a.coarse {
        let sharded = builder.clock(CoarseClock::new()).build();
        spawn_bench(sharded, a.threads, a.sharded, &stop, &total)?
    } else {
        spawn_bench(builder.build(), a.threads, a.sharded, &stop, &total)?
    };
    let bar = io::stderr().is_terminal();
    while started.elapsed() < duration {
        std::thread::sleep(
            Duration::from_millis(100).min(duration.saturating_sub(started.elapsed())),
        );
        if bar {
            let frac = (started.elapsed().as_secs_f64() / a.seconds).min(1.0);
            let filled = (frac * 30.0) as usize;
            eprint!(
                "\r[{}{}] {:5.1}s {:>14} ids",
                "#".repeat(filled),
                " ".repeat(30 - filled),
                started.elapsed().as_secs_f64(),
                total.load(Ordering::Relaxed)
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join()
            .map_err(|_| CliError::new(None, "a bench thread panicked"))?
            .map_err(|e| CliError::new(None, e))?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    if bar {
        eprintln!();
    }
    let ids = total.load(Ordering::Relaxed);
    let rate = ids as f64 / elapsed;
    let cap = layout.ids_per_second_per_node() * shards as f64;
    print_out(&format!(
        "{ids} ids in {elapsed:.2} s: {rate:.0} ids/s, {:.1} ns/id; {:.2}% of the cap of {cap:.0} ids/s ({shards} node{})\n",
        elapsed * 1e9 / ids.max(1) as f64,
        rate / cap * 100.0,
        if shards == 1 { "" } else { "s" }
    ))?;
    Ok(ExitCode::SUCCESS)
}
