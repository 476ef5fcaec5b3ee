//! `flakeid layout`: a layout's facts, and warnings about what would surprise.

use std::process::ExitCode;

use flakeid::rfc3339::Timestamp;
use flakeid::{Clock, Layout};

use flakeid::layout::Order;
use flakeid_text::layout::{layout_json, preset_of, rate_text};

use crate::args::LayoutArgs;
use crate::flags::parse_layout;
use crate::out::{CliResult, print_out, warn};

/// What a user should know before using a layout: printed on standard error.
fn layout_warnings(l: &Layout, text: &str) -> Vec<String> {
    let now = i128::from(flakeid::clock::SystemClock.unix_ns());
    let end = Timestamp(l.end_unix_ns());
    let mut warnings = Vec::new();
    // The generator's and the service's warning, from the same margin (a year).
    warnings.extend(crate::flags::ending_text(
        l,
        flakeid::layout::END_WARNING,
        now,
    ));
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
            Timestamp(i128::from(flakeid::layout::CLOCK_END_UNIX_NS))
        ));
    }
    warnings
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// The facts of one layout as a table.
fn layout_table(l: &Layout) -> String {
    use std::fmt::Write as _;
    let end = Timestamp(l.end_unix_ns());
    let epoch = Timestamp(l.epoch_unix_ns());
    // Tick 0 starts on a multiple of the unit, which is the epoch only if it is on one.
    let first_tick = l.unix_ns_of(0).unwrap_or(0);
    let first = Timestamp(first_tick);
    let mut t = String::new();
    if let Some(p) = preset_of(l) {
        let mut names = p.name.to_owned();
        for a in p.aliases {
            let _ = write!(names, ", {a}");
        }
        let _ = writeln!(t, "preset          {names}");
        let _ = writeln!(t, "source          {}", p.source);
        if let Some(note) = p.note {
            let _ = writeln!(t, "note            {note}");
        }
    }
    let _ = writeln!(t, "layout          {l}");
    let _ = writeln!(t, "fields          {}", field_diagram(l));
    let _ = writeln!(t, "unit            {:?}", l.unit());
    let _ = writeln!(t, "epoch           {epoch}");
    if first_tick != l.epoch_unix_ns() {
        let _ = writeln!(
            t,
            "tick 0 starts   {first} (the epoch is not on a unit boundary: ticks start at Unix multiples of the unit; grid=epoch counts from the epoch instead)"
        );
    }
    let _ = writeln!(t, "lifetime        {:.2} years", l.lifetime_years());
    let _ = writeln!(
        t,
        "ends            {end} (first instant that no longer fits)"
    );

    let _ = writeln!(
        t,
        "IDs/s per node  {}",
        rate_text(l.ids_per_second_per_node())
    );
    let _ = writeln!(t, "nodes           {}", l.node_count());
    let _ = writeln!(t, "ID width        {} bits", l.bits());
    let _ = writeln!(t, "fits i64        {}", yes_no(l.is_i64_safe()));
    let _ = writeln!(t, "fits JavaScript {}", yes_no(l.is_javascript_safe()));
    t
}

pub(crate) fn run(a: LayoutArgs) -> CliResult<ExitCode> {
    if a.list {
        let mut text = String::new();
        for (i, p) in Layout::presets().iter().enumerate() {
            if a.json {
                text.push_str(&layout_json(&p.layout));
                text.push('\n');
            } else {
                if i > 0 {
                    text.push('\n');
                }
                text.push_str(&layout_table(&p.layout));
            }
        }
        print_out(&text)?;
        return Ok(ExitCode::SUCCESS);
    }
    let l = parse_layout(&a.layout)?;
    let text = if a.json {
        layout_json(&l) + "\n"
    } else {
        layout_table(&l)
    };
    for w in layout_warnings(&l, &a.layout.layout) {
        warn(format_args!("warning: {w}"));
    }
    print_out(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn field_diagram(l: &Layout) -> String {
    let node = if l.datacenter_bits() > 0 {
        let (high, low) = l.node_parts().fields();
        format!("{high} {} | {low} {}", l.datacenter_bits(), l.worker_bits())
    } else {
        format!("node {}", l.node_bits())
    };
    let pad = match 64 - l.bits() {
        0 => String::new(),
        1 => "0 | ".to_owned(),
        n => format!("0 x{n} | "),
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
