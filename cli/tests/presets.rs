//! The real-world presets' worked examples, from each platform's own public
//! documentation (Discord, Instagram, Mastodon, Twitter), decoded by the library and by
//! `flakeid decode --layout NAME`.

use std::process::Command;

use flakeid::Layout;
use flakeid::layout::INSTAGRAM_EPOCH_MS;

/// `flakeid decode --json --layout NAME ID`: the record's fields as text.
fn cli_decode(layout: &str, id: u64) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(["decode", "--json", "--layout", layout, &id.to_string()])
        .output()
        .expect("run flakeid");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON record")
}

/// One worked example, checked through the library and through the CLI.
struct Example {
    preset: &'static str,
    id: u64,
    unix_ms: u64,
    time: &'static str,
    sequence: u64,
    node: u64,
}

fn check(e: &Example) -> Layout {
    let l: Layout = e.preset.parse().unwrap();
    let p = l.decompose(e.id).unwrap();
    assert_eq!(l.unix_ms_of(p.ticks), Ok(e.unix_ms), "{}", e.preset);
    assert_eq!((p.sequence, p.node), (e.sequence, e.node), "{}", e.preset);
    assert_eq!(l.compose(p.ticks, p.sequence, p.node), Ok(e.id));
    let rec = cli_decode(e.preset, e.id);
    assert_eq!(rec["id"], e.id.to_string());
    assert_eq!(rec["unix_ms"], e.unix_ms);
    assert_eq!(rec["time"], e.time);
    assert_eq!(
        (rec["sequence"].clone(), rec["node"].clone()),
        (e.sequence.into(), e.node.into())
    );
    l
}

/// Discord's developer documentation (Reference, "Snowflakes", "Snowflake ID Broken Down
/// in Binary"): 175928847299117063 is 2016-04-30 11:18:25.796 UTC, internal worker ID 1,
/// internal process ID 0, increment 7.
#[test]
fn discord_documentation_example() {
    let l = check(&Example {
        preset: "discord",
        id: 175928847299117063,
        unix_ms: 1_462_015_105_796,
        time: "2016-04-30T11:18:25.796Z",
        sequence: 7,
        node: 1 << 5,
    });
    // Discord's layout names the node's high part worker and its low part process, and
    // the tool's output names them so.
    assert_eq!(l.split_node(1 << 5), (1, 0));
    let rec = cli_decode("discord", 175928847299117063);
    assert_eq!(
        (rec["worker"].clone(), rec["process"].clone()),
        (1.into(), 0.into())
    );
    assert!(rec.get("datacenter").is_none(), "{rec}");
    // And the CLI mints with Discord's names for them.
    let out = Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args([
            "gen",
            "--layout",
            "discord",
            "--discord-worker",
            "1",
            "--discord-process",
            "0",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id: u64 = String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(l.split_node(l.decompose(id).unwrap().node), (1, 0));
}

/// "Sharding & IDs at Instagram" (Instagram Engineering, 2012): its `next_id()` uses
/// `our_epoch := 1314220021721`, and its worked example is 1387263000 ms since the epoch,
/// shard 31341 % 2000 = 1341, sequence 5001 % 1024 = 905, which with that epoch is
/// 2011-09-09 (the post says "September 9th, 2011"). (The post's prose also names
/// January 1st, 2011 as the epoch, which its own numbers contradict: 1387263000 ms after
/// it is January 17th. ferroid's `INSTAGRAM_EPOCH` took the prose's date.)
#[test]
fn instagram_engineering_example() {
    let id = (1_387_263_000u64 << 23) | (1341 << 10) | 905;
    check(&Example {
        preset: "instagram",
        id,
        unix_ms: INSTAGRAM_EPOCH_MS + 1_387_263_000,
        time: "2011-09-09T22:28:04.721Z",
        sequence: 905,
        node: 1341,
    });
}

/// Mastodon's documentation (docs.joinmastodon.org, entities/Status, the example): status
/// "103270115826048975" has `created_at` "2019-12-08T03:48:33.901Z". The ID's time is when
/// the ID was made, just before the row's `created_at`; the low 16 bits are a hash, shown
/// as the sequence.
#[test]
fn mastodon_documentation_example() {
    let l = check(&Example {
        preset: "mastodon",
        id: 103270115826048975,
        unix_ms: 1_575_776_913_849,
        time: "2019-12-08T03:48:33.849Z",
        sequence: 103270115826048975 & 0xFFFF,
        node: 0,
    });
    let created_at = 1_575_776_913_901;
    let ms = l
        .unix_ms_of(l.decompose(103270115826048975).unwrap().ticks)
        .unwrap();
    assert!(ms <= created_at && created_at - ms < 1_000);
    // The CLI says the low bits mean nothing.
    let out = Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(["decode", "--layout", "mastodon", "103270115826048975"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("hash-derived") && err.contains("only the time"),
        "{err}"
    );
}

/// Twitter's API documentation (v1.1, the Tweet object example): id 1050118621198921728,
/// `created_at` "Wed Oct 10 20:19:24 +0000 2018". `twitter` names the Snowflake preset.
#[test]
fn twitter_documentation_example() {
    assert_eq!("twitter".parse::<Layout>(), Ok(Layout::snowflake()));
    check(&Example {
        preset: "twitter",
        id: 1050118621198921728,
        unix_ms: 1_539_202_764_211,
        time: "2018-10-10T20:19:24.211Z",
        sequence: 1050118621198921728 & 0xFFF,
        node: (1050118621198921728 >> 12) & 0x3FF,
    });
}
