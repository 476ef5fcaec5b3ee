//! The guides' shell commands run: every `cargo run --release -- ...` line in a `sh` block
//! of the README and of `docs/` runs here with the built binary in its place (under
//! `bash -o pipefail`, so every command of a pipeline must succeed), and must exit 0.
//! Paths the commands write to (`/tmp/...`, `/var/lib/flakeid`, `$HOME`) become a temporary
//! directory of the test's own.

use std::path::{Path, PathBuf};
use std::process::Command;

const GUIDES: [&str; 3] = ["README.md", "docs/cli.md", "docs/fleet.md"];
const RUN: &str = "cargo run --release --";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `cargo run --release -- ...` lines of the `sh` blocks of `text`.
fn commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in text.lines() {
        if line.starts_with("```") {
            in_sh = !in_sh && line.trim() == "```sh";
            continue;
        }
        if in_sh && line.starts_with(RUN) {
            out.push(line.to_string());
        }
    }
    out
}

#[test]
fn every_tool_command_of_the_guides_runs() {
    let bin = env!("CARGO_BIN_EXE_flakeid");
    let dir = std::env::temp_dir().join(format!("flakeid-docs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tmp = dir.display().to_string();
    let mut ran = 0;
    for guide in GUIDES {
        let text = std::fs::read_to_string(root().join(guide)).unwrap();
        let found = commands(&text);
        assert!(!found.is_empty(), "{guide}: no tool commands found");
        for command in found {
            // Paths first, then the binary (whose own path may lie under /tmp).
            let line = command
                .replace("/var/lib/flakeid", &format!("{tmp}/var-lib"))
                .replace("/tmp/", &format!("{tmp}/"))
                .replace(RUN, &format!("'{bin}'"));
            // `$HOME` (the file store's example directory) is the test's too.
            let out = Command::new("bash")
                .args(["-o", "pipefail", "-c", &line])
                .env("HOME", &dir)
                .env_remove("XDG_STATE_HOME")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{guide}: `{command}` failed ({}):\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            ran += 1;
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    println!("ran {ran} commands");
    assert!(ran >= 20, "only {ran} commands found in the guides");
}
