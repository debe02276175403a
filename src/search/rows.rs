//! The display fields of every candidate, kept by the snapshot for the rows a
//! search shows: compact, by index slot, and shared between snapshots.
//!
//! A row costs its text (slug and title, back to back in one array per 1,024
//! slots) plus 17 bytes, where a `Candidate` with two `String`s cost about 170
//! at a million pages. Arrays are chunked (see [`crate::search::chunked`]), so
//! the next snapshot shares them and a changed page copies one chunk of each.

pub use crate::page_records::CandidateRef;
use crate::search::chunked::{ChunkedLists, ChunkedVec};

// Unit tests run with tiny chunks, so that a few rows cross chunk boundaries.
const FIELD_BITS: u32 = if cfg!(test) { 2 } else { 12 };
const TEXT_BITS: u32 = if cfg!(test) { 1 } else { 10 };

/// Rows by slot; a free slot holds an empty row.
#[derive(Debug, Clone, Default)]
pub struct Rows {
    version: ChunkedVec<i64, FIELD_BITS>,
    updated_at: ChunkedVec<i64, FIELD_BITS>,
    /// Bytes of the slug at the start of the slot's text (slugs are at most 80).
    slug_len: ChunkedVec<u16, FIELD_BITS>,
    /// Slug, then title, UTF-8.
    text: ChunkedLists<u8, TEXT_BITS>,
}

impl Rows {
    /// Number of slots.
    pub fn len(&self) -> usize {
        self.version.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slot `slot`'s row with page id `id`, if the slot was ever written.
    pub fn get(&self, slot: usize, id: i64) -> Option<CandidateRef<'_>> {
        if slot >= self.len() {
            return None;
        }
        let text = self.text.get(slot);
        let (slug, title) = text.split_at(usize::from(*self.slug_len.get(slot)));
        Some(CandidateRef {
            id,
            version: *self.version.get(slot),
            // Both halves were written from `str`s, split where the slug ended.
            slug: std::str::from_utf8(slug).unwrap_or_default(),
            title: std::str::from_utf8(title).unwrap_or_default(),
            updated_at: *self.updated_at.get(slot),
        })
    }

    /// Writes `row` at `slot`, which is at most [`Rows::len`] (then it is
    /// added). Cost: one chunk of each array shifted or copied.
    pub fn set(&mut self, slot: usize, row: CandidateRef<'_>) {
        // A slug is at most 80 bytes (`domain::SLUG_MAX`); a longer one is kept
        // empty rather than cut inside a char.
        let slug = if row.slug.len() <= usize::from(u16::MAX) {
            row.slug
        } else {
            ""
        };
        let slug_len = slug.len() as u16;
        if slot == self.len() {
            self.version.push(row.version);
            self.updated_at.push(row.updated_at);
            self.slug_len.push(slug_len);
            // No row of its own is made: a bulk build pushes a million.
            self.text
                .push_concat(&[slug.as_bytes(), row.title.as_bytes()]);
        } else {
            let mut text = Vec::with_capacity(slug.len() + row.title.len());
            text.extend_from_slice(slug.as_bytes());
            text.extend_from_slice(row.title.as_bytes());
            self.version.set(slot, row.version);
            self.updated_at.set(slot, row.updated_at);
            self.slug_len.set(slot, slug_len);
            self.text.set(slot, &text);
        }
    }

    /// Empties slot `slot` (its page left), releasing its text.
    pub fn clear(&mut self, slot: usize) {
        if slot < self.len() {
            self.slug_len.set(slot, 0);
            self.text.set(slot, &[]);
        }
    }

    /// Releases growth slack (after a bulk build).
    pub fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.version.heap_bytes()
            + self.updated_at.heap_bytes()
            + self.slug_len.heap_bytes()
            + self.text.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page_records::Candidate;

    fn row(id: i64, slug: &str, title: &str) -> Candidate {
        Candidate {
            id,
            version: id * 10,
            slug: slug.to_owned(),
            title: title.to_owned(),
            updated_at: id * 100,
        }
    }

    #[test]
    fn rows_read_back_as_written_and_copies_keep_theirs() {
        let mut rows = Rows::default();
        let written: Vec<Candidate> = (0..9)
            .map(|i| row(i, &format!("page-{i}"), &format!("Café title {i} ✓")))
            .collect();
        for (slot, r) in written.iter().enumerate() {
            rows.set(slot, r.borrowed());
        }
        let copy = rows.clone();
        rows.set(
            3,
            row(3, "renamed", "A much longer title than before").borrowed(),
        );
        rows.clear(5);
        for (slot, r) in written.iter().enumerate() {
            assert_eq!(copy.get(slot, r.id).unwrap().to_candidate(), *r);
        }
        assert_eq!(rows.get(3, 3).unwrap().slug, "renamed");
        assert_eq!(
            rows.get(3, 3).unwrap().title,
            "A much longer title than before"
        );
        assert_eq!(rows.get(5, 5).unwrap().title, "");
        assert_eq!(rows.get(4, 4).unwrap().to_candidate(), written[4]);
        assert_eq!(rows.get(9, 9), None);
    }
}
