//! Page history (issue 32 §1–§2): the records every page store keeps of each
//! version of a page, and the terms a write is made on (how many versions to keep,
//! which version the writer expects to change). The SQL is each backend's
//! (`sqlite::history`, `postgres_history`); the rules are here.
//!
//! Every write that makes a version (publish, update, archive, claim, restore, an
//! import that changes a page) writes that version's title and body as a row of
//! `page_versions` in the same transaction, then deletes the page's rows older than
//! the newest [`WriteTerms::keep`]. A write whose expected version is not the
//! page's current one changes nothing at all: no version, no generation (so no
//! search refresh), no history row.

use serde::Serialize;

use super::PageFuture;
use crate::page_records::{PageEdit, StateChange, StateRow};

/// How many versions per page are kept unless `PAGE_HISTORY_VERSIONS` says
/// otherwise.
pub const DEFAULT_HISTORY_VERSIONS: i64 = 100;

/// The most `PAGE_HISTORY_VERSIONS` may say.
pub const MAX_HISTORY_VERSIONS: i64 = 100_000;

/// What made a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum VersionKind {
    /// The page was published (version 1).
    Publish,
    /// Title and/or body replaced.
    Update,
    /// The page was archived (title and body as before).
    Archive,
    /// The page was claimed (title and body as before).
    Claim,
    /// Title and body set back to those of an earlier version.
    Restore,
    /// `agent-pages import` changed (or created) the page.
    Import,
}

impl VersionKind {
    /// The name stored in `page_versions.kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            VersionKind::Publish => "publish",
            VersionKind::Update => "update",
            VersionKind::Archive => "archive",
            VersionKind::Claim => "claim",
            VersionKind::Restore => "restore",
            VersionKind::Import => "import",
        }
    }

    /// The kind stored as `name`; an unknown name (the table's CHECK forbids one) is
    /// read as an update.
    pub fn parse(name: &str) -> Self {
        match name {
            "publish" => VersionKind::Publish,
            "archive" => VersionKind::Archive,
            "claim" => VersionKind::Claim,
            "restore" => VersionKind::Restore,
            "import" => VersionKind::Import,
            _ => VersionKind::Update,
        }
    }
}

/// The terms a page write is made on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteTerms {
    /// When the write happens (unix seconds): the page's `updated_at` and the
    /// kept version's `created_at`.
    pub now: i64,
    /// Versions kept per page, this one included (at least 1): older rows of the
    /// page's history are deleted in the write's transaction.
    pub keep: i64,
    /// The version the writer expects the page to be at (`If-Match: "v7"`, the MCP
    /// tools' `expected_version`); `None` writes whatever it is at.
    pub expected: Option<i64>,
}

impl WriteTerms {
    /// Write at `now`, keep `keep` versions, expect nothing.
    pub fn keeping(keep: i64, now: i64) -> Self {
        Self {
            now,
            keep,
            expected: None,
        }
    }
}

/// A conditional write found the page at another version than expected and changed
/// nothing; `current` is the version it is at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionMismatch {
    pub current: i64,
}

/// One version of a page as kept in its history. Times are unix seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageVersion {
    pub version: i64,
    pub title: String,
    /// The Markdown body as it was.
    pub body: String,
    pub kind: VersionKind,
    /// When the version was written.
    pub created_at: i64,
}

/// One row of a page's history list (no body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionSummary {
    pub version: i64,
    pub title: String,
    pub kind: VersionKind,
    pub created_at: i64,
    /// Bytes of the body (UTF-8).
    pub body_bytes: i64,
}

/// One page of a page's history, newest first: the number of versions kept in all
/// and `limit` of them from `offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionList {
    pub total: i64,
    pub rows: Vec<VersionSummary>,
}

/// What a restore did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restored {
    /// The new version, whose title and body are those of the version asked for.
    Done(i64),
    /// The history holds no such version (never written, or pruned).
    NoSuchVersion,
    /// The page is not at the expected version; nothing changed.
    Mismatch(VersionMismatch),
}

/// What a versioned write answers: its result, or the [`VersionMismatch`] of a
/// page not at [`WriteTerms::expected`] (nothing changed), inside the store's
/// [`PageFuture`].
pub type WriteFuture<'a, T> = PageFuture<'a, Result<T, VersionMismatch>>;

/// The writes that keep a version in a page's history, and the reads of that
/// history: the part of [`super::PageBackend`] these rules are about. Each backend
/// implements it beside its own history SQL.
pub trait PageHistory {
    /// Sets title and/or body of page `id` as `edit` says and bumps its version
    /// and `updated_at` (to `terms.now`), keeping the new version in its history
    /// (an `update`) and pruning it to `terms.keep`, all in one transaction;
    /// returns the new version. A page not at `terms.expected` is left as it is
    /// ([`VersionMismatch`]).
    fn update(&self, id: i64, edit: PageEdit, terms: WriteTerms) -> WriteFuture<'_, i64>;

    /// Archives or claims page `id` (once; again changes nothing and keeps no
    /// version), on `terms` as [`Self::update`].
    fn change_state(
        &self,
        id: i64,
        change: StateChange,
        terms: WriteTerms,
    ) -> WriteFuture<'_, StateRow>;

    /// Sets page `id`'s title and body to those of its kept version `version`, as
    /// a new version (a `restore`), on `terms` as [`Self::update`]: the expected
    /// version is checked first, then that the history holds `version`.
    fn restore(&self, id: i64, version: i64, terms: WriteTerms) -> PageFuture<'_, Restored>;

    /// How many versions of page `id` are kept, and `limit` of them from
    /// `offset`, newest first.
    fn versions(&self, id: i64, offset: i64, limit: i64) -> PageFuture<'_, VersionList>;

    /// Version `version` of page `id`, when its history holds it; with
    /// `before`, the newest kept version older than `version` instead.
    fn version(&self, id: i64, version: i64, before: bool) -> PageFuture<'_, Option<PageVersion>>;
}
