//! README's "Layout" section cannot go stale: every path it names exists, and every
//! source file under `src/` is named, by itself or by a folder entry (`src/db/`).

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
