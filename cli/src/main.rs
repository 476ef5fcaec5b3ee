//! `flakeid`: mint, decode, compose and explain Snowflake-family IDs from the shell. One
//! file per subcommand; this one runs them and holds what they share (errors, the node
//! flags, output that ends quietly on a closed pipe).

mod args;
mod bench;
mod claims;
mod compose;
mod decode;
mod generate;
mod layout;
#[cfg(feature = "serve")]
mod serve;
mod stores;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;
use flakeid::clock::SystemClock;
use flakeid::error::Field;
use flakeid::layout::Order;
use flakeid::{Clock, Error, GeneratorBuilder, Layout};

use args::{Cli, Command, LayoutArg, MachineIdSource, NodeArgs};

/// An error with the flag it concerns, printed as `error: --flag: message`.
pub(crate) struct CliError {
    flag: Option<&'static str>,
    message: String,
}

impl CliError {
    pub(crate) fn new(flag: Option<&'static str>, e: impl std::fmt::Display) -> Self {
        CliError {
            flag,
            message: e.to_string(),
        }
    }
}

pub(crate) type CliResult<T = ()> = Result<T, CliError>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Gen(a) => generate::run(a),
        Command::Decode(a) => decode::run(a),
        Command::Compose(a) => compose::run(a),
        Command::Layout(a) => layout::run(a),
        Command::Claims(a) => claims::run(a),
        Command::Bench(a) => bench::run(a),
        #[cfg(feature = "serve")]
        Command::Serve(a) => serve::run(a),
        #[cfg(not(feature = "serve"))]
        Command::Serve(_) => Err(CliError::new(
            None,
            "this flakeid was built without the service (feature `serve` turned off): install it with `cargo install --locked flakeid-cli`",
        )),
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
pub(crate) fn warn(line: std::fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// The `--layout`, refusing an epoch ahead of the clock (the library's layout string does
/// not judge that; `LayoutBuilder::build` does).
pub(crate) fn parse_layout(arg: &LayoutArg) -> CliResult<Layout> {
    // The library names its own API; the tool says the same with its own command.
    let flag = |e: Error| {
        let text = match e {
            Error::Parse(flakeid::ParseError::UnknownPreset) => format!(
                "unknown layout: the presets are {}, names ignoring case (`flakeid layout --list` shows them); or give key=value pairs such as seq=12,node=10,epoch=2024-01-01T00:00:00Z",
                flakeid::layout::PresetNames
            ),
            e => e.to_string(),
        };
        CliError::new(Some("--layout"), format!("{:?}: {text}", arg.layout))
    };
    let layout: Layout = arg.layout.parse().map_err(flag)?;
    if layout.epoch_unix_ns() > i128::from(flakeid::clock::SystemClock.unix_ns()) {
        return Err(flag(Error::EpochInFuture {
            epoch_unix_ms: layout.epoch_unix_ms(),
        }));
    }
    Ok(layout)
}

pub(crate) fn node_flag(field: Field, args: &NodeArgs) -> &'static str {
    match field {
        Field::Datacenter => "--datacenter",
        Field::Worker => "--worker",
        _ if args.machine_id.is_some() => "--machine-id",
        _ if args.machine_id_from.is_some() => "--machine-id-from",
        _ => "--node",
    }
}

/// The node id the flags name, checked against the layout.
pub(crate) fn resolve_node(layout: &Layout, args: &NodeArgs) -> CliResult<u64> {
    // `--discord-worker` and `--discord-process` are `--datacenter` and `--worker` under
    // Discord's names: with another layout they would silently mean something else.
    let discord_flag = std::env::args()
        .skip(1)
        .find(|a| a.starts_with("--discord-worker") || a.starts_with("--discord-process"));
    if let Some(flag) = discord_flag
        && *layout != Layout::discord()
    {
        let flag: &'static str = if flag.starts_with("--discord-worker") {
            "--discord-worker"
        } else {
            "--discord-process"
        };
        return Err(CliError::new(
            Some(flag),
            "Discord's internal worker and process ids belong to the Discord layout: add --layout discord, or give --datacenter D --worker W for a Snowflake layout",
        ));
    }
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
    // The flags become the library's builder settings, which resolve and check the id;
    // here only the errors learn which flag they are about.
    let mut b = GeneratorBuilder::with_clock(*layout, SystemClock);
    if let Some(n) = args.node.or(args.machine_id) {
        b = b.node(n);
    } else if let (Some(d), Some(w)) = (args.datacenter, args.worker) {
        b = b.datacenter(d).worker(w);
    } else if let Some(MachineIdSource::PrivateIp) = args.machine_id_from {
        b = b.machine_id_from_private_ip();
    }
    b.node_id().map_err(|e| match e {
        Error::OutOfRange { field, .. } => CliError::new(Some(node_flag(field, args)), e),
        Error::NoDatacenterField => CliError::new(
            Some("--datacenter"),
            "the layout has no datacenter field: give --machine-id M or --node N",
        ),
        Error::NoPrivateIp => CliError::new(
            Some("--machine-id-from"),
            format!("{e}: give the machine id with --machine-id M (or --node N)"),
        ),
        Error::NodeMissing => {
            let hint = if layout.datacenter_bits() > 0 {
                "--datacenter D --worker W, or --node N"
            } else if !snowflake_order {
                "--machine-id M, --machine-id-from private-ip, or --node N"
            } else {
                "--node N"
            };
            CliError::new(
                None,
                format!(
                    "the layout has {} node bits: give a node id with {hint}",
                    layout.node_bits()
                ),
            )
        }
        e => CliError::new(Some(node_flag(Field::Node, args)), e),
    })
}

pub(crate) fn io_err(e: io::Error) -> CliError {
    CliError::new(None, e)
}

/// `flakeid gen | head` closes the pipe early; that is not an error, for any subcommand.
pub(crate) fn quiet_on_broken_pipe<T>(e: io::Error) -> CliResult<T> {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    Err(io_err(e))
}

/// Writes `text` to standard output, a closed pipe being a normal end.
pub(crate) fn print_out(text: &str) -> CliResult {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .or_else(quiet_on_broken_pipe)
}
