//! The Node package's tests, run from `cargo test`: `npm ci` (the tools and peers pinned
//! by node/package-lock.json), `npm run build:debug` (the addon for this host, with
//! @napi-rs/cli) and `npm test` (`node --test test/`) with a real etcd, ZooKeeper and
//! PostgreSQL started here on 127.0.0.1; then `npm pack`, checked for what a package
//! needs. Skips with the reason where Node or npm is missing, unless
//! `FLAKEID_REQUIRE_SERVERS` is set (CI), which makes that a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use flakeid_fleet::etcd::Etcd;
use flakeid_fleet::postgres::Postgres;
use flakeid_fleet::scenarios::Server;
use flakeid_fleet::zookeeper::ZooKeeper;

fn package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `command` in the package, failing the test with its output if it fails; its
/// standard output.
fn run(what: &str, command: &mut Command) -> String {
    let out = command
        .current_dir(package())
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {command:?}: {e}"));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        panic!(
            "{what} failed ({}):\n{said}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    eprintln!("{what}: ok");
    said
}

/// Node 18 or later and npm, or why not.
fn node() -> Result<(), String> {
    let out = Command::new("node")
        .args([
            "-e",
            "if (Number(process.versions.node.split('.')[0]) < 18) { console.error(process.version); process.exit(1) } console.log(process.version)",
        ])
        .output()
        .map_err(|e| format!("no node: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "node is older than 18: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let npm = Command::new("npm")
        .arg("--version")
        .output()
        .map_err(|e| format!("no npm: {e}"))?;
    eprintln!(
        "node {}, npm {}",
        String::from_utf8_lossy(&out.stdout).trim(),
        String::from_utf8_lossy(&npm.stdout).trim()
    );
    Ok(())
}

#[test]
fn the_node_package_passes_its_tests() {
    if let Err(why) = node() {
        assert!(
            std::env::var_os("FLAKEID_REQUIRE_SERVERS").is_none(),
            "the Node tests cannot run and FLAKEID_REQUIRE_SERVERS is set: {why} (Debian: apt-get install nodejs npm)"
        );
        eprintln!("skipping the Node tests: {why}");
        return;
    }
    let Some(etcd) = Etcd::start("node") else {
        return;
    };
    let Some(zookeeper) = ZooKeeper::start("node") else {
        return;
    };
    let Some(postgres) = Postgres::start("node") else {
        return;
    };
    let root = package().join("..");
    run(
        "npm ci",
        Command::new("npm").args(["ci", "--no-audit", "--no-fund"]),
    );
    // The packages' own target directory (this test's cargo holds the workspace's), shared
    // with the Python package's build: their common dependencies build once.
    run(
        "npm run build:debug",
        Command::new("npm")
            .args(["run", "build:debug"])
            .env("CARGO_TARGET_DIR", root.join("target/packages")),
    );
    let said = run(
        "npm test",
        Command::new("npm")
            .arg("test")
            .env("FLAKEID_TEST_ETCD", etcd.url())
            .env("FLAKEID_TEST_ZOOKEEPER", zookeeper.url())
            .env("FLAKEID_TEST_POSTGRES", postgres.url())
            .env("FLAKEID_REQUIRE_SERVERS", "1")
            .env("RUST_BACKTRACE", "0"),
    );
    eprintln!("{said}");
    assert!(said.contains("# fail 0"), "a Node test failed: {said}");
    assert!(said.contains("# skipped 0"), "a Node test skipped: {said}");
    packed();
    drop((etcd, zookeeper, postgres));
}

/// `npm pack --dry-run` lists what the package would hold: the addon for this host,
/// the JavaScript and its types, the README and both licences, and nothing else.
fn packed() {
    let listed = run(
        "npm pack --dry-run",
        Command::new("npm").args(["pack", "--dry-run", "--json"]),
    );
    for needed in [
        "\"index.js\"",
        "\"index.d.ts\"",
        "\"errors.js\"",
        "\"README.md\"",
        "\"LICENSE-MIT\"",
        "\"LICENSE-APACHE\"",
        "\"flakeid.linux-x64-gnu.node\"",
        "\"package.json\"",
    ] {
        assert!(listed.contains(needed), "{needed} is not packed: {listed}");
    }
    for left_out in ["\"test/", "\"src/", "node_modules", "\"bench/"] {
        assert!(!listed.contains(left_out), "{left_out} is packed: {listed}");
    }
}
