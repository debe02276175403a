//! What the search modules' unit tests share: a deterministic generator, the
//! bundled demo corpus's titles, and candidate rows.

use std::io::Read as _;

use crate::page_store::Candidate;

/// A small deterministic generator (a 64-bit LCG's high bits): the tests must
/// not depend on a seed chosen at run time.
pub(crate) struct Lcg(pub u64);

impl Lcg {
    /// The next number (31 bits).
    pub fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as usize
    }

    /// The next number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.next() % n.max(1)
    }

    /// An element of `items`, drawn at random.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// `n` words of `vocab`, drawn at random, joined by spaces.
    pub fn words(&mut self, vocab: &[&str], n: usize) -> String {
        (0..n)
            .map(|_| *self.pick(vocab))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Words with typo and prefix neighbours among themselves (`data`/`date`,
/// `library`/`librar`, `json`/`jsno`) and common ones, so that random titles of
/// them match queries in every way and rarity weights are below 1. Tests add
/// words of their own after these.
pub(crate) const NEAR_WORDS: &[&str] = &[
    "data", "date", "tool", "tools", "for", "the", "library", "librar", "parser", "parse", "json",
    "jsno", "fast", "a", "http", "client", "server", "rest",
];

/// Queries over [`NEAR_WORDS`]: two words, a typo, common words only, a typo
/// and a prefix, one word. Tests add queries of their own after these.
pub(crate) const NEAR_QUERIES: &[&str] = &[
    "data tool",
    "json parsre",
    "the for a",
    "http clinet libr",
    "fast",
];

/// The titles of the bundled demo corpus (Debian packages), the first `at_most`.
pub(crate) fn demo_titles(at_most: usize) -> Vec<String> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(crate::import::DEMO_CORPUS_GZ)
        .read_to_string(&mut text)
        .unwrap();
    text.lines()
        .take(at_most)
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| Some(v.get("title")?.as_str()?.to_owned()))
        .collect()
}

/// Page `id` at `version`, titled `title` (slug `p<id>`, updated at 0).
pub(crate) fn page(id: i64, version: i64, title: &str) -> Candidate {
    Candidate {
        id,
        version,
        slug: format!("p{id}"),
        title: title.to_owned(),
        updated_at: 0,
    }
}
