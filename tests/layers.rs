//! The core's layers read bottom-up, checked on its sources: the generator (everything under
//! `src/generator/` and `src/sharded.rs`) names nothing of the claim layer above it; no two
//! files use each other (the crate root, which only re-exports, aside); no file is over 480
//! lines before its tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every source file of the core, by path under `src/`, with its text before `#[cfg(test)]`.
fn sources() -> BTreeMap<String, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    walk(&root, &root, &mut out);
    assert!(
        out.len() > 40,
        "the sources were not found under {}",
        root.display()
    );
    out
}

/// The code before the tests of every `.rs` file under `dir`, by its path from `root`.
fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
    {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap_or("").to_string();
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, code);
            }
        }
    }
}

/// The module path of a file: `claim/holder.rs` is `claim::holder`, `claim/mod.rs` is `claim`.
fn module_of(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// Lines of code (not comments, not `mod` declarations, not re-exports, which make a parent
/// show its children's items rather than depend on them).
fn code_lines(code: &str) -> impl Iterator<Item = &str> {
    code.lines().map(str::trim).filter(|t| {
        !t.starts_with("//")
            && !t.starts_with("mod ")
            && !t.starts_with("pub mod ")
            && !t.starts_with("pub(crate) mod ")
            && !t.starts_with("pub use ")
            && !t.starts_with("pub(crate) use ")
            && !t.starts_with("pub(super) use ")
    })
}

/// The files a file uses by path (`crate::a::b`, `super::c`, `self::d`), resolved to the
/// deepest module file each path names.
fn uses(file: &str, code: &str, modules: &BTreeMap<Vec<String>, String>) -> BTreeSet<String> {
    let base = module_of(file);
    let mut out = BTreeSet::new();
    for line in code_lines(code) {
        let mut rest = line;
        while let Some(i) = ["crate::", "super::", "self::"]
            .iter()
            .filter_map(|p| rest.find(p))
            .min()
        {
            let word_start = i == 0 || !rest.as_bytes()[i - 1].is_ascii_alphanumeric();
            let tail = &rest[i..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(tail.len());
            let path: Vec<&str> = tail[..end].split("::").filter(|s| !s.is_empty()).collect();
            rest = &tail[end.max(1)..];
            if !word_start {
                continue;
            }
            let mut cur: Vec<String> = match path.first() {
                Some(&"crate") => Vec::new(),
                Some(&"super") => base[..base.len().saturating_sub(1)].to_vec(),
                _ => base.clone(),
            };
            let mut segs = &path[1..];
            while let Some((&"super", more)) = segs.split_first() {
                cur.pop();
                segs = more;
            }
            let mut best = cur.clone();
            for seg in segs {
                cur.push((*seg).to_string());
                if modules.contains_key(&cur) {
                    best = cur.clone();
                } else {
                    break;
                }
            }
            // A path through the crate root names a re-export (`crate::Layout`), not a use
            // of `lib.rs`, which only re-exports and keeps `__private`.
            if let Some(target) = modules.get(&best).filter(|t| *t != file && *t != "lib.rs") {
                out.insert(target.clone());
            }
        }
    }
    out
}

#[test]
fn the_generator_names_nothing_of_the_claim_layer() {
    let mut found = Vec::new();
    for (file, code) in sources() {
        if file.starts_with("generator/") || file == "sharded.rs" {
            for (n, line) in code_lines(&code).enumerate() {
                if line.contains("crate::claim") || line.contains("Claim") {
                    found.push(format!("src/{file} (code line {}): {line}", n + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn no_two_files_of_the_core_use_each_other() {
    let sources = sources();
    let modules: BTreeMap<Vec<String>, String> =
        sources.keys().map(|f| (module_of(f), f.clone())).collect();
    let graph: BTreeMap<&String, BTreeSet<String>> = sources
        .iter()
        .map(|(f, code)| (f, uses(f, code, &modules)))
        .collect();
    // The check sees edges at all: the claim layer uses the generator.
    assert!(graph[&"claim/build.rs".to_string()].contains("generator/mod.rs"));
    let mut circles = Vec::new();
    for (a, deps) in &graph {
        for b in deps {
            if a.as_str() < b.as_str() && graph.get(b).is_some_and(|d| d.contains(a.as_str())) {
                circles.push(format!("src/{a} <-> src/{b}"));
            }
        }
    }
    assert!(circles.is_empty(), "{circles:#?}");
}

#[test]
fn no_file_of_the_core_is_over_480_lines_before_its_tests() {
    let long: Vec<String> = sources()
        .into_iter()
        .map(|(f, code)| (f, code.lines().count()))
        .filter(|(_, n)| *n > 480)
        .map(|(f, n)| format!("src/{f}: {n} lines"))
        .collect();
    assert!(long.is_empty(), "{long:#?}");
}

/// The same bound on every package of the workspace: each member's `src/` (the packages
/// beside the core, the Python extension and its harness, the test kits).
#[test]
fn no_file_of_the_workspace_is_over_480_lines_before_its_tests() {
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = BTreeMap::new();
    for member in std::fs::read_dir(top).unwrap().flatten() {
        for package in [member.path(), member.path().join("harness")] {
            let src = package.join("src");
            if package.join("Cargo.toml").is_file() && src.is_dir() {
                walk(&src, top, &mut files);
            }
        }
    }
    assert!(
        files.keys().any(|f| f.starts_with("serve/src/")) && files.len() > 60,
        "the packages' sources were not found under {}",
        top.display()
    );
    let long: Vec<String> = files
        .into_iter()
        .map(|(f, code)| (f, code.lines().count()))
        .filter(|(_, n)| *n > 480)
        .map(|(f, n)| format!("{f}: {n} lines"))
        .collect();
    assert!(long.is_empty(), "{long:#?}");
}

/// No two files of any other package of the workspace use each other either (the service's
/// handlers and its metrics, the tool's subcommands and what they share, ...).
#[test]
fn no_two_files_of_any_package_use_each_other() {
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut circles = Vec::new();
    let mut edges = 0;
    for member in std::fs::read_dir(top).unwrap().flatten() {
        for package in [member.path(), member.path().join("harness")] {
            let src = package.join("src");
            if !(package.join("Cargo.toml").is_file() && src.is_dir()) {
                continue;
            }
            let mut sources = BTreeMap::new();
            walk(&src, &src, &mut sources);
            let modules: BTreeMap<Vec<String>, String> = sources
                .keys()
                .filter(|f| f.as_str() != "main.rs")
                .map(|f| (module_of(f), f.clone()))
                .collect();
            let graph: BTreeMap<&String, BTreeSet<String>> = sources
                .iter()
                .map(|(f, code)| (f, uses(f, code, &modules)))
                .collect();
            edges += graph.values().map(BTreeSet::len).sum::<usize>();
            let name = package.strip_prefix(top).unwrap().display().to_string();
            for (a, deps) in &graph {
                for b in deps {
                    if a.as_str() < b.as_str()
                        && graph.get(b).is_some_and(|d| d.contains(a.as_str()))
                    {
                        circles.push(format!("{name}/src/{a} <-> {name}/src/{b}"));
                    }
                }
            }
        }
    }
    // The check sees edges at all.
    assert!(edges > 50, "{edges} uses between the packages' files");
    assert!(circles.is_empty(), "{circles:#?}");
}
