//! Signposts cannot go stale: README's "Layout" section names every source file
//! under `src/` (by itself or by a folder entry such as `src/db/`) and only paths
//! that exist, and every `§N` cited in the code and docs names a section that the
//! contract, `docs/spec.md`, has.

use std::path::{Path, PathBuf};

fn layout_entries() -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let section = readme
        .split("\n## Layout")
        .nth(1)
        .expect("README has a Layout section");
    let block = section
        .split("```")
        .nth(1)
        .expect("the Layout section holds a code block");
    block
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|first| first.contains('/') || first.contains('.'))
        .map(str::to_owned)
        .collect()
}

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            source_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_path_in_the_readme_layout_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let entries = layout_entries();
    assert!(entries.len() >= 10, "only {} entries read", entries.len());
    for entry in &entries {
        assert!(
            root.join(entry).exists(),
            "README Layout names {entry}, which does not exist"
        );
    }
}

#[test]
fn every_source_file_is_named_in_the_readme_layout() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let entries = layout_entries();
    let mut files = Vec::new();
    source_files(&root.join("src"), &mut files);
    assert!(files.len() >= 20, "only {} source files found", files.len());
    for file in files {
        let rel = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let covered = entries
            .iter()
            .any(|e| *e == rel || (e.ends_with('/') && rel.starts_with(e.as_str())));
        assert!(covered, "{rel} is not in README's Layout section");
    }
}

/// Files whose text may cite the contract: sources, tests (not vendored ones),
/// docs, examples, benches and scripts, and README.
fn citing_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    let mut pending: Vec<PathBuf> = ["src", "tests", "docs", "examples", "benches", "scripts"]
        .iter()
        .map(|d| root.join(d))
        .collect();
    while let Some(dir) = pending.pop() {
        if dir == root.join("tests/vendor") {
            continue;
        }
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| {
                ["rs", "md", "sh", "lua", "toml", "sql"]
                    .iter()
                    .any(|x| e == *x)
            }) {
                files.push(path);
            }
        }
    }
    files
}

/// Every `§N` in `text` (a `§`, an optional space, digits), with its line number.
fn citations(text: &str) -> Vec<(usize, u32)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for (at, _) in line.match_indices('§') {
            let rest = line[at + '§'.len_utf8()..].trim_start_matches(' ');
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(section) = digits.parse() {
                found.push((n + 1, section));
            }
        }
    }
    found
}

#[test]
fn every_cited_section_of_the_contract_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let spec = std::fs::read_to_string(root.join("docs/spec.md")).expect("docs/spec.md");
    let sections: Vec<u32> = spec
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .filter_map(|l| l.split_once('.')?.0.parse().ok())
        .collect();
    assert!(sections.len() >= 6, "sections read: {sections:?}");
    let mut cited = 0;
    let mut missing = Vec::new();
    for file in citing_files(root) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (line, section) in citations(&text) {
            cited += 1;
            if !sections.contains(&section) {
                let rel = file.strip_prefix(root).unwrap().display().to_string();
                missing.push(format!("{rel}:{line} cites §{section}"));
            }
        }
    }
    assert!(cited >= 20, "only {cited} citations found");
    assert!(
        missing.is_empty(),
        "docs/spec.md has sections {sections:?}; these cite others:\n{}",
        missing.join("\n")
    );
}

#[test]
fn citations_are_read_with_and_without_a_space() {
    assert_eq!(
        // Written with escapes, so this file cites nothing itself.
        citations(
            "SPEC \u{a7}5, \u{a7}9\nno \u{a7} here; \u{a7} 10 and \u{a7}\u{b6}\nSPEC \u{a7}2.1"
        ),
        [(1, 5), (1, 9), (2, 10), (3, 2)]
    );
}
