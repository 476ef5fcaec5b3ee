//! The flags every minting subcommand shares: `--layout`, and the node flags
//! (`--node`, `--datacenter`/`--worker`, Discord's names, Sonyflake's machine id) made into
//! the library's builder settings, each error said with the flag it is about.

use flakeid::clock::SystemClock;
use flakeid::error::Field;
use flakeid::layout::Order;
use flakeid::{Clock, Error, GeneratorBuilder, Layout};

use crate::args::{LayoutArg, MachineIdSource, NodeArgs};
use crate::out::{CliError, CliResult};

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

/// The flag a node field came from; the node's parts by the names decode shows for
/// `layout` (Discord's high part is its worker).
pub(crate) fn node_flag(field: Field, args: &NodeArgs, layout: &Layout) -> &'static str {
    match field {
        Field::Datacenter | Field::Worker => {
            let f = flakeid_text::NodeFields::of(layout);
            let name = if field == Field::Datacenter {
                f.split_names.0
            } else {
                f.split_names.1
            };
            part_flag(name)
        }
        _ if args.machine_id.is_some() => "--machine-id",
        _ if args.machine_id_from.is_some() => "--machine-id-from",
        _ => "--node",
    }
}

/// The flag of a node part named as decode names it.
fn part_flag(name: &str) -> &'static str {
    match name {
        "datacenter" => "--datacenter",
        "process" => "--process",
        _ => "--worker",
    }
}

/// The node's two parts, `(high, low)`, from the flags named as decode names them for the
/// layout (`--datacenter` and `--worker`; Discord's `--worker` and `--process`); `None`
/// when no part flag was given.
fn node_parts(layout: &Layout, args: &NodeArgs) -> CliResult<Option<(u64, u64)>> {
    let given = [
        ("datacenter", args.datacenter),
        ("worker", args.worker),
        ("process", args.process),
    ];
    let Some((first, _)) = given.iter().find(|(_, v)| v.is_some()) else {
        return Ok(None);
    };
    let f = flakeid_text::NodeFields::of(layout);
    if !f.datacenter_worker {
        let hint = match layout.node_bits() {
            0 => "the layout has no node field: give no node flags",
            _ if f.machine => {
                "the layout does not split its node field: give --machine-id M or --node N"
            }
            _ => "the layout does not split its node field: give --node N",
        };
        return Err(CliError::new(Some(part_flag(first)), hint));
    }
    let (high, low) = f.split_names;
    if let Some((other, _)) = given
        .iter()
        .find(|(n, v)| v.is_some() && *n != high && *n != low)
    {
        return Err(CliError::new(
            Some(part_flag(other)),
            format!(
                "this layout's node is {high} and {low}, as decode names them: give {} and {} (or --node N)",
                part_flag(high),
                part_flag(low)
            ),
        ));
    }
    let value = |name: &str| given.iter().find(|(n, _)| *n == name).and_then(|(_, v)| *v);
    match (value(high), value(low)) {
        (Some(h), Some(l)) => Ok(Some((h, l))),
        (h, _) => {
            let (given, missing) = if h.is_some() {
                (high, low)
            } else {
                (low, high)
            };
            Err(CliError::new(
                Some(part_flag(given)),
                format!(
                    "{} needs {}: give both parts of the node (or --node N)",
                    part_flag(given),
                    part_flag(missing)
                ),
            ))
        }
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
        let flag = node_flag(Field::Node, args, layout);
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
    } else if let Some((high, low)) = node_parts(layout, args)? {
        b = b.datacenter(high).worker(low);
    } else if let Some(MachineIdSource::PrivateIp) = args.machine_id_from {
        b = b.machine_id_from_private_ip();
    }
    b.node_id().map_err(|e| match e {
        Error::OutOfRange {
            field: field @ (Field::Datacenter | Field::Worker),
            value,
            max,
        } => {
            // Said by the names decode shows (Discord's high part is its worker).
            let flag = node_flag(field, args, layout);
            CliError::new(
                Some(flag),
                format!("{} {value} out of range 0..={max}", &flag[2..]),
            )
        }
        Error::OutOfRange { field, .. } => CliError::new(Some(node_flag(field, args, layout)), e),
        Error::NoPrivateIp => CliError::new(
            Some("--machine-id-from"),
            format!("{e}: give the machine id with --machine-id M (or --node N)"),
        ),
        Error::NodeMissing => {
            let (high, low) = flakeid_text::NodeFields::of(layout).split_names;
            let parts = format!("{} and {}, or --node N", part_flag(high), part_flag(low));
            let hint = if layout.datacenter_bits() > 0 {
                parts.as_str()
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
        e => CliError::new(Some(node_flag(Field::Node, args, layout)), e),
    })
}

/// A time flag (`compose --time`, `range --from`/`--to`): Unix milliseconds (digits only),
/// or RFC 3339 with the expanded years `decode` prints past 9999.
pub(crate) use flakeid_text::range::parse_instant as parse_time;
