//! The layers read bottom-up, checked on the sources: the core's generator (everything
//! under `src/generator/`) names nothing of the claim layer above it; no files of any
//! package use each other in a circle, of any length (the crate root, which only
//! re-exports, aside); a module with children is `name/mod.rs`, never `name.rs` beside
//! `name/`; no file is over 480 lines before its tests.

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

/// The code before the tests of every `.rs` file under `dir` but test modules' own files,
/// by its path from `root`.
fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
    {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "rs")
                // A `tests.rs` is a test module's own file (`#[cfg(test)] mod tests;`).
                && path.file_name().is_some_and(|n| n != "tests.rs")
            {
                let text = std::fs::read_to_string(&path).unwrap();
                let code = before_tests(&text).to_string();
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

/// A file's text before its inline test module (`#[cfg(test)]` over `mod tests {`); a
/// `#[cfg(test)]` on anything else (`mod tests;`, a test-only impl) does not end the code.
fn before_tests(text: &str) -> &str {
    let mut at = 0;
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if t.starts_with("#[cfg(")
            && t.contains("test")
            && let Some(next) = lines.peek().map(|l| l.trim())
            && next.starts_with("mod ")
            && next.ends_with('{')
        {
            return &text[..at];
        }
        at += line.len();
    }
    text
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
/// show its children's items rather than depend on them; a re-export over several lines is
/// left out whole).
fn code_lines(code: &str) -> impl Iterator<Item = &str> {
    let mut in_reexport = false;
    code.lines().map(str::trim).filter(move |t| {
        if in_reexport {
            in_reexport = !t.ends_with(';');
            return false;
        }
        if ["pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .any(|p| t.starts_with(p))
        {
            in_reexport = !t.ends_with(';');
            return false;
        }
        !t.starts_with("//")
            && !t.starts_with("mod ")
            && !t.starts_with("pub mod ")
            && !t.starts_with("pub(crate) mod ")
    })
}

/// The absolute module path of `path` as written in module `base`, when it starts with
/// `crate::`, `self::` or `super::` (as many as it has); `None` for any other start.
fn absolute(base: &[String], path: &[String]) -> Option<Vec<String>> {
    let (mut out, mut rest) = match path.first()?.as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (base.to_vec(), &path[1..]),
        "super" => (base.to_vec(), path),
        _ => return None,
    };
    while let Some((_, more)) = rest.split_first().filter(|(head, _)| *head == "super") {
        out.pop();
        rest = more;
    }
    out.extend(rest.iter().cloned());
    Some(out)
}

/// The modules of one package and the names each re-exports, to follow a path through a
/// re-export (`crate::Layout`, `crate::error::ParseError`) to the file that defines it.
struct Tree {
    /// Module path -> file.
    modules: BTreeMap<Vec<String>, String>,
    /// Module path -> name it re-exports -> the absolute path it names.
    exports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
}

impl Tree {
    fn new(sources: &BTreeMap<String, String>) -> Tree {
        let modules: BTreeMap<Vec<String>, String> = sources
            .keys()
            .filter(|f| f.as_str() != "main.rs")
            .map(|f| (module_of(f), f.clone()))
            .collect();
        let mut exports = BTreeMap::new();
        for (file, code) in sources.iter().filter(|(f, _)| f.as_str() != "main.rs") {
            let base = module_of(file);
            let mut table = BTreeMap::new();
            for statement in reexport_statements(code) {
                for (name, path) in use_tree(&statement) {
                    let absolute = match absolute(&base, &path) {
                        Some(absolute) => absolute,
                        // A child module's item, or another crate's (core, std, loom, ...).
                        None if modules
                            .contains_key(&[base.clone(), path[..1].to_vec()].concat()) =>
                        {
                            [base.clone(), path].concat()
                        }
                        None => continue,
                    };
                    table.insert(name, absolute);
                }
            }
            exports.insert(base, table);
        }
        Tree { modules, exports }
    }

    /// The file that defines what an absolute path names: the deepest module file on it,
    /// followed through that module's re-export of the next name.
    fn file_of(&self, path: &[String], depth: usize) -> Option<&String> {
        let mut best = Vec::new();
        let mut rest = path;
        while let Some((seg, more)) = rest.split_first() {
            let mut next = best.clone();
            next.push(seg.clone());
            if !self.modules.contains_key(&next) {
                break;
            }
            best = next;
            rest = more;
        }
        if let (Some(name), true) = (rest.first(), depth < 8)
            && let Some(target) = self.exports.get(&best).and_then(|t| t.get(name))
        {
            return self.file_of(target, depth + 1);
        }
        self.modules.get(&best)
    }
}

/// The `pub use` statements of a file's code, each as one line (they may span several).
fn reexport_statements(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: Option<String> = None;
    for line in code.lines().map(str::trim) {
        if let Some(text) = open.as_mut() {
            text.push(' ');
            text.push_str(line);
        } else if let Some(rest) = ["pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .find_map(|p| line.strip_prefix(p))
        {
            open = Some(rest.to_string());
        }
        if open.as_ref().is_some_and(|t| t.ends_with(';')) {
            out.push(open.take().unwrap().trim_end_matches(';').to_string());
        }
    }
    out
}

/// The names a use tree brings in, each with its path: `a::{B, C as D}` is `B -> a::B`
/// and `D -> a::C`.
fn use_tree(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    expand(&[], text, &mut out);
    out
}

fn expand(prefix: &[String], text: &str, out: &mut Vec<(String, Vec<String>)>) {
    let text = text.trim();
    let segments = |t: &str| -> Vec<String> {
        t.split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    if let Some(open) = text.find('{') {
        let prefix = [prefix.to_vec(), segments(&text[..open])].concat();
        let inner = &text[open + 1..text.rfind('}').unwrap_or(text.len())];
        let (mut level, mut from) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => level += 1,
                '}' => level -= 1,
                ',' if level == 0 => {
                    expand(&prefix, &inner[from..i], out);
                    from = i + 1;
                }
                _ => {}
            }
        }
        expand(&prefix, &inner[from..], out);
    } else {
        let (path, alias) = match text.split_once(" as ") {
            Some((path, alias)) => (path, Some(alias.trim())),
            None => (text, None),
        };
        let full = [prefix.to_vec(), segments(path)].concat();
        if let Some(last) = full.last().filter(|s| *s != "self" && *s != "*") {
            out.push((alias.unwrap_or(last).to_string(), full));
        }
    }
}

/// The files a file uses by path (`crate::a::b`, `super::c`, `self::d`), resolved to the
/// file that defines what each path names, through re-exports.
fn uses(file: &str, code: &str, tree: &Tree) -> BTreeSet<String> {
    let base = module_of(file);
    let mut out = BTreeSet::new();
    // A name a file re-exports and also uses itself (`pub use crate::parse::ParseError`
    // beside `Parse(ParseError)`) is a use of the file that defines it.
    let words: BTreeSet<&str> = code_lines(code)
        .flat_map(|l| l.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .collect();
    // A path to the crate root itself names a re-export it does not have (a macro,
    // `__private`), not a use of `lib.rs`.
    let mut add = |path: &[String]| {
        if let Some(target) = tree
            .file_of(path, 0)
            .filter(|t| *t != file && *t != "lib.rs")
        {
            out.insert(target.clone());
        }
    };
    for (name, path) in tree.exports.get(&base).into_iter().flatten() {
        if words.contains(name.as_str()) {
            add(path);
        }
    }
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
            // `crate::a::{B, C}`: each name of the braces is a path of its own.
            let names: Vec<String> = if tail[end..].starts_with('{') {
                let close = tail[end..].find('}').map_or(tail.len(), |c| end + c);
                tail[end + 1..close]
                    .split(',')
                    .map(|n| n.split_whitespace().next().unwrap_or("").to_string())
                    .filter(|n| !n.is_empty() && n != "self")
                    .collect()
            } else {
                vec![String::new()]
            };
            rest = &tail[end.max(1)..];
            if !word_start {
                continue;
            }
            let path: Vec<String> = path.iter().map(|s| s.to_string()).collect();
            let Some(cur) = absolute(&base, &path) else {
                continue;
            };
            for name in &names {
                let mut full = cur.clone();
                if !name.is_empty() {
                    full.push(name.clone());
                }
                add(&full);
            }
        }
    }
    out
}

/// Every circle of uses in a graph of files: each group of two or more files that reach
/// each other through their uses (a strongly connected component, Tarjan's algorithm), as
/// one line naming its files in order.
fn circles(graph: &BTreeMap<&String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<&'g String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        out: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            let graph = self.graph;
            for w in graph.get(&v.to_string()).into_iter().flatten() {
                let w = w.as_str();
                if !graph.contains_key(&w.to_string()) {
                    continue;
                }
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    group.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.out.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v.as_str());
        }
    }
    walk.out
}

#[test]
fn the_generator_names_nothing_of_the_claim_layer() {
    let mut found = Vec::new();
    for (file, code) in sources() {
        if file.starts_with("generator/") {
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
fn no_files_of_the_core_use_each_other_in_a_circle() {
    let sources = sources();
    let tree = Tree::new(&sources);
    let graph: BTreeMap<&String, BTreeSet<String>> = sources
        .iter()
        .map(|(f, code)| (f, uses(f, code, &tree)))
        .collect();
    // The check sees edges at all: the claim layer uses the generator.
    assert!(graph[&"claim/build.rs".to_string()].contains("generator/mod.rs"));
    let found: Vec<String> = circles(&graph)
        .into_iter()
        .map(|group| group.join(" -> "))
        .collect();
    assert!(found.is_empty(), "{found:#?}");
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

/// No circle of uses in any other package of the workspace either (the service's handlers
/// and its metrics, the tool's subcommands and what they share, ...).
#[test]
fn no_files_of_any_package_use_each_other_in_a_circle() {
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut circles_found = Vec::new();
    let mut edges = 0;
    for member in std::fs::read_dir(top).unwrap().flatten() {
        for package in [member.path(), member.path().join("harness")] {
            let src = package.join("src");
            if !(package.join("Cargo.toml").is_file() && src.is_dir()) {
                continue;
            }
            let mut sources = BTreeMap::new();
            walk(&src, &src, &mut sources);
            let tree = Tree::new(&sources);
            let graph: BTreeMap<&String, BTreeSet<String>> = sources
                .iter()
                .map(|(f, code)| (f, uses(f, code, &tree)))
                .collect();
            edges += graph.values().map(BTreeSet::len).sum::<usize>();
            let name = package.strip_prefix(top).unwrap().display().to_string();
            for group in circles(&graph) {
                let files: Vec<String> = group.iter().map(|f| format!("{name}/src/{f}")).collect();
                circles_found.push(files.join(", "));
            }
        }
    }
    // The check sees edges at all.
    assert!(edges > 50, "{edges} uses between the packages' files");
    assert!(circles_found.is_empty(), "{circles_found:#?}");
}

/// The packages of the workspace with sources: each member's `src/` (the packages beside
/// the core, the Python extension and its harness, the test kits), and the core's.
fn package_sources() -> Vec<std::path::PathBuf> {
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![top.join("src")];
    for member in std::fs::read_dir(top).unwrap().flatten() {
        for package in [member.path(), member.path().join("harness")] {
            if package.join("Cargo.toml").is_file() && package.join("src").is_dir() {
                out.push(package.join("src"));
            }
        }
    }
    out
}

/// Every folder under `dir` that has a file of the same name beside it (`a.rs` and `a/`).
fn name_rs_beside_folder(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.with_extension("rs").is_file() {
                out.push(path.with_extension("rs").display().to_string());
            }
            name_rs_beside_folder(&path, out);
        }
    }
}

/// One convention for a module with children in every package: `name/mod.rs`, as the
/// core's `claim/`, `generator/` and `layout/` are, never `name.rs` beside `name/`.
#[test]
fn a_module_with_children_is_a_folder_with_mod_rs() {
    let packages = package_sources();
    assert!(packages.len() > 8, "{packages:?}");
    let mut found = Vec::new();
    for src in &packages {
        name_rs_beside_folder(src, &mut found);
    }
    assert!(found.is_empty(), "{found:#?}");
}
