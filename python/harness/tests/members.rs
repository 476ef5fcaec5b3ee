//! Building or running the tool never builds the Python extension: it is no default member
//! of the workspace, and no default member reaches PyO3, numpy or Arrow through its normal
//! or build dependencies (`cargo metadata`'s resolved graph).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;

#[test]
fn the_tool_never_builds_the_python_extension() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--offline"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let name_of: HashMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let defaults: Vec<&str> = meta["workspace_default_members"]
        .as_array()
        .expect("cargo metadata lists the default members")
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let default_names: BTreeSet<&str> = defaults.iter().map(|id| name_of[id]).collect();
    assert!(default_names.contains("flakeid-cli"), "{default_names:?}");
    assert!(
        !default_names.contains("flakeid-python"),
        "{default_names:?}"
    );
    // Normal and build edges of the resolved graph, from every default member.
    let edges: HashMap<&str, Vec<&str>> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let deps = n["deps"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| {
                    d["dep_kinds"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|k| k["kind"].is_null() || k["kind"] == "build")
                })
                .map(|d| d["pkg"].as_str().unwrap())
                .collect();
            (n["id"].as_str().unwrap(), deps)
        })
        .collect();
    let mut seen = BTreeSet::new();
    let mut todo = defaults.clone();
    while let Some(id) = todo.pop() {
        if seen.insert(id) {
            todo.extend(edges.get(id).into_iter().flatten());
        }
    }
    let reached: BTreeSet<&str> = seen.iter().map(|id| name_of[id]).collect();
    for heavy in ["pyo3", "numpy", "arrow-array", "flakeid-python"] {
        assert!(
            !reached.contains(heavy),
            "a default member reaches {heavy}: `cargo build` would build the Python extension"
        );
    }
}
