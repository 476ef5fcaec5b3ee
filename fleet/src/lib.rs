//! The fleet harness of flakeid's tests, as a dev-only package: what the fleet tests of the
//! tool (`cli/tests/etcd.rs`, `cli/tests/zookeeper.rs`, ...) start, break and watch.
//!
//! - [`scenarios`]: a coordinator the test runs ([`scenarios::Server`]), the server
//!   processes ([`scenarios::Process`]), the `gen` scenarios written once over a server,
//!   and [`gen_scenarios!`] / [`scenarios!`], which make them `#[test]`s for one server;
//!   [`server`]: the coordinators' processes, and how a scenario is given the stores
//!   ([`server::Open`]: `flakeid_stores::open`).
//! - [`procs`]: real `flakeid gen` processes; [`service`]: real `flakeid serve` processes
//!   and an HTTP client; [`serve_fleet`] and [`serve_chaos`]: the service's scenarios.
//! - [`etcd`]: an etcd server on loopback; [`zookeeper`]: a ZooKeeper server;
//!   [`postgres`]: a PostgreSQL server (and a standby of it).
//! - [`campaign`]: a long fault campaign on a three-member coordinator (run by hand).
//! - [`proxy`]: a TCP proxy for partitions, lost replies and a member that stops answering;
//!   [`lost_replies`]: the lost-reply checks written once over a store behind it;
//!   [`repair`]: `flakeid claims --repair` through the tool; [`hygiene`]: a store's
//!   password shown nowhere;
//!   [`stale_member`]: an etcd member that has not caught up; [`certs`]: a CA and
//!   certificates of the tests' own.
//!
//! Every wait is bounded; nothing here reaches an address other than 127.0.0.1.
#![forbid(unsafe_code)]

pub mod campaign;
pub mod certs;
pub mod etcd;
pub mod hygiene;
pub mod lost_replies;
mod macros;
pub mod postgres;
pub mod procs;
pub mod proxy;
pub mod repair;
pub mod scenarios;
pub mod serve_chaos;
pub mod serve_fleet;
pub mod server;
pub mod service;
pub mod stale_member;
pub mod zookeeper;

use std::path::PathBuf;

/// The `flakeid` binary the tests run: `$CARGO_BIN_EXE_flakeid` or `$FLAKEID_BIN` if set,
/// else the one beside the running test (`target/<profile>/flakeid`, which cargo builds
/// before the integration tests of `flakeid-cli`).
pub fn binary() -> PathBuf {
    for var in ["CARGO_BIN_EXE_flakeid", "FLAKEID_BIN"] {
        if let Some(path) = std::env::var_os(var) {
            return path.into();
        }
    }
    let exe = std::env::current_exe().expect("the test's own path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("a test binary lives in target/<profile>/deps");
    let bin = profile_dir.join(format!("flakeid{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "no flakeid binary at {} (build it, or set FLAKEID_BIN)",
        bin.display()
    );
    bin
}

/// Runs `f` to its end on a runtime of its own (the harness's calls of a coordinator's
/// client, from a blocking test).
pub fn block_on<F: core::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
        .block_on(f)
}

/// Writes `text` to `path` as a secret is kept: readable by its owner alone (mode 0600),
/// as the stores require of password and key files.
pub fn write_secret(path: &std::path::Path, text: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    file.write_all(text.as_bytes()).unwrap();
}
