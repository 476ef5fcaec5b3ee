//! The `flakeid` binary, run as a user would.

use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn flakeid(args: &[&str], stdin: Option<&str>) -> Output {
    flakeid_bytes(args, stdin.unwrap_or("").as_bytes())
}

/// Runs the binary with `stdin` as its standard input (written from a thread, so a large
/// input cannot deadlock against a full stdout pipe).
fn flakeid_bytes(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// Runs the binary and waits at most `bound` for it to end by itself; a run that does
/// not end is killed and the test fails.
fn flakeid_within(args: &[&str], bound: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > bound {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{args:?} still running after {bound:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
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

/// `layout --list`: every preset the library has, each with its caps and source, in text
/// and as JSON lines that agree with the library's own answers.
#[test]
fn layout_list_shows_every_preset_with_its_caps() {
    let presets = flakeid::Layout::presets();
    let json = ok(&["layout", "--list", "--json"]);
    let lines: Vec<&str> = json.lines().collect();
    assert_eq!(lines.len(), presets.len());
    for (p, line) in presets.iter().zip(&lines) {
        assert_eq!(json_value(line, "preset"), p.name);
        assert!(
            line.contains(&format!("\"layout\":\"{}\"", p.layout)),
            "{line}"
        );
        assert_eq!(
            json_value(line, "i64_safe"),
            p.layout.is_i64_safe().to_string()
        );
        assert_eq!(
            json_value(line, "javascript_safe"),
            p.layout.is_javascript_safe().to_string()
        );
        assert_eq!(json_value(line, "bits"), p.layout.bits().to_string());
        assert!(!json_value(line, "source").is_empty());
    }
    let text = ok(&["layout", "--list"]);
    for name in [
        "snowflake, twitter",
        "discord",
        "instagram",
        "mastodon",
        "js-safe, javascript-safe",
    ] {
        assert!(
            text.contains(&format!("preset          {name}\n")),
            "{name}: {text}"
        );
    }
    assert_eq!(text.matches("fits i64        no").count(), 3, "{text}");
    assert_eq!(text.matches("fits JavaScript yes").count(), 1, "{text}");
    let discord = ok(&["layout", "--layout", "discord"]);
    assert!(
        discord.contains("fields          time 42 | worker 5 | process 5 | sequence 12"),
        "{discord}"
    );
    assert!(
        discord.contains("fits i64        no") && discord.contains("internal worker id"),
        "{discord}"
    );
    // --list takes no layout.
    fails(
        &["layout", "--list", "--layout", "discord"],
        None,
        "cannot be used with",
    );
}

/// IDs of 2^63 and more through the CLI: decoded, composed and minted under a 64-bit
/// layout, in every encoding; refused by a 63-bit one with a pointer to the 64-bit presets.
#[test]
fn ids_past_2_63_through_the_cli() {
    let decoded = ok(&[
        "decode",
        "--json",
        "--layout",
        "discord",
        "9223372036854775808",
    ]);
    assert_eq!(json_value(&decoded, "time"), "2084-09-06T15:47:35.552Z");
    for text in [
        "18446744073709551615",
        "0xffffffffffffffff",
        "FZZZZZZZZZZZZ",
    ] {
        let d = ok(&["decode", "--json", "--layout", "discord", text]);
        assert_eq!(json_value(&d, "id"), "18446744073709551615", "{text}");
        assert_eq!(json_value(&d, "sequence"), "4095");
    }
    let composed = ok(&[
        "compose",
        "--layout",
        "discord",
        "--time",
        "2090-01-01T00:00:00Z",
        "--sequence",
        "1",
        "--discord-worker",
        "3",
        "--discord-process",
        "4",
    ]);
    let id: u64 = composed.trim().parse().unwrap();
    assert!(id >= 1 << 63, "{id}");
    let back = ok(&["decode", "--json", "--layout", "discord", composed.trim()]);
    assert_eq!(json_value(&back, "time"), "2090-01-01T00:00:00.000Z");
    assert_eq!(
        (json_value(&back, "worker"), json_value(&back, "process")),
        ("3", "4")
    );
    let err = fails(&["decode", "9223372036854775808"], None, "--layout NAME");
    assert!(String::from_utf8_lossy(&err.stderr).contains("discord"));
    for format in ["hex", "base32", "json"] {
        let out = ok(&["gen", "--layout", "mastodon", "-n", "2", "--format", format]);
        let first = out.lines().next().unwrap().trim_matches('"');
        let d = ok(&["decode", "--json", "--layout", "mastodon", first]);
        assert_eq!(json_value(&d, "node"), "0", "{format}");
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
    fails(&["decode", "12x"], None, "not an ID");
    fails(&["decode", "99999999999999999999"], None, "64 bits");
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
        &["gen", "--layout", "sonyflake", "--machine", "65536"],
        None,
        "--machine: machine 65536 out of range 0..=65535",
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
    for sub in ["gen", "decode", "compose", "layout", "range", "bench"] {
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
    bench_ticks_add_up(&out);
}

/// The bench's account of the ticks adds up: the ticks it minted in and those it lost make
/// the ticks it spanned, and each lost one has its reason (late from a wait, or passed
/// while minting). Returns (spanned, minted in, lost late, lost while minting).
fn bench_ticks_add_up(out: &str) -> [u64; 4] {
    let line = out
        .lines()
        .find(|l| l.starts_with("ticks: "))
        .unwrap_or_else(|| panic!("no ticks line: {out}"));
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit() && c != '.')
        .filter(|w| !w.is_empty() && !w.contains('.'))
        .map(|w| w.parse().unwrap())
        .collect();
    // minted in M of S; L lost (P%): A woke late..., B passed while minting
    let [minted, spanned, lost, late, preempted] = numbers[..] else {
        panic!("{line}");
    };
    assert!(spanned > 0, "{line}");
    assert_eq!(minted + lost, spanned, "{line}");
    assert_eq!(late + preempted, lost, "{line}");
    [spanned, minted, late, preempted]
}

/// On a layout of one ID a tick, every ID but the first follows a wait for the next
/// tick: it mints in as many ticks as it mints IDs, and a lost tick can only have been
/// lost waking late.
#[test]
fn bench_counts_the_ticks_it_lost_and_why() {
    let out = ok(&[
        "bench",
        "--seconds",
        "0.3",
        "--layout",
        "time=41,seq=0,node=2,epoch=2025-01-01T00:00:00Z",
    ]);
    let [_spanned, minted, _late, preempted] = bench_ticks_add_up(&out);
    let ids: u64 = out.split(' ').next().unwrap().parse().unwrap();
    assert!(ids > 0, "{out}");
    assert_eq!(minted, ids, "{out}");
    assert_eq!(
        preempted, 0,
        "with one ID a tick none is lost while minting: {out}"
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
    assert!(table.contains("fits JavaScript yes"), "{table}");
    let snow = ok(&["layout", "--json"]);
    assert_eq!(json_value(&snow, "javascript_safe"), "false");
}

/// Invalid UTF-8 is one bad line: every good line before and after it is decoded (all
/// 5,000 before it, not the 4,096 of a full batch), it is reported with its number, and
/// the exit status is 1 at the end. A UTF-8 byte order mark at the start is skipped.
#[test]
fn decode_keeps_every_good_line_around_bytes_that_are_not_utf8() {
    let out = flakeid_bytes(
        &["decode", "--json"],
        b"2116500430648709162\n\xff\n2116500430648709163\n",
    );
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let ids: Vec<&str> = stdout.lines().map(|l| json_value(l, "id")).collect();
    assert_eq!(ids, ["2116500430648709162", "2116500430648709163"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2") && err.contains("not UTF-8"), "{err}");

    let good = ok(&["gen", "-n", "5000", "--node", "3"]);
    let mut input = good.clone().into_bytes();
    input.extend_from_slice(b"\xc3\x28\n");
    input.extend_from_slice(good.lines().next().unwrap().as_bytes());
    let out = flakeid_bytes(&["decode", "--json"], &input);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 5001);
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 5001"));

    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(good.lines().next().unwrap().as_bytes());
    let out = flakeid_bytes(&["decode", "--json"], &bom);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 1);
}

/// Every subcommand ends quietly (exit 0, nothing on stderr) when its reader has gone:
/// `flakeid layout | head -1` and friends.
#[test]
fn a_closed_stdout_is_a_normal_end_for_every_subcommand() {
    for args in [
        &["layout"][..],
        &["layout", "--json"],
        &["compose", "--ticks", "1", "--node", "1"],
        &["decode", "2116500430648709162"],
        &["gen", "-n", "100000", "--node", "1"],
        &["bench", "--seconds", "0.1"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader); // Every write now fails with EPIPE.
        let out = Command::new(env!("CARGO_BIN_EXE_flakeid"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

/// What `gen --format json` and `decode --json` write, `decode` reads back.
#[test]
fn decode_reads_its_own_json_and_gens_json() {
    let gen_json = ok(&["gen", "-n", "3", "--node", "4", "--format", "json"]);
    let decoded = flakeid(&["decode", "--json"], Some(&gen_json));
    assert!(decoded.status.success(), "{decoded:?}");
    let first = String::from_utf8(decoded.stdout).unwrap();
    assert_eq!(first.lines().count(), 3);
    assert!(first.lines().all(|l| json_value(l, "node") == "4"));
    // Its own output, and a numeric id field, decode to the same rows.
    let again = ok_with(&["decode", "--json"], &first);
    assert_eq!(again, first);
    let numeric = ok_with(&["decode", "--json"], "{\"id\": 2116500430648709162}\n");
    assert_eq!(json_value(&numeric, "worker"), "17");
    fails(&["decode"], Some("{\"name\":1}\n"), "JSON without an ID");
}

fn ok_with(args: &[&str], stdin: &str) -> String {
    let out = flakeid(args, Some(stdin));
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Every message says what to do.
#[test]
fn errors_say_what_to_do() {
    fails(
        &["gen", "--layout", "sonyflake_v1", "--node", "1"],
        None,
        "mastodon, js-safe",
    );
    fails(&["decode", "7ZZZZZZZZZZZ"], None, "13-character base32");
    fails(&["decode", "1d5f51ed8fc7102a"], None, "--encoding hex");
    fails(
        &[
            "gen",
            "--layout",
            "sonyflake",
            "--datacenter",
            "1",
            "--worker",
            "2",
        ],
        None,
        "give --node N or --machine M",
    );
    fails(&["gen", "--machine-id", "5"], None, "no machine field");
    fails(&["compose", "--node", "1"], None, "--ticks");
    fails(
        &[
            "layout",
            "--layout",
            "seq=1,node=1,epoch=2999-01-01T00:00:00Z",
        ],
        None,
        "lies in the future",
    );
    fails(
        &["compose", "--time", "2000-01-01T00:00:00Z", "--node", "1"],
        None,
        "before the layout's epoch 2010-11-04T01:42:54.657Z",
    );
    fails(
        &["gen", "--node", "-1"],
        None,
        "must be a non-negative integer",
    );
    fails(
        &["gen", "-n", "-5", "--node", "1"],
        None,
        "must be a non-negative integer",
    );
    let help = ok(&["gen", "--help"]);
    assert!(
        help.contains("twitter") && help.contains("ignore case"),
        "{help}"
    );
}

/// A bad line is echoed at most 80 characters; no table header without rows; an empty
/// argument is skipped like a blank line.
#[test]
fn bad_lines_are_echoed_short_and_empty_input_is_skipped() {
    let long = "x".repeat(10_000);
    let out = fails(&["decode"], Some(&long), "line 1");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.len() < 400, "{} bytes echoed", err.len());
    assert!(err.contains("(10000 bytes)"), "{err}");
    assert!(out.stdout.is_empty(), "header without rows");
    // Past the line limit, a line is reported by the limit (and skipped to its end).
    let out = fails(&["decode"], Some(&"x".repeat(1_000_000)), "line 1");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.len() < 400 && err.contains("longer than 65536 bytes"),
        "{err}"
    );
    assert_eq!(ok(&["decode", ""]), "");
    assert_eq!(ok_with(&["decode"], "\n  \n"), "");
    let both = ok(&["decode", "", "2116500430648709162"]);
    assert_eq!(both.lines().count(), 2, "header and one row: {both}");
}

/// Every time decode prints, compose reads back, also past 9999 (expanded years) and as
/// Unix milliseconds; the layout report warns about what would surprise.
#[test]
fn decoded_times_compose_back_and_layout_warns() {
    let far = "time=41,seq=12,node=10,unit=1s,epoch=2025-01-01T00:00:00Z";
    let id = ok(&[
        "compose",
        "--layout",
        far,
        "--time",
        "+71654-01-01T00:00:00Z",
        "--node",
        "1",
    ]);
    let line = ok(&["decode", "--layout", far, "--json", id.trim()]);
    assert_eq!(json_value(&line, "time"), "+71654-01-01T00:00:00.000Z");
    let back = ok(&[
        "compose",
        "--layout",
        far,
        "--time",
        json_value(&line, "time"),
        "--node",
        "1",
    ]);
    assert_eq!(back, id);
    let by_ms = ok(&[
        "compose",
        "--layout",
        far,
        "--time",
        json_value(&line, "unix_ms"),
        "--node",
        "1",
    ]);
    assert_eq!(by_ms, id);

    let out = flakeid(&["layout", "--layout", far], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("generators stop at 2554"), "{err}");
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("unit=1s"), "{table}");
    let out = flakeid(&["layout", "--layout", "seq=12,node=10"], None);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no epoch= given"));
    let out = flakeid(
        &[
            "layout",
            "--layout",
            "time=20,seq=1,node=1,epoch=2024-01-01T00:00:00Z",
        ],
        None,
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("the layout ran out at"));
    let odd = ok(&[
        "layout",
        "--layout",
        "seq=8,node=4,unit=3ms,epoch=2025-01-01T00:00:00.001Z",
        "--json",
    ]);
    assert_eq!(json_value(&odd, "ids_per_second_per_node"), "85333.33");
    assert_eq!(
        json_value(&odd, "first_tick_starts"),
        "2025-01-01T00:00:00.000Z"
    );
    assert!(
        ok(&[
            "layout",
            "--layout",
            "seq=8,node=4,unit=3ms,epoch=2025-01-01T00:00:00.001Z"
        ])
        .contains("tick 0 starts")
    );
}

/// The bench deadline holds on layouts that mint a few IDs per second: a 0.2 s run ends
/// long before the 1,024 IDs it used to mint between two looks at the clock (17 minutes).
#[test]
fn bench_ends_on_time_on_slow_layouts() {
    let bound = Duration::from_secs(30);
    let out = flakeid_within(
        &[
            "bench",
            "--seconds",
            "0.2",
            "--layout",
            "time=40,seq=0,node=0,unit=1s,epoch=2025-01-01T00:00:00Z",
        ],
        bound,
    );
    assert!(out.status.success(), "{out:?}");
    let out = flakeid_within(
        &[
            "bench",
            "--sharded",
            "--threads",
            "3",
            "--seconds",
            "0.5",
            "--layout",
            "time=40,seq=0,node=2,unit=1s,epoch=2025-01-01T00:00:00Z",
        ],
        bound,
    );
    assert!(out.status.success(), "{out:?}");
    let mut text = String::new();
    out.stdout.as_slice().read_to_string(&mut text).unwrap();
    assert!(text.contains("ids/s"), "{text}");
}

/// `decode --format csv`: the header names the columns (datacenter and worker for
/// Snowflake, machine for Sonyflake) and every row holds the values `--json` gives, in
/// the header's order.
#[test]
fn decode_csv_has_a_header_and_the_json_values() {
    for (layout, node, extra) in [
        (
            "snowflake",
            &["--datacenter", "3", "--worker", "17"][..],
            ",datacenter,worker",
        ),
        ("sonyflake", &["--machine-id", "2565"][..], ",machine"),
        ("mastodon", &[][..], ""),
    ] {
        let mut args = vec!["gen", "-n", "50", "--layout", layout];
        args.extend_from_slice(node);
        let ids = ok(&args);
        let csv = ok_with(&["decode", "--format", "csv", "--layout", layout], &ids);
        let json = ok_with(&["decode", "--json", "--layout", layout], &ids);
        let mut lines = csv.lines();
        let header = lines.next().unwrap();
        assert_eq!(
            header,
            format!("id,time,unix_ms,ticks,sequence,node{extra}")
        );
        let keys: Vec<&str> = header.split(',').collect();
        let mut rows = 0;
        for (row, record) in lines.zip(json.lines()) {
            let cells: Vec<&str> = row.split(',').collect();
            assert_eq!(cells.len(), keys.len(), "{row}");
            for (k, v) in keys.iter().zip(&cells) {
                assert_eq!(json_value(record, k), *v, "{layout} {k}: {row} vs {record}");
            }
            rows += 1;
        }
        assert_eq!(rows, 50, "{layout}");
    }
    // No rows, no header; a bad line is reported and the good ones kept.
    assert_eq!(ok_with(&["decode", "--format", "csv"], "\n"), "");
    let out = flakeid(
        &["decode", "--format", "csv"],
        Some("2116500430648709162\nnope\n"),
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2"));
}

/// Every backend the CPU has writes the same bytes, in every format, for a stream with
/// bad lines and IDs past a batch; `--backend` and `FLAKEID_DECODE_BACKEND` pick one, and
/// a backend the CPU lacks or an unknown name is a clear error.
#[test]
fn decode_backends_agree_and_can_be_chosen() {
    let mut input = ok(&["gen", "-n", "10000", "--node", "7"]);
    input.push_str("0xzz\n18446744073709551615\n\n42\n");
    let run_env = |args: &[&str], env: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_flakeid"));
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        match env {
            Some(v) => cmd.env("FLAKEID_DECODE_BACKEND", v),
            None => cmd.env_remove("FLAKEID_DECODE_BACKEND"),
        };
        let mut child = cmd.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let text = input.clone();
        // A run that fails at once closes its input early: not the test's concern.
        let w = std::thread::spawn(move || drop(stdin.write_all(text.as_bytes())));
        let out = child.wait_with_output().unwrap();
        w.join().unwrap();
        out
    };
    let available: Vec<&str> = flakeid::decode::Backend::available()
        .map(|b| b.name())
        .collect();
    for format in ["table", "json", "csv"] {
        let auto = run_env(&["decode", "--format", format], None);
        assert_eq!(auto.status.code(), Some(1), "two bad lines");
        assert_eq!(
            String::from_utf8_lossy(&auto.stdout)
                .lines()
                .filter(|l| !l.starts_with("id"))
                .count(),
            10_001
        );
        for name in ["auto", "scalar", "avx2", "avx512"] {
            let flag = run_env(&["decode", "--format", format, "--backend", name], None);
            let env = run_env(&["decode", "--format", format], Some(name));
            if name == "auto" || available.contains(&name) {
                assert_eq!(flag.stdout, auto.stdout, "{format} --backend {name}");
                assert_eq!(env.stdout, auto.stdout, "{format} env {name}");
                assert_eq!(flag.stderr, auto.stderr, "{format} {name}");
            } else {
                let err = String::from_utf8_lossy(&flag.stderr);
                assert!(
                    err.contains("--backend") && err.contains("cannot run it"),
                    "{err}"
                );
                assert!(flag.stdout.is_empty());
            }
        }
    }
    let bogus = run_env(&["decode"], Some("sse9"));
    let err = String::from_utf8_lossy(&bogus.stderr);
    assert!(!bogus.status.success());
    assert!(
        err.contains("FLAKEID_DECODE_BACKEND") && err.contains("auto, scalar, avx2 or avx512"),
        "{err}"
    );
    // The flag wins over the variable.
    let both = run_env(&["decode", "--backend", "scalar"], Some("sse9"));
    assert_eq!(
        both.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&both.stderr)
    );
}

/// Windows line ends decode as Unix ones do, on the fast path and off it (a bad line, a
/// last line without an ending).
#[test]
fn crlf_input_decodes_as_lf_input() {
    let ids = ok(&["gen", "-n", "5000", "--node", "3"]);
    let lf = flakeid(&["decode", "--json"], Some(&format!("{ids}bad\n0x1")));
    let crlf_text = format!("{}bad\r\n0x1", ids.replace('\n', "\r\n"));
    let crlf = flakeid(&["decode", "--json"], Some(&crlf_text));
    assert_eq!(String::from_utf8_lossy(&lf.stdout).lines().count(), 5001);
    assert_eq!(crlf.stdout, lf.stdout);
    assert_eq!(
        crlf.stderr,
        lf.stderr,
        "{}",
        String::from_utf8_lossy(&crlf.stderr)
    );
    assert_eq!(crlf.status.code(), Some(1));
}

/// An over-long line (`decode < /dev/zero`, a 40 MB line through a pipe) is one bad line,
/// skipped to its newline in linear time and bounded memory; the lines around it are
/// decoded.
#[test]
fn an_overlong_line_is_one_bad_line_and_the_rest_decode() {
    let mut input = b"2116500430648709162\n".to_vec();
    input.extend(std::iter::repeat_n(b'0', 40 << 20));
    input.extend_from_slice(b"\n2116500430648709163\n");
    // And an endless-looking tail of NUL bytes with no newline at all.
    input.extend(std::iter::repeat_n(0u8, 8 << 20));
    let started = Instant::now();
    let out = flakeid_bytes(&["decode", "--json"], &input);
    println!("49 MB with two over-long lines: {:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let ids: Vec<&str> = stdout.lines().map(|l| json_value(l, "id")).collect();
    assert_eq!(ids, ["2116500430648709162", "2116500430648709163"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let reports: Vec<&str> = err.lines().filter(|l| l.contains("longer than")).collect();
    assert_eq!(reports.len(), 2, "{err}");
    assert!(reports[0].starts_with("line 2:"), "{err}");
    assert!(reports[1].starts_with("line 4:"), "{err}");
}

/// Misuse of the tool gets a clear message each, naming the flag and the remedy.
#[test]
fn rough_edges_are_clear_errors() {
    // Discord's flags belong to the Discord layout.
    let out = flakeid(
        &["gen", "--discord-worker", "1", "--discord-process", "0"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--discord-worker") && err.contains("--layout discord"),
        "{err}"
    );
    let out = flakeid(
        &[
            "gen",
            "--layout",
            "discord",
            "--discord-worker",
            "1",
            "--discord-process",
            "0",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each bad ID says what is wrong, positions counted from 1, plurals right.
    for (input, says) in [
        ("0x", "no hex digits after 0x"),
        ("0x12g4", "byte 5 (counting from 1)"),
        ("x", "(this has 1 character)"),
        ("xyz", "(this has 3 characters)"),
        (r#"{"id":"1","id":"2"}"#, "2 \"id\" keys"),
    ] {
        let out = flakeid(&["decode", input], None);
        assert_eq!(out.status.code(), Some(1), "{input}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{input}: {err}");
    }
    // An epoch past 64 bits is refused, not capped.
    let out = flakeid(
        &[
            "layout",
            "--layout",
            "seq=12,node=10,epoch=99999999999999999999",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not fit in 64 bits"), "{err}");
}

/// A coordinator URL in a build without its client says how to build the tool with it.
#[cfg(not(feature = "etcd"))]
#[test]
fn a_store_this_build_lacks_says_how_to_build_it() {
    for args in [
        &["gen", "--claim", "etcd://127.0.0.1:1"][..],
        &["claims", "--claim", "etcd://127.0.0.1:1"][..],
    ] {
        let out = flakeid(args, None);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("cargo install --path cli") && err.contains("default features"),
            "{err}"
        );
    }
}

/// A claim store directory other users may write to is refused at claim time, naming the
/// directory, its mode and the fix, and nothing is minted; once it is the owner's alone the
/// same command mints.
#[cfg(unix)]
#[test]
fn a_claim_directory_others_may_write_to_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("flakeid-cli-perms-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let url = format!("file:{}", dir.display());
    let out = flakeid(
        &["gen", "-n", "1", "--claim", &url, "--nodes", "0..2"],
        None,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty());
    assert!(
        err.contains("--claim")
            && err.contains("writable by every user")
            && err.contains("777")
            && err.contains("chmod o-w"),
        "{err}"
    );
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = flakeid(
        &["gen", "-n", "1", "--claim", &url, "--nodes", "0..2"],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning:"));
    std::fs::remove_dir_all(&dir).ok();
}

/// `decode --column`: a CSV table's column decoded by its header name, every other column
/// passed through as it came (quoted commas included), the decoded fields after; a row
/// whose ID does not read is written with its fields empty and reported (exit 1); a
/// numbered column of a table without a header; NDJSON in and out with Discord's own
/// field names; a decoded name the table already has is prefixed with the column's; a
/// column number past the first record is refused, not read as an empty table.
#[test]
fn decode_column_passes_the_table_through() {
    let csv = "user,id,note\nann,2116500430648709162,\"hello, world\"\nbob,-1,x\n";
    let out = flakeid(&["decode", "--column", "id"], Some(csv));
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "user,id,note,time,unix_ms,ticks,sequence,node,datacenter,worker",
            "ann,2116500430648709162,\"hello, world\",2026-10-31T12:00:00.000Z,1793448000000,504613025343,42,113,3,17",
            "bob,-1,x,,,,,,,",
        ]
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("record 3") && err.contains("--layout"),
        "{err}"
    );

    let bare = ok_with(
        &["decode", "--column", "2", "--format", "json"],
        "a,2116500430648709162\nb,2116500430648709163\n",
    );
    let rows: Vec<serde_json::Value> = bare
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2, "no header: every line is a row");
    assert_eq!(
        (rows[1]["column1"].as_str(), rows[1]["sequence"].as_u64()),
        (Some("b"), Some(43))
    );

    // Discord's IDs past 2^63 as a signed column gives them, NDJSON in and out.
    let signed = (1_062_072_467_262_816_346u64 | 1 << 63) as i64;
    let ndjson = format!("{{\"id\":\"{signed}\",\"who\":\"x\"}}\n{{\"id\":175928847299117063}}\n");
    let out = ok_with(
        &["decode", "--column", "id", "--layout", "discord"],
        &ndjson,
    );
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows[0]["who"], "x");
    assert!(
        rows[0]["worker"].is_u64()
            && rows[0]["process"].is_u64()
            && rows[0].get("datacenter").is_none()
    );
    assert_eq!(rows[1]["time"], "2016-04-30T11:18:25.796Z");
    let first = out.lines().next().unwrap();
    assert!(
        first.find("\"who\"").unwrap() < first.find("\"time\"").unwrap(),
        "the input's keys keep their order, the decoded ones after: {first}"
    );

    let clash = ok_with(
        &["decode", "--column", "id"],
        "time,id\n1,2116500430648709162\n",
    );
    assert!(clash.starts_with("time,id,id_time,id_unix_ms,"), "{clash}");
    fails(
        &["decode", "--column", "zz"],
        Some("a,b\n1,2\n"),
        "has no column \"zz\": it has \"a\", \"b\"",
    );
    fails(
        &["decode", "--column", "2"],
        Some("2116500430648709162\n2116500430648709163\n"),
        "the first record has 1 column: give a number from 1 to 1",
    );
    fails(
        &["decode", "--column", "id", "--format", "table"],
        Some("id\n1\n"),
        "CSV or JSON",
    );
}

/// A negative decimal is the 64 bits of a signed column (a database's BIGINT): it decodes
/// as the same ID in line mode too.
#[test]
fn decode_reads_a_signed_id_as_its_bits() {
    let id = 10_000_000_000_000_000_000u64;
    let signed = (id as i64).to_string();
    let a = ok(&["decode", "--json", "--layout", "discord", &id.to_string()]);
    let b = ok(&["decode", "--json", "--layout", "discord", "--", &signed]);
    assert_eq!(a, b);
}

/// Every layout's decoded field names are the flags compose takes, with the same meaning:
/// an ID decoded and composed again from its fields (all the node fields decode printed at
/// once, and each way alone: node, the named parts, machine) is the same ID, for every
/// preset and for custom layouts of both orders, with and without a split node, Discord's
/// parts on a custom layout, at the extremes and at random.
#[test]
fn decode_then_compose_gives_the_same_id_for_every_layout() {
    let mut layouts: Vec<String> = flakeid::Layout::presets()
        .iter()
        .map(|p| p.name.to_string())
        .collect();
    layouts.extend(
        [
            "time=20,seq=34,node=10,dc=5",
            "time=41,seq=12,node=10,dc=3,epoch=2024-01-01T00:00:00Z",
            "time=39,seq=8,node=16,order=tsn,unit=10ms",
            "time=40,seq=10,node=14,dc=7,order=tsn",
            "time=42,seq=12,node=10,dc=5,epoch=2015-01-01T00:00:00Z",
            "time=40,seq=9,node=14,dc=6,parts=worker-process,order=tsn",
        ]
        .map(String::from),
    );
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    for name in &layouts {
        let layout: flakeid::Layout = name.parse().unwrap();
        let mut ids = vec![0, layout.max_id(), layout.max_id() / 3];
        for _ in 0..5 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ids.push(state & layout.max_id());
        }
        let input: String = ids.iter().map(|id| format!("{id}\n")).collect();
        let out = flakeid(&["decode", "--json", "--layout", name], Some(&input));
        assert!(out.status.success(), "{name}: {out:?}");
        let decoded = String::from_utf8(out.stdout).unwrap();
        for (line, id) in decoded.lines().zip(&ids) {
            let args = vec![
                "compose".to_string(),
                "--layout".into(),
                name.clone(),
                "--ticks".into(),
                json_value(line, "ticks").into(),
                "--sequence".into(),
                json_value(line, "sequence").into(),
            ];
            // Every node field decode printed, all at once (they agree), then each of
            // them alone: the whole node, the two parts, the machine id.
            let printed: Vec<(&str, &str)> = [
                ("node", "--node"),
                ("datacenter", "--datacenter"),
                ("worker", "--worker"),
                ("process", "--process"),
                ("machine", "--machine"),
            ]
            .into_iter()
            .filter(|(key, _)| line.contains(&format!("\"{key}\":")))
            .collect();
            let split: Vec<_> = printed
                .iter()
                .copied()
                .filter(|(key, _)| !matches!(*key, "node" | "machine"))
                .collect();
            let mut ways = vec![printed.clone(), split];
            ways.extend(
                printed
                    .iter()
                    .filter(|(key, _)| matches!(*key, "node" | "machine"))
                    .map(|way| vec![*way]),
            );
            for way in ways.into_iter().filter(|w| !w.is_empty()) {
                let mut args = args.clone();
                for (key, flag) in &way {
                    args.extend([flag.to_string(), json_value(line, key).into()]);
                }
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                assert_eq!(
                    ok(&args).trim(),
                    id.to_string(),
                    "{name}: {line} -> {args:?}"
                );
            }
        }
        assert_eq!(decoded.lines().count(), ids.len(), "{name}: {decoded}");
    }
}

/// The library says what is wrong with a store URL in its own words; the tool adds the
/// flags that fix it, and says both with `--claim`.
#[cfg(feature = "etcd")]
#[test]
fn a_user_without_a_password_is_told_the_tools_ways_to_give_one() {
    for (url, says) in [
        ("etcd://127.0.0.1:1?user=u", "without a password"),
        (
            "etcd://127.0.0.1:1?user=u&password=x",
            "never goes in the URL",
        ),
    ] {
        let out = flakeid(&["gen", "--claim", url, "-n", "1"], None);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{url}: {stderr}");
        assert!(
            stderr.starts_with("error: --claim: ")
                && stderr.contains(says)
                && stderr.contains("--claim-password-file FILE or FLAKEID_CLAIM_PASSWORD"),
            "{url}: {stderr}"
        );
    }
}

/// `range` gives the library's range as an SQL condition (and in JSON, with the ticks' ends),
/// the IDs `gen` mints inside the span lie in it and those before it do not, and a span
/// outside the layout or empty is an error naming the flag.
#[test]
fn range_bounds_the_ids_minted_in_a_span() {
    let (from, to) = ("2026-12-07T00:00:00Z", "2026-12-08T00:00:00Z");
    let library = flakeid::Layout::sonyflake()
        .id_range(1_796_601_600_000, 1_796_688_000_000)
        .unwrap();
    assert_eq!(
        ok(&[
            "range",
            "--layout",
            "sonyflake",
            "--from",
            from,
            "--to",
            to,
            "--column",
            "order_id"
        ]),
        format!("order_id BETWEEN {} AND {}\n", library.first, library.last)
    );
    // Unix ms, 5 ms into a 10 ms tick: the whole tick is in the range.
    let json = ok(&[
        "range",
        "--layout",
        "sonyflake",
        "--from",
        "1796601600005",
        "--to",
        "1796601600025",
        "--json",
    ]);
    assert_eq!(json_value(&json, "from"), "2026-12-07T00:00:00.005Z");
    assert_eq!(
        json_value(&json, "first_tick_start"),
        "2026-12-07T00:00:00.000Z"
    );
    assert_eq!(
        json_value(&json, "last_tick_end"),
        "2026-12-07T00:00:00.030Z"
    );

    // IDs minted now: in the range of the last minute to now (--to's default), not in
    // the range of the minute before.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let ids: Vec<u64> = ok(&["gen", "-n", "100", "--node", "5"])
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    let bounds = |args: &[&str]| -> (u64, u64) {
        let sql = ok(args);
        let words: Vec<&str> = sql.split_whitespace().collect();
        assert_eq!(
            (words[0], words[1], words[3]),
            ("id", "BETWEEN", "AND"),
            "{sql}"
        );
        (words[2].parse().unwrap(), words[4].parse().unwrap())
    };
    let recent = bounds(&["range", "--from", &(now_ms - 60_000).to_string()]);
    let before = bounds(&[
        "range",
        "--from",
        &(now_ms - 120_000).to_string(),
        "--to",
        &(now_ms - 60_000).to_string(),
    ]);
    for id in ids {
        assert!(recent.0 <= id && id <= recent.1, "{id} in {recent:?}");
        assert!(id > before.1, "{id} after {before:?}");
    }

    // Clamped at the layout's ends, with a note; errors name their flag.
    let out = flakeid(
        &["range", "--from", "2000-01-01T00:00:00Z", "--to", from],
        None,
    );
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("id BETWEEN 0 AND "));
    assert!(String::from_utf8_lossy(&out.stderr).contains("before the layout's epoch"));
    fails(
        &[
            "range",
            "--from",
            "2000-01-01T00:00:00Z",
            "--to",
            "2001-01-01T00:00:00Z",
        ],
        None,
        "error: --to: time is",
    );
    fails(
        &["range", "--from", to, "--to", from],
        None,
        "error: --to: the span from",
    );
    fails(
        &["range", "--from", "2300-01-01T00:00:00Z"],
        None,
        "error: --from: the span",
    );
    fails(
        &["range", "--from", "yesterday"],
        None,
        "error: --from: not an RFC 3339",
    );
}

/// A layout that runs out within a year is said on stderr by `gen` (from `--end-warning`,
/// a year by default; `0s` never) and by `layout`, with its end and the days left; a layout
/// whose end lies further off is not.
#[test]
fn a_layout_that_runs_out_soon_is_said() {
    let day_ago_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        - 86_400_000;
    // 2^31 ms (24.9 days) from a day ago.
    let short = format!("time=31,seq=12,node=10,epoch={day_ago_ms}");
    let stderr = |args: &[&str]| {
        let out = flakeid(args, None);
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    let said = stderr(&["gen", "--layout", &short, "--node", "1"]);
    assert!(
        said.contains("warning: the layout runs out at") && said.contains(" days"),
        "{said}"
    );
    assert!(said.contains("in 23.") || said.contains("in 24."), "{said}");
    let said = stderr(&[
        "gen",
        "--layout",
        &short,
        "--node",
        "1",
        "--end-warning",
        "0s",
    ]);
    assert!(!said.contains("runs out"), "{said}");
    let said = stderr(&[
        "gen",
        "--layout",
        &short,
        "--node",
        "1",
        "--end-warning",
        "20d",
    ]);
    assert!(!said.contains("runs out"), "{said}");
    let said = stderr(&["layout", "--layout", &short]);
    assert!(said.contains("the layout runs out at"), "{said}");
    let said = stderr(&["gen", "--node", "1"]);
    assert!(!said.contains("runs out"), "{said}");
}
