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
use flakeid_fleet::server::cannot_run;
use flakeid_fleet::zookeeper::ZooKeeper;

fn package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `command` in the package, failing the test with its output if it fails; its
/// standard output.
fn run(what: &str, command: &mut Command) -> String {
    if command.get_current_dir().is_none() {
        command.current_dir(package());
    }
    let out = command
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
        cannot_run("the Node tests", &why, "Debian: apt-get install nodejs npm");
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
    // Without the package's own install script: the build below is the tests' (debug).
    run(
        "npm ci",
        Command::new("npm").args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"]),
    );
    // The packages' own target directory (this test's cargo holds the workspace's), shared
    // with the Python package's build: their common dependencies build once.
    run(
        "npm run build:debug",
        Command::new("npm")
            .args(["run", "build:debug"])
            .env("CARGO_TARGET_DIR", root.join("target/packages")),
    );
    let vectors = root.join(format!("target/node-vectors-{}.json", std::process::id()));
    std::fs::write(&vectors, rust_vectors()).unwrap();
    let said = run(
        "npm test",
        Command::new("npm")
            .arg("test")
            .env("FLAKEID_TEST_RUST_VECTORS", &vectors)
            .env("FLAKEID_TEST_ETCD", etcd.url())
            .env("FLAKEID_TEST_ZOOKEEPER", zookeeper.url())
            .env("FLAKEID_TEST_POSTGRES", postgres.url())
            .env("FLAKEID_REQUIRE_SERVERS", "1")
            .env("RUST_BACKTRACE", "0"),
    );
    eprintln!("{said}");
    assert!(said.contains("# fail 0"), "a Node test failed: {said}");
    assert!(said.contains("# skipped 0"), "a Node test skipped: {said}");
    std::fs::remove_file(&vectors).ok();
    packed();
    installed_by_a_user(&root);
    drop((etcd, zookeeper, postgres));
}

/// A user's project installs the package from the clone with one command
/// (`npm install /path/to/node`), its install script building the addon where there is
/// none, and mints with it.
fn installed_by_a_user(root: &Path) {
    for entry in std::fs::read_dir(package()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "node") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let project = root.join(format!("target/node-user-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&project);
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("package.json"),
        r#"{ "name": "a-user", "version": "1.0.0", "private": true }"#,
    )
    .unwrap();
    run(
        "npm install (a user's project)",
        Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--foreground-scripts"])
            .arg(package())
            .current_dir(&project)
            .env("FLAKEID_NODE_PROFILE", "dev")
            .env("CARGO_TARGET_DIR", root.join("target/packages")),
    );
    let said = run(
        "require('flakeid-rs') in the user's project",
        Command::new("node")
            .args([
                "-e",
                "const { perProcess, Layout } = require('flakeid-rs'); const g = perProcess({ dir: require('node:os').tmpdir() + '/flakeid-node-user' }); console.log(Layout.snowflake().decompose(g.nextId()).node === g.node)",
            ])
            .current_dir(&project),
    );
    assert_eq!(said.trim(), "true");
    std::fs::remove_dir_all(&project).ok();
}

/// IDs composed by the Rust crate with their fields as its `decompose` gives them, for
/// every preset and custom layouts of every shape: the Node package must decode each ID
/// to these fields and compose these fields back to the ID.
fn rust_vectors() -> String {
    use flakeid::Layout;
    let mut layouts: Vec<Layout> = Layout::presets().iter().map(|p| p.layout).collect();
    for spec in [
        "time=40,seq=10,node=13,dc=5",
        "time=39,seq=8,node=16,unit=10ms,order=tsn",
        "time=41,seq=12,node=10,dc=5,parts=worker-process",
        "time=20,seq=30,node=13,unit=1s",
    ] {
        layouts.push(spec.parse().unwrap());
    }
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut out = Vec::new();
    for layout in layouts {
        let fields = layout.node_fields();
        for _ in 0..200 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let id = x & layout.max_id();
            let p = layout.decompose(id).unwrap();
            let mut row = serde_json::json!({
                "layout": layout.to_string(),
                "id": id.to_string(),
                "ticks": p.ticks.to_string(),
                "unixMs": layout.unix_ms_of(p.ticks).unwrap().to_string(),
                "sequence": p.sequence.to_string(),
                "node": p.node.to_string(),
            });
            if let Some((a, b)) = fields.parts() {
                let (x, y) = layout.split_node(p.node);
                row[a.name()] = x.to_string().into();
                row[b.name()] = y.to_string().into();
            }
            if fields.machine() {
                row["machine"] = p.node.to_string().into();
            }
            out.push(row);
        }
    }
    serde_json::to_string(&out).unwrap()
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
        "\"platform.js\"",
        "\"install.js\"",
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
