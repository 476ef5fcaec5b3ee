//! Every Markdown file of the repository renders as written (CommonMark with tables, as
//! GitHub and docs.rs render it): no code fence left open by a closing line with text after
//! it (which swallows what follows into the block), no table row cut off from its table by
//! a blank line (which renders as a paragraph of pipes).

use std::path::{Path, PathBuf};
use std::process::Command;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The tracked Markdown files (`git ls-files`), or every `.md` under the root but build
/// outputs where git or its metadata is missing.
fn markdown_files() -> Vec<PathBuf> {
    let root = root();
    if let Ok(out) = Command::new("git")
        .args(["ls-files", "-z", "*.md"])
        .current_dir(&root)
        .output()
        && out.status.success()
    {
        return out
            .stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| root.join(String::from_utf8_lossy(p).as_ref()))
            .collect();
    }
    let mut files = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() {
                if !matches!(name.to_str(), Some("target" | ".git" | "node_modules")) {
                    dirs.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files
}

/// What renders wrongly in `text`: each problem with its line.
fn problems(text: &str) -> Vec<String> {
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    let mut found = Vec::new();
    let (mut in_code, mut in_table) = (false, false);
    for (event, at) in Parser::new_ext(text, Options::ENABLE_TABLES).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_)) => in_code = true,
            Event::End(TagEnd::CodeBlock) => in_code = false,
            // A paragraph whose first line is a row of cells: a row cut off from its table.
            Event::Start(Tag::Paragraph) if !in_table => {
                let first = text[at.clone()].lines().next().unwrap_or("").trim();
                if first.starts_with('|') && first.ends_with('|') && first.matches('|').count() >= 3
                {
                    found.push(format!(
                        "line {}: a table row outside a table (a blank line between it and its table?): {:.60}",
                        line_of(at.start),
                        first
                    ));
                }
            }
            Event::Start(Tag::Table(_)) => in_table = true,
            Event::End(TagEnd::Table) => in_table = false,
            Event::Text(t) if in_code => {
                let fence = t.lines().find(|l| l.trim_start().starts_with("```"));
                if let Some(fence) = fence {
                    found.push(format!(
                        "line {}: a code block holds a fence ({fence:?}): a closing fence with text after it does not close",
                        line_of(at.start)
                    ));
                }
            }
            _ => {}
        }
    }
    found
}

#[test]
fn every_markdown_file_renders_as_written() {
    let files = markdown_files();
    assert!(
        files.iter().any(|f| f.ends_with("README.md")),
        "found no Markdown: {files:?}"
    );
    let mut wrong = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for p in problems(&text) {
            wrong.push(format!("{}: {p}", file.display()));
        }
    }
    assert!(
        wrong.is_empty(),
        "Markdown that renders wrongly:\n{}",
        wrong.join("\n")
    );
}

/// The check itself catches both faults it is for, on a text of each.
#[test]
fn the_check_catches_a_swallowing_fence_and_a_cut_off_row() {
    let fence = "```sh\necho a\n``` and text after\n\nmore prose\n\n```sh\necho b\n```\n";
    assert_eq!(problems(fence).len(), 1, "{:?}", problems(fence));
    let table = "| a | b |\n|---|---|\n| 1 | 2 |\n\n| `3` | 4 |\n";
    assert_eq!(problems(table).len(), 1, "{:?}", problems(table));
    let fine = "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n```sh\necho a\n```\n";
    assert!(problems(fine).is_empty(), "{:?}", problems(fine));
}

/// No Markdown names a path of the machine it was written on (a user's or a workspace's
/// home): a command in the docs runs from a clone, wherever it is.
#[test]
fn no_markdown_names_a_path_of_its_writers_machine() {
    let mut found = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if ["/work/", "/root/", "/home/"]
                .iter()
                .any(|p| line.contains(p))
            {
                found.push(format!("{}:{}: {line:.100}", file.display(), n + 1));
            }
        }
    }
    assert!(found.is_empty(), "machine paths:\n{}", found.join("\n"));
}
