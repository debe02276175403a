//! What the page store ([`crate::page_store`], also as `page_store::records`) hands
//! out and takes in, whichever backend keeps the pages: plain records, no database
//! types; below the store and its backends, which build them. Times are unix seconds; ids are never reused
//! and versions only grow (SPEC §3), which the search fingerprint relies on.

use crate::domain::{PageBody, PageSlug, PageTitle};

/// A page as a reader sees it (no PIN hash).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Page {
    pub id: i64,
    pub slug: String,
    pub title: String,
    pub body: String,
    pub version: i64,
    pub lifecycle: String,
    pub created_at: i64,
    pub updated_at: i64,
}

/// One ledger row: display fields only, never the body.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PageSummary {
    pub slug: String,
    pub title: String,
    pub version: i64,
    pub updated_at: i64,
}

/// One page of the ledger: the number of candidates in all, and `limit` of them
/// from `offset`, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerPage {
    pub total: i64,
    pub rows: Vec<PageSummary>,
}

/// One search candidate: `(id, current_version)` plus display fields, never the body
/// or PIN hash (SPEC §5 gate 5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub id: i64,
    pub version: i64,
    pub slug: String,
    pub title: String,
    pub updated_at: i64,
}

/// The pages changed after a generation, ids ascending: each one's candidate row
/// now, or `None` when it is no longer a candidate.
pub type ChangedPages = Vec<(i64, Option<Candidate>)>;

/// What an upsert did to the row of its slug.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upserted {
    Inserted,
    /// Title or body changed; the new `current_version`.
    Updated(i64),
    Unchanged,
}

/// A page the API just created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedRow {
    pub id: i64,
    pub slug: PageSlug,
    /// Always 1.
    pub version: i64,
}

/// Why a create wrote nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateRefused {
    /// The writer asked for this slug and a page (in any state) already has it.
    SlugTaken(PageSlug),
}

/// What an update sets: the new title and/or body, `None` keeping the stored one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageEdit {
    pub title: Option<PageTitle>,
    pub body: Option<PageBody>,
}

/// The two one-way state changes of a page (SPEC §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateChange {
    /// Leaves the ledger and search; archiving an archived page changes nothing.
    Archive,
    /// Leaves the ledger, search and `/p/{slug}`; the first `claimed_at` stays.
    Claim,
}

/// A page's state after archive or claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateRow {
    pub slug: String,
    pub version: i64,
    /// `active` or `archived`.
    pub lifecycle: String,
    pub claimed_at: Option<i64>,
    pub updated_at: i64,
}

/// What a PIN check needs to know about the page with this slug, in any state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinRecord {
    pub id: i64,
    /// `None` when the page was created without a PIN.
    pub pin_hash: Option<String>,
    /// Archived or claimed: not a candidate, so public reads answer 404.
    pub gone: bool,
}

/// One page of an import, ready to write: its PIN already hashed (argon2id PHC).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportPage {
    pub slug: PageSlug,
    pub title: PageTitle,
    pub body: PageBody,
    pub pin_hash: Option<String>,
}

/// How many pages of an import were new, changed or already as given.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ImportCounts {
    pub inserted: usize,
    pub updated: usize,
    pub unchanged: usize,
}

impl ImportCounts {
    /// Counts one upsert's outcome.
    pub fn add(&mut self, upserted: Upserted) {
        match upserted {
            Upserted::Inserted => self.inserted += 1,
            Upserted::Updated(_) => self.updated += 1,
            Upserted::Unchanged => self.unchanged += 1,
        }
    }
}

/// One candidate's fields, borrowed (from a row being read, or from where a
/// snapshot keeps them): a [`Candidate`] without its two allocations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CandidateRef<'a> {
    pub id: i64,
    pub version: i64,
    pub slug: &'a str,
    pub title: &'a str,
    pub updated_at: i64,
}

impl CandidateRef<'_> {
    /// An owned copy.
    pub fn to_candidate(&self) -> Candidate {
        Candidate {
            id: self.id,
            version: self.version,
            slug: self.slug.to_owned(),
            title: self.title.to_owned(),
            updated_at: self.updated_at,
        }
    }
}

impl Candidate {
    /// This candidate's fields, borrowed.
    pub fn borrowed(&self) -> CandidateRef<'_> {
        CandidateRef {
            id: self.id,
            version: self.version,
            slug: &self.slug,
            title: &self.title,
            updated_at: self.updated_at,
        }
    }
}
