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

/// The flag of a node field: the field's own name, as decode prints it (`--machine` for
/// Sonyflake's machine id).
pub(crate) fn field_flag(field: Field) -> &'static str {
    match field {
        Field::Datacenter => "--datacenter",
        Field::Worker => "--worker",
        Field::Process => "--process",
        Field::Machine => "--machine",
        _ => "--node",
    }
}

/// The flag a node error is about: `field`'s where the user gave that flag, else the one
/// that named the node.
pub(crate) fn node_flag(field: Field, args: &NodeArgs) -> &'static str {
    match field {
        Field::Datacenter | Field::Worker | Field::Process | Field::Machine => field_flag(field),
        _ if args.machine_id_from.is_some() => "--machine-id-from",
        _ if args.node.is_none() && args.machine_id.is_some() => "--machine",
        _ => "--node",
    }
}

/// The node fields of `layout` as flags: `--node N or --datacenter D --worker W`.
fn flags_of(layout: &Layout) -> String {
    let fields = layout.node_fields();
    let mut ways = vec!["--node N".to_string()];
    if let Some((high, low)) = fields.parts() {
        let letter = |f: Field| f.name()[..1].to_uppercase();
        ways.push(format!(
            "{} {} {} {}",
            field_flag(high),
            letter(high),
            field_flag(low),
            letter(low)
        ));
    }
    if fields.machine() {
        ways.push("--machine M".into());
    }
    match ways.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The node id the flags name, checked against the layout: the library's one rule for
/// node fields ([`Layout::node_from`]), so that every field `decode` prints for `layout`
/// is a flag here, alone or with the others where they agree.
pub(crate) fn resolve_node(layout: &Layout, args: &NodeArgs) -> CliResult<u64> {
    // `--discord-worker` and `--discord-process` are Discord's names: with another layout
    // they would silently mean something else.
    let discord_flag = std::env::args()
        .skip(1)
        .find(|a| a.starts_with("--discord-worker") || a.starts_with("--discord-process"));
    if let Some(flag) = discord_flag
        && layout.node_fields().parts() != Some((Field::Worker, Field::Process))
    {
        let flag: &'static str = if flag.starts_with("--discord-worker") {
            "--discord-worker"
        } else {
            "--discord-process"
        };
        return Err(CliError::new(
            Some(flag),
            format!(
                "Discord's internal worker and process ids belong to a layout with Discord's parts (--layout discord, or parts=worker-process): this layout's node is {}",
                flags_of(layout)
            ),
        ));
    }
    let given: Vec<(Field, u64)> = [
        (Field::Node, args.node),
        (Field::Datacenter, args.datacenter),
        (Field::Worker, args.worker),
        (Field::Process, args.process),
        (Field::Machine, args.machine_id),
    ]
    .into_iter()
    .filter_map(|(f, v)| v.map(|v| (f, v)))
    .collect();
    let named = layout.node_from(&given).map_err(|e| match e {
        Error::NotANodeField { field, .. } => CliError::new(
            Some(field_flag(field)),
            format!(
                "this layout has no {field} field (its decoded IDs show {}): give {}",
                layout.node_fields(),
                flags_of(layout)
            ),
        ),
        Error::NodePartMissing { given, missing } => CliError::new(
            Some(field_flag(given)),
            format!(
                "{} needs {}: give both parts of the node (or --node N)",
                field_flag(given),
                field_flag(missing)
            ),
        ),
        Error::NodeFieldsDisagree { first, second } => CliError::new(
            Some(field_flag(second)),
            format!(
                "{} and {} name different node ids: give one of them, or values that agree (as decode prints them)",
                field_flag(first),
                field_flag(second)
            ),
        ),
        Error::OutOfRange { field, value, max } => CliError::new(
            Some(node_flag(field, args)),
            format!("{field} {value} out of range 0..={max}"),
        ),
        e => CliError::new(Some(node_flag(Field::Node, args)), e),
    })?;
    if let Some(node) = named {
        return Ok(node);
    }
    let snowflake_order = layout.order() == Order::TimeNodeSequence;
    if args.machine_id_from.is_some() && snowflake_order {
        return Err(CliError::new(
            Some("--machine-id-from"),
            format!(
                "--machine-id-from derives Sonyflake's machine id, and this layout is Snowflake-ordered (time|node|sequence): give {}",
                flags_of(layout)
            ),
        ));
    }
    // The library's builder resolves what is left: a machine id from the host, or none.
    let mut b = GeneratorBuilder::with_clock(*layout, SystemClock);
    if let Some(MachineIdSource::PrivateIp) = args.machine_id_from {
        b = b.machine_id_from_private_ip();
    }
    b.node_id().map_err(|e| match e {
        Error::NoPrivateIp => CliError::new(
            Some("--machine-id-from"),
            format!("{e}: give the machine id with --machine M (or --node N)"),
        ),
        Error::NodeMissing => {
            let hint = if snowflake_order {
                flags_of(layout)
            } else {
                format!("{}, --machine-id-from private-ip", flags_of(layout))
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

/// The warning `gen` and `serve` give on stderr when `layout` runs out within `margin`
/// of `now_ns` (Unix ns): its end, the time left, and what to do.
pub(crate) fn warn_if_ending(layout: &Layout, margin: std::time::Duration, now_ns: i128) {
    if let Some(line) = ending_text(layout, margin, now_ns) {
        eprintln!("warning: {line}");
    }
}

/// What [`warn_if_ending`] says, if anything (also `flakeid layout`'s warning and the
/// service's `/readyz` detail).
pub(crate) use flakeid_text::layout::ending_text;

/// A time flag (`compose --time`, `range --from`/`--to`): Unix milliseconds (digits only),
/// or RFC 3339 with the expanded years `decode` prints past 9999.
pub(crate) use flakeid_text::range::parse_instant as parse_time;
