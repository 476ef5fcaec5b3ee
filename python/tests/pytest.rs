//! The Python package's tests, run from `cargo test`: the wheel built by maturin (from
//! PyPI) into a fresh virtual environment with numpy, pytest, pyarrow, pandas, polars and
//! DuckDB, and `pytest python/tests` there, with a real etcd and ZooKeeper started here on
//! 127.0.0.1; then the install check: the same wheel in another fresh environment with
//! numpy alone. Skips with the reason where Python or its `venv` is missing, unless
//! `FLAKEID_REQUIRE_SERVERS` is set (CI), which makes that a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use flakeid_fleet::etcd::Etcd;
use flakeid_fleet::scenarios::Server;
use flakeid_fleet::zookeeper::ZooKeeper;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `command`, failing the test with its output if it fails.
fn run(what: &str, command: &mut Command) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {command:?}: {e}"));
    if !out.status.success() {
        panic!(
            "{what} failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    eprintln!("{what}: ok");
}

/// A fresh virtual environment in `dir` with `packages` from PyPI; its python.
fn venv(python: &str, dir: &Path, packages: &[&str]) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    run(
        "python -m venv",
        Command::new(python).args(["-m", "venv"]).arg(dir),
    );
    let py = dir.join("bin/python");
    run(
        "pip install",
        Command::new(&py)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(packages),
    );
    py
}

/// Python 3.9 or later with `venv`, or why not.
fn python() -> Result<String, String> {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(&python)
        .args([
            "-c",
            "import sys, venv; assert sys.version_info >= (3, 9), sys.version; print(sys.version)",
        ])
        .output()
        .map_err(|e| format!("no {python}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{python} lacks venv or is older than 3.9: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    eprintln!("Python {}", String::from_utf8_lossy(&out.stdout).trim());
    Ok(python)
}

#[test]
fn the_python_package_passes_its_tests() {
    let python = match python() {
        Ok(p) => p,
        Err(why) => {
            assert!(
                std::env::var_os("FLAKEID_REQUIRE_SERVERS").is_none(),
                "the Python tests cannot run and FLAKEID_REQUIRE_SERVERS is set: {why} (Debian: apt-get install python3 python3-venv)"
            );
            eprintln!("skipping the Python tests: {why}");
            return;
        }
    };
    let Some(etcd) = Etcd::start("python") else {
        return;
    };
    let Some(zookeeper) = ZooKeeper::start("python") else {
        return;
    };
    let root = root();
    let work = root.join(format!("target/python-tests-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let py = venv(
        &python,
        &work.join("venv"),
        &[
            "maturin>=1.7,<2",
            "numpy",
            "pytest",
            "pyarrow",
            "pandas",
            "polars",
            "duckdb",
        ],
    );
    let dist = work.join("dist");
    // Its own target directory: this test's cargo holds the workspace's.
    run(
        "maturin build",
        Command::new(py.parent().unwrap().join("maturin"))
            .args(["build", "--quiet", "--manifest-path"])
            .arg(root.join("python/Cargo.toml"))
            .arg("--out")
            .arg(&dist)
            .env("CARGO_TARGET_DIR", root.join("target/python")),
    );
    let wheel = std::fs::read_dir(&dist)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("a wheel");
    run(
        "pip install the wheel",
        Command::new(&py)
            .args(["-m", "pip", "install", "--quiet", "--no-deps"])
            .arg(&wheel),
    );
    let out = Command::new(&py)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(root.join("python/tests"))
        .env("FLAKEID_TEST_ETCD", etcd.url())
        .env("FLAKEID_TEST_ZOOKEEPER", zookeeper.url())
        .current_dir(&work)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    eprintln!("{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "pytest failed");
    assert!(!said.contains(" skipped"), "a Python test skipped: {said}");

    // The install check: the wheel where numpy is all there is.
    let bare = venv(&python, &work.join("bare"), &["numpy"]);
    run(
        "pip install the wheel (numpy only)",
        Command::new(&bare)
            .args(["-m", "pip", "install", "--quiet"])
            .arg(&wheel),
    );
    run(
        "import and use without pyarrow",
        Command::new(&bare).args([
            "-c",
            "import flakeid, numpy as np\n\
             g = flakeid.Generator(flakeid.Layout.snowflake(), node=1)\n\
             ids = g.next_ids(1000)\n\
             cols = flakeid.Layout.snowflake().decode(ids)\n\
             assert (cols['node'] == 1).all()\n\
             try:\n    flakeid.Layout.snowflake().decode_arrow(ids)\n    raise SystemExit('decode_arrow without pyarrow')\n\
             except ImportError as e:\n    assert 'pip install pyarrow' in str(e), e\n",
            ])
            // Outside the source tree, so that the wheel is what is imported.
            .current_dir(&work),
    );
    drop((etcd, zookeeper));
    std::fs::remove_dir_all(&work).ok();
}
