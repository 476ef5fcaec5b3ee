//! The `flakeid` binary, run as a user would.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn flakeid(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = flakeid(args, None);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Fails with a message on stderr, a non-zero status, and no panic.
fn fails(args: &[&str], stdin: Option<&str>, message: &str) -> Output {
    let out = flakeid(args, stdin);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert!(err.contains(message), "{args:?}: {err:?} lacks {message:?}");
    out
}

/// The value of a JSON key in one flat JSON object line (strings without quotes).
fn json_value<'a>(line: &'a str, key: &str) -> &'a str {
    let pat = format!("\"{key}\":");
    let at = line.find(&pat).unwrap_or_else(|| panic!("{key} in {line}")) + pat.len();
    let rest = &line[at..];
    let end = rest.find([',', '}']).unwrap();
    rest[..end].trim_matches('"')
}

#[test]
fn compose_gives_the_worked_examples() {
    assert_eq!(
        ok(&[
            "compose",
            "--time",
            "2026-10-31T12:00:00Z",
            "--sequence",
            "42",
            "--datacenter",
            "3",
            "--worker",
            "17"
        ]),
        "2116500430648709162\n"
    );
    assert_eq!(
        ok(&[
            "compose",
            "--layout",
            "sonyflake",
            "--time",
            "2026-10-31T12:00:00Z",
            "--sequence",
            "7",
            "--machine-id",
            "2565"
        ]),
        "96902515261901317\n"
    );
    assert_eq!(
        ok(&[
            "compose",
            "--layout",
            "sonyflake",
            "--ticks",
            "5775840000",
            "--sequence",
            "7",
            "--machine-id",
            "2565"
        ]),
        "96902515261901317\n"
    );
}

#[test]
fn decode_json_gives_the_worked_examples() {
    let line = ok(&["decode", "--json", "2116500430648709162"]);
    assert_eq!(json_value(&line, "id"), "2116500430648709162");
    assert!(
        line.contains("\"id\":\"2116500430648709162\""),
        "id is a string"
    );
    assert_eq!(json_value(&line, "ticks"), "504613025343");
    assert_eq!(json_value(&line, "unix_ms"), "1793448000000");
    assert_eq!(json_value(&line, "time"), "2026-10-31T12:00:00.000Z");
    assert_eq!(json_value(&line, "sequence"), "42");
    assert_eq!(json_value(&line, "node"), "113");
    assert_eq!(json_value(&line, "datacenter"), "3");
    assert_eq!(json_value(&line, "worker"), "17");
    assert!(!line.contains("machine"));

    let line = ok(&[
        "decode",
        "--layout",
        "sonyflake",
        "--json",
        "96902515261901317",
    ]);
    assert_eq!(json_value(&line, "time"), "2026-10-31T12:00:00.000Z");
    assert_eq!(json_value(&line, "sequence"), "7");
    assert_eq!(json_value(&line, "machine"), "2565");
    assert!(!line.contains("datacenter"));
    // The same ID in hex and base32 decodes the same.
    let hex = ok(&["decode", "--json", "0x1d5f51ed8fc7102a"]);
    assert_eq!(json_value(&hex, "ticks"), "504613025343");
}

#[test]
fn layout_json_for_the_presets() {
    for (name, years, end, rate, nodes) in [
        (
            "snowflake",
            "69.68",
            "2080-07-10T17:30:30.209Z",
            "4096000",
            "1024",
        ),
        (
            "sonyflake",
            "174.21",
            "2199-03-19T03:28:58.880Z",
            "25600",
            "65536",
        ),
        (
            "sonyflake-v1",
            "174.21",
            "2188-11-16T03:28:58.880Z",
            "25600",
            "65536",
        ),
    ] {
        let line = ok(&["layout", "--layout", name, "--json"]);
        assert_eq!(json_value(&line, "lifetime_years"), years, "{name}");
        assert_eq!(json_value(&line, "end"), end, "{name}");
        assert_eq!(json_value(&line, "ids_per_second_per_node"), rate);
        assert_eq!(json_value(&line, "max_nodes"), nodes);
        for key in [
            "time_bits",
            "sequence_bits",
            "node_bits",
            "unit_ns",
            "epoch_unix_ms",
        ] {
            json_value(&line, key);
        }
    }
}

#[test]
fn gen_mints_unique_increasing_ids() {
    let out = ok(&["gen", "-n", "100000", "--datacenter", "1", "--worker", "2"]);
    let ids: Vec<u64> = out.lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(ids.len(), 100_000);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    // And they decode to the node asked for, in every format.
    for format in ["hex", "base32", "json"] {
        let out = ok(&["gen", "-n", "3", "--node", "5", "--format", format]);
        let first = out.lines().next().unwrap().trim_matches('"');
        let decoded = ok(&["decode", "--json", first]);
        assert_eq!(json_value(&decoded, "node"), "5", "{format}");
    }
}

#[test]
fn decode_streams_stdin_and_reports_bad_lines() {
    let ids = ok(&["gen", "-n", "3", "--node", "9"]);
    let input = format!(
        "{ids}not-a-number\n9223372036854775808\n\n{}",
        ids.lines().next().unwrap()
    );
    let out = fails(&["decode", "--json"], Some(&input), "line 4");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 5"), "{err}");
    assert!(err.contains("63 bits"), "{err}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 4, "{stdout}");
    assert!(stdout.lines().all(|l| json_value(l, "node") == "9"));
}

#[test]
fn bad_input_is_a_message_and_a_nonzero_status() {
    fails(&["decode", "12x"], None, "invalid character");
    fails(&["decode", "99999999999999999999"], None, "63 bits");
    fails(
        &[
            "decode",
            "--layout",
            "seq=8,node=8,time=20",
            "4611686018427387904",
        ],
        None,
        "does not fit",
    );
    fails(
        &["gen", "--node", "1024"],
        None,
        "--node: node 1024 out of range 0..=1023",
    );
    fails(
        &["gen", "--datacenter", "1", "--worker", "32"],
        None,
        "--worker",
    );
    fails(
        &["gen", "--layout", "sonyflake", "--machine-id", "65536"],
        None,
        "--machine-id",
    );
    fails(&["gen"], None, "give a node id");
    fails(
        &["gen", "--layout", "nosuch", "--node", "1"],
        None,
        "--layout",
    );
    fails(&["layout", "--layout", "seq=40,node=40"], None, "--layout");
    fails(
        &["compose", "--time", "yesterday", "--node", "1"],
        None,
        "--time",
    );
    fails(
        &["compose", "--time", "2000-01-01T00:00:00Z", "--node", "1"],
        None,
        "before the layout's epoch",
    );
    fails(
        &[
            "compose",
            "--ticks",
            "5",
            "--sequence",
            "4096",
            "--node",
            "1",
        ],
        None,
        "--sequence",
    );
    fails(&["bench", "--threads", "0"], None, "--threads");
}

#[test]
fn every_subcommand_has_help_with_an_example() {
    for sub in ["gen", "decode", "compose", "layout", "bench"] {
        let help = ok(&[sub, "--help"]);
        assert!(help.contains("Example"), "{sub}: {help}");
    }
    assert!(ok(&["--help"]).contains("Examples"));
    let layout_help = ok(&["gen", "--help"]);
    assert!(layout_help.contains("epoch (RFC 3339"));
}

#[test]
fn bench_reports_a_rate() {
    let out = ok(&[
        "bench",
        "--seconds",
        "0.2",
        "--layout",
        "seq=12,node=2,epoch=2025-01-01T00:00:00Z",
    ]);
    assert!(
        out.contains("ids/s") && out.contains("% of the cap"),
        "{out}"
    );
}

/// Found by the `parse` fuzz target: base32 text that starts with `0X` reads as hex in
/// `auto`; `--encoding base32` reads it exactly.
#[test]
fn decode_encoding_flag_settles_base32_that_looks_like_hex_or_decimal() {
    let auto = ok(&["decode", "--json", "0X7FFFFFFFFFF"]);
    assert_eq!(json_value(&auto, "id"), "8796093022207");
    let exact = ok(&["decode", "--json", "--encoding", "base32", "0X7FFFFFFFFFF"]);
    assert_eq!(json_value(&exact, "id"), "1053261203175357935");
    let digits = ok(&["decode", "--json", "--encoding", "base32", "0000000000110"]);
    assert_eq!(json_value(&digits, "id"), "1056");
    let hex = ok(&[
        "decode",
        "--json",
        "--encoding",
        "hex",
        "0x1d5f51ed8fc7102a",
    ]);
    assert_eq!(json_value(&hex, "id"), "2116500430648709162");
    let out = flakeid(
        &["decode", "--encoding", "hex", "2116500430648709162"],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "decimal is not hex");
}

#[test]
fn layout_shows_whether_ids_are_javascript_safe() {
    let js = ok(&["layout", "--layout", "js-safe", "--json"]);
    assert_eq!(json_value(&js, "bits"), "53");
    assert_eq!(json_value(&js, "javascript_safe"), "true");
    assert_eq!(json_value(&js, "ids_per_second_per_node"), "128000");
    assert_eq!(json_value(&js, "max_nodes"), "32");
    assert!(json_value(&js, "lifetime_years").starts_with("69.68"));
    let table = ok(&["layout", "--layout", "js-safe"]);
    assert!(table.contains("53 bits (JavaScript-safe)"), "{table}");
    let snow = ok(&["layout", "--json"]);
    assert_eq!(json_value(&snow, "javascript_safe"), "false");
}
