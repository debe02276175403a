//! Queries on `pages`. Candidates (SPEC §3) are `lifecycle = 'active' AND claimed_at
//! IS NULL`; nothing here ever selects `pin_hash` except [`pin_hash`] itself.

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use crate::domain::{PageBody, PageSlug, PageTitle};

const CANDIDATE: &str = "lifecycle = 'active' AND claimed_at IS NULL";

/// A page as a reader sees it (no PIN hash). Times are unix seconds.
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

/// What an upsert did to the row of its slug.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upserted {
    Inserted,
    /// Title or body changed; the new `current_version`.
    Updated(i64),
    Unchanged,
}

/// Inserts the page, or updates title/body of the page with this slug. A changed
/// title or body bumps `current_version` and `updated_at`; the PIN hash is set only
/// on insert (an import never replaces a page's PIN).
pub fn upsert(
    tx: &Transaction<'_>,
    slug: &PageSlug,
    title: &PageTitle,
    body: &PageBody,
    pin_hash: Option<&str>,
    now: i64,
) -> rusqlite::Result<Upserted> {
    let existing: Option<(i64, String, String)> = tx
        .query_row(
            "SELECT id, title, body FROM pages WHERE slug = ?1",
            [slug.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    match existing {
        None => {
            tx.execute(
                "INSERT INTO pages (slug, title, body, pin_hash, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                params![slug.as_str(), title.as_str(), body.as_str(), pin_hash, now],
            )?;
            Ok(Upserted::Inserted)
        }
        Some((_, t, b)) if t == title.as_str() && b == body.as_str() => Ok(Upserted::Unchanged),
        Some((id, _, _)) => {
            let version = tx.query_row(
                "UPDATE pages SET title = ?2, body = ?3, current_version = current_version + 1,
                        updated_at = ?4
                 WHERE id = ?1 RETURNING current_version",
                params![id, title.as_str(), body.as_str(), now],
                |r| r.get(0),
            )?;
            Ok(Upserted::Updated(version))
        }
    }
}

/// Number of pages in any state.
pub fn count_all(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT COUNT(*) FROM pages", [], |r| r.get(0))
}

/// Number of candidate pages.
pub fn count_candidates(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row(
        &format!("SELECT COUNT(*) FROM pages WHERE {CANDIDATE}"),
        [],
        |r| r.get(0),
    )
}

/// Candidates newest first (`updated_at DESC, id DESC`), `limit` rows from `offset`.
pub fn ledger(conn: &Connection, offset: i64, limit: i64) -> rusqlite::Result<Vec<PageSummary>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT slug, title, current_version, updated_at FROM pages WHERE {CANDIDATE}
         ORDER BY updated_at DESC, id DESC LIMIT ?1 OFFSET ?2"
    ))?;
    let rows = stmt.query_map([limit, offset], |r| {
        Ok(PageSummary {
            slug: r.get(0)?,
            title: r.get(1)?,
            version: r.get(2)?,
            updated_at: r.get(3)?,
        })
    })?;
    rows.collect()
}

/// The candidate page with this slug, or `None` (unknown, archived or claimed).
pub fn candidate_by_slug(conn: &Connection, slug: &str) -> rusqlite::Result<Option<Page>> {
    conn.query_row(
        &format!(
            "SELECT id, slug, title, body, current_version, lifecycle, created_at, updated_at
             FROM pages WHERE slug = ?1 AND {CANDIDATE}"
        ),
        [slug],
        |r| {
            Ok(Page {
                id: r.get(0)?,
                slug: r.get(1)?,
                title: r.get(2)?,
                body: r.get(3)?,
                version: r.get(4)?,
                lifecycle: r.get(5)?,
                created_at: r.get(6)?,
                updated_at: r.get(7)?,
            })
        },
    )
    .optional()
}

/// The corpus generation: moves on every insert, update or delete on `pages`, from
/// any connection or process (triggers of migration 0001).
pub fn generation(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row(
        "SELECT generation FROM corpus_generation WHERE id = 1",
        [],
        |r| r.get(0),
    )
}

/// All candidates ordered by id, with the generation they were read at, in one read
/// transaction so the two agree.
pub fn candidates(conn: &mut Connection) -> rusqlite::Result<(i64, Vec<Candidate>)> {
    let tx = conn.transaction()?;
    let generation = generation(&tx)?;
    let list = {
        let mut stmt = tx.prepare(&format!(
            "SELECT id, current_version, slug, title, updated_at FROM pages
             WHERE {CANDIDATE} ORDER BY id"
        ))?;
        let rows = stmt.query_map([], |r| {
            Ok(Candidate {
                id: r.get(0)?,
                version: r.get(1)?,
                slug: r.get(2)?,
                title: r.get(3)?,
                updated_at: r.get(4)?,
            })
        })?;
        rows.collect::<rusqlite::Result<Vec<_>>>()?
    };
    tx.commit()?;
    Ok((generation, list))
}
