//! The tool's and the service's decoded text, byte for byte, against the recorded outputs in
//! `tests/outputs/`: a change of the decode pipeline (how IDs become columns and columns
//! become text) must not change one byte of what users read. Inputs are made here from a
//! fixed seed: runs of IDs in one tick (the dense case), IDs with a random tick each (the
//! sparse case), each layout's extremes, and bad lines among them.
//!
//! After a change that is meant to alter the text, record the new outputs with
//! `FLAKEID_BLESS=1 cargo test -p flakeid-cli --test outputs` and review the diff.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use flakeid::Layout;
use flakeid_fleet::service::{client, serve};

/// The layouts decoded: every family of preset, a split node with Discord's names, the
/// Sonyflake order with its `machine` field, a sub-millisecond unit, fields wider than 32
/// bits, and a year past 9999.
const LAYOUTS: &[&str] = &[
    "snowflake",
    "sonyflake",
    "discord",
    "instagram",
    "mastodon",
    "js-safe",
    "seq=10,node=8,dc=3,time=40,unit=1500us,epoch=2020-01-01T00:00:00Z",
    "seq=6,node=40,order=tsn,time=18,unit=1s",
    "seq=34,node=2,time=28,unit=10s,epoch=2025-06-01T12:00:00Z",
    "seq=1,node=1,time=41,unit=1s",
];

/// A small xorshift generator: the same inputs on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The input lines for `layout`: dense runs, sparse IDs, extremes, and bad lines.
fn input(layout: &Layout, seed: u64) -> Vec<String> {
    let mut rng = Rng(seed | 1);
    let max = layout.max_id();
    let compose = |ticks: u64, seq: u64, node: u64| {
        layout
            .compose(
                ticks & layout.max_ticks(),
                seq & layout.max_sequence(),
                node & layout.max_node(),
            )
            .unwrap()
    };
    let mut lines = Vec::new();
    // Dense: runs in one tick, the ticks near each other.
    let base = rng.next() & layout.max_ticks();
    for i in 0..24 {
        lines.push(compose(base + i / 8, i % 8, 3).to_string());
    }
    // Sparse: every ID its own tick anywhere in the layout's life.
    for _ in 0..24 {
        let (t, s, n) = (rng.next(), rng.next(), rng.next());
        lines.push(compose(t, s, n).to_string());
    }
    // Extremes, other encodings, and bad lines between good ones.
    lines.push("0".into());
    lines.push(max.to_string());
    lines.push(format!("{:#x}", max / 3));
    lines.push("not an id".into());
    if max < u64::MAX {
        lines.push((max + 1).to_string());
    }
    lines.push(String::new());
    lines.push(compose(base, 1, 1).to_string());
    lines
}

fn decode(args: &[&str], stdin: &str) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .arg("decode")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    format!(
        "status: {}\n--- stdout\n{}--- stderr\n{}",
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap()
    )
}

/// Compares `got` with the recorded `name`, or records it under `FLAKEID_BLESS=1`.
fn same_as_recorded(name: &str, got: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/outputs")
        .join(name);
    if std::env::var_os("FLAKEID_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; record it with FLAKEID_BLESS=1", path.display()));
    if got != want {
        let at = got
            .bytes()
            .zip(want.bytes())
            .position(|(g, w)| g != w)
            .unwrap_or(got.len().min(want.len()));
        let line = got[..at].lines().count().max(1);
        let around = |text: &str| {
            let bytes = &text.as_bytes()[at.saturating_sub(60)..(at + 60).min(text.len())];
            String::from_utf8_lossy(bytes).into_owned()
        };
        panic!(
            "{name} differs from the recorded output at byte {at} (line {line}):\n got: {:?}\nwant: {:?}",
            around(got),
            around(&want)
        );
    }
}

#[test]
fn decode_writes_the_recorded_rows_in_every_format() {
    for (format, file) in [
        ("table", "table.txt"),
        ("json", "json.txt"),
        ("csv", "csv.txt"),
    ] {
        let mut all = String::new();
        for (k, spec) in LAYOUTS.iter().enumerate() {
            let layout: Layout = spec.parse().unwrap();
            let lines = input(&layout, 0x9E37_79B9_7F4A_7C15 ^ k as u64).join("\n");
            all.push_str(&format!("### {spec}\n"));
            all.push_str(&decode(&["--layout", spec, "--format", format], &lines));
        }
        same_as_recorded(file, &all);
    }
}

#[test]
fn decode_of_a_column_writes_the_recorded_rows() {
    let mut all = String::new();
    for (k, spec) in LAYOUTS.iter().enumerate() {
        let layout: Layout = spec.parse().unwrap();
        let ids = input(&layout, 0x2545_F491_4F6C_DD1D ^ k as u64);
        let csv: String = std::iter::once("name,id\n".to_owned())
            .chain(ids.iter().enumerate().map(|(i, id)| format!("r{i},{id}\n")))
            .collect();
        let ndjson: String = ids
            .iter()
            .enumerate()
            .map(|(i, id)| format!("{{\"n\":{i},\"id\":\"{id}\"}}\n"))
            .collect();
        for (format, text) in [("csv", &csv), ("json", &ndjson)] {
            all.push_str(&format!("### {spec} {format}\n"));
            all.push_str(&decode(
                &["--layout", spec, "--column", "id", "--format", format],
                text,
            ));
        }
    }
    same_as_recorded("column.txt", &all);
}

#[test]
fn the_service_decodes_to_the_recorded_rows() {
    let mut all = String::new();
    let c = client();
    for (k, spec) in LAYOUTS.iter().enumerate() {
        let layout: Layout = spec.parse().unwrap();
        let s = serve(
            &["--node", "0", "--shards", "1", "--layout", spec],
            Duration::from_secs(20),
        );
        let ids: Vec<String> = input(&layout, 0xD1B5_4A32_D192_ED03 ^ k as u64)
            .into_iter()
            .filter(|l| l.parse::<u64>().is_ok_and(|id| id <= layout.max_id()))
            .collect();
        let array = format!("[{}]", ids.join(","));
        let bad = format!("[{},{}]", ids[0], u64::MAX);
        for (accept, body) in [
            ("application/json", &array),
            ("application/x-ndjson", &array),
            ("application/json", &bad),
        ] {
            let r = c
                .post(s.url("/v1/decode"))
                .header("Accept", accept)
                .body(body.clone())
                .send()
                .unwrap();
            all.push_str(&format!("### {spec} {accept} {}\n", r.status()));
            all.push_str(&r.text().unwrap());
            all.push('\n');
        }
    }
    same_as_recorded("serve.txt", &all);
}
