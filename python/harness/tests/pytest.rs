//! The Python package's tests, run from `cargo test`: the wheel built by maturin (from
//! PyPI) into a fresh virtual environment with numpy, pytest, pyarrow, pandas, polars and
//! DuckDB, and `pytest python/tests` there, with a real etcd, ZooKeeper and PostgreSQL started here on
//! 127.0.0.1; then the install check: the same wheel in another fresh environment with
//! numpy alone. Skips with the reason where Python or its `venv` is missing, unless
//! `FLAKEID_REQUIRE_SERVERS` is set (CI), which makes that a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use flakeid_fleet::etcd::Etcd;
use flakeid_fleet::postgres::Postgres;
use flakeid_fleet::scenarios::Server;
use flakeid_fleet::server::cannot_run;
use flakeid_fleet::zookeeper::ZooKeeper;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
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

/// A fresh virtual environment in `dir` with the exact versions (and hashes) of
/// `requirements` from PyPI; its python.
fn venv(python: &str, dir: &Path, requirements: &str) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    run(
        "python -m venv",
        Command::new(python).args(["-m", "venv"]).arg(dir),
    );
    let py = dir.join("bin/python");
    run(
        "pip install (pinned)",
        Command::new(&py)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--require-hashes",
                "-r",
            ])
            .arg(root().join("python/tests").join(requirements)),
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
            cannot_run(
                "the Python tests",
                &why,
                "Debian: apt-get install python3 python3-venv",
            );
            return;
        }
    };
    let Some(etcd) = Etcd::start("python") else {
        return;
    };
    let Some(zookeeper) = ZooKeeper::start("python") else {
        return;
    };
    let Some(postgres) = Postgres::start("python") else {
        return;
    };
    let root = root();
    let work = root.join(format!("target/python-tests-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let py = venv(&python, &work.join("venv"), "requirements.txt");
    let dist = work.join("dist");
    // The packages' own target directory (this test's cargo holds the workspace's), which
    // the Node package's build shares: the tests run one after the other, and their
    // common dependencies build once.
    run(
        "maturin build",
        Command::new(py.parent().unwrap().join("maturin"))
            // The dev profile: the tests need the package's behaviour, not the release's
            // fat LTO (python/pyproject.toml), which takes minutes more.
            .args(["build", "--quiet", "--profile", "dev", "--manifest-path"])
            .arg(root.join("python/Cargo.toml"))
            .arg("--out")
            .arg(&dist)
            .env("CARGO_TARGET_DIR", root.join("target/packages")),
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
    metadata_is_complete(&py, &wheel);
    let out = Command::new(&py)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(root.join("python/tests"))
        .env("FLAKEID_TEST_ETCD", etcd.url())
        .env("FLAKEID_TEST_ZOOKEEPER", zookeeper.url())
        .env("FLAKEID_TEST_POSTGRES", postgres.url())
        .current_dir(&work)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    eprintln!("{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "pytest failed");
    assert!(!said.contains(" skipped"), "a Python test skipped: {said}");

    // The install check: the wheel where numpy is all there is.
    // The oldest numpy the package declares (requirements-oldest.txt), and no pyarrow.
    let bare = venv(&python, &work.join("bare"), "requirements-oldest.txt");
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
            "import flakeid_rs, numpy as np\n\
             g = flakeid_rs.Generator(flakeid_rs.Layout.snowflake(), node=1)\n\
             ids = g.next_ids(1000)\n\
             cols = flakeid_rs.Layout.snowflake().decode(ids)\n\
             assert (cols['node'] == 1).all()\n\
             assert np.__version__ == '1.23.2', np.__version__\n\
             try:\n    flakeid_rs.Layout.snowflake().decode_arrow(ids)\n    raise SystemExit('decode_arrow without pyarrow')\n\
             except ImportError as e:\n    assert 'pip install pyarrow' in str(e), e\n",
            ])
            // Outside the source tree, so that the wheel is what is imported.
            .current_dir(&work),
    );
    types_are_checked(&py, &work);
    drop((etcd, zookeeper, postgres));
    std::fs::remove_dir_all(&work).ok();
}

/// The wheel says what a package index shows: the licence texts, classifiers, project
/// URLs, the Python it needs and the numpy lower bound the oldest environment tests; and
/// its extension is stripped (its size is printed: 42 MB unoptimised with the etcd,
/// ZooKeeper and PostgreSQL clients; with debug info it would be several times that).
fn metadata_is_complete(py: &Path, wheel: &Path) {
    let size = std::fs::metadata(wheel).unwrap().len();
    eprintln!("wheel: {} ({size} bytes)", wheel.display());
    let check = r#"
import sys, zipfile
wheel = zipfile.ZipFile(sys.argv[1])
names = wheel.namelist()
meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
text = wheel.read(meta).decode()
for needed in ("Requires-Python: >=3.9", "Requires-Dist: numpy>=1.23.2", "Classifier: License :: OSI Approved :: MIT License",
               "Classifier: Typing :: Typed", "Project-URL: Repository", "Project-URL: Changelog", "License-File: LICENSE-MIT",
               "License-File: LICENSE-APACHE"):
    assert needed in text, (needed, text[:2000])
assert "Name: flakeid-rs" in text, text[:300]
# Every file under the package's own names: nothing shared with PyPI's `flakeid`
# (another project, whose files are `flakeid/...`), so installing both overwrites nothing.
assert all(n.startswith(("flakeid_rs/", "flakeid_rs-")) for n in names), names
for licence in ("LICENSE-MIT", "LICENSE-APACHE"):
    assert any(n.endswith("/" + licence) for n in names), (licence, names)
native = next(i for i in wheel.infolist() if "_native" in i.filename)
print("extension", native.filename, native.file_size, "bytes")
assert native.file_size < 50_000_000, native.file_size
assert any(n.endswith("py.typed") for n in names) and any(n.endswith("_native.pyi") for n in names), names
"#;
    run(
        "wheel metadata",
        Command::new(py).args(["-c", check]).arg(wheel),
    );
}

/// The type stubs hold: they match the built module (`stubtest`), every Python example of
/// the README passes `mypy --strict`, and the tests' use of the package type-checks.
fn types_are_checked(py: &Path, work: &Path) {
    let readme = std::fs::read_to_string(root().join("python/README.md")).unwrap();
    let examples = work.join("examples");
    std::fs::create_dir_all(&examples).unwrap();
    let mut count = 0;
    for (i, block) in readme.split("```python\n").skip(1).enumerate() {
        let code = block.split("```").next().unwrap();
        std::fs::write(examples.join(format!("example_{}.py", i + 1)), code).unwrap();
        count += 1;
    }
    assert!(count >= 5, "the README has {count} Python examples");
    run(
        "mypy --strict (README examples)",
        Command::new(py)
            .args([
                "-m",
                "mypy",
                "--strict",
                "--no-incremental",
                "--ignore-missing-imports",
            ])
            .arg(&examples)
            .current_dir(work),
    );
    run(
        "mypy (the tests' use of the package)",
        Command::new(py)
            .args([
                "-m",
                "mypy",
                "--check-untyped-defs",
                "--no-incremental",
                "--ignore-missing-imports",
            ])
            .arg(root().join("python/tests"))
            .current_dir(work),
    );
    // PEP 800's `@disjoint_base` is left out of the stubs on purpose (older checkers).
    run(
        "stubtest flakeid_rs._native",
        Command::new(py)
            .args([
                "-m",
                "mypy.stubtest",
                "--ignore-disjoint-bases",
                "flakeid_rs._native",
            ])
            .current_dir(work),
    );
}
