//! Queries on `pages`. Candidates (SPEC §3) are `lifecycle = 'active' AND claimed_at
//! IS NULL`; nothing here ever selects `pin_hash` except [`pin_hash`] itself.

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use super::rows::from_row;
use crate::domain::{NewPage, PageBody, PageSlug, PageTitle, SLUG_MAX};
// The page store's records (any backend); re-exported where they were.
pub use crate::page_records::{
    Candidate, CandidateRef, ChangedPages, CreateRefused, CreatedRow, ImportCounts, ImportPage,
    LedgerPage, Page, PageSummary, PinRecord, StateChange, StateRow, Upserted,
};

const CANDIDATE: &str = "lifecycle = 'active' AND claimed_at IS NULL";

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
        Some((id, _, _)) => Ok(Upserted::Updated(update(
            tx,
            id,
            Some(title),
            Some(body),
            now,
        )?)),
    }
}

/// Inserts a new page at version 1. A slug the writer gave must be free (slugs are
/// never reused, whatever the state of the page holding one); a slug derived from
/// the title takes the first free name via [`free_slug`]. Run inside a
/// `BEGIN IMMEDIATE` transaction so the check and the insert see the same table.
pub fn create(
    tx: &Transaction<'_>,
    page: &NewPage,
    pin_hash: Option<&str>,
    now: i64,
) -> rusqlite::Result<Result<CreatedRow, CreateRefused>> {
    let slug = match &page.slug {
        Some(slug) if exists(tx, slug.as_str())? => {
            return Ok(Err(CreateRefused::SlugTaken(slug.clone())))
        }
        Some(slug) => slug.clone(),
        None => free_slug(tx, &PageSlug::from_title(page.title.as_str()))?,
    };
    let id = tx.query_row(
        "INSERT INTO pages (slug, title, body, pin_hash, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5) RETURNING id",
        params![
            slug.as_str(),
            page.title.as_str(),
            page.body.as_str(),
            pin_hash,
            now
        ],
        |r| r.get(0),
    )?;
    Ok(Ok(CreatedRow {
        id,
        slug,
        version: 1,
    }))
}

fn exists(conn: &Connection, slug: &str) -> rusqlite::Result<bool> {
    conn.query_row("SELECT 1 FROM pages WHERE slug = ?1", [slug], |_| Ok(()))
        .optional()
        .map(|row| row.is_some())
}

/// `base` if no page has it, else `base-N` with N one more than the highest numeric
/// suffix already on `base` (at least 2): `guide`, `guide-2`, `guide-3`, … When the
/// suffix would push the slug past 80 chars, `base` is shortened to make room (and
/// the shorter stem is numbered on its own).
pub fn free_slug(conn: &Connection, base: &PageSlug) -> rusqlite::Result<PageSlug> {
    if !exists(conn, base.as_str())? {
        return Ok(base.clone());
    }
    let mut stem = base.as_str();
    loop {
        let mut next = highest_suffix(conn, stem)?.max(1) + 1;
        // Only a suffix `highest_suffix` skipped as too long can be in the way.
        while exists(conn, &format!("{stem}-{next}"))? {
            next += 1;
        }
        let suffix = format!("-{next}");
        if stem.len() + suffix.len() <= SLUG_MAX {
            let slug = format!("{stem}{suffix}");
            return Ok(PageSlug::parse(&slug).expect("a valid stem plus -N is a valid slug"));
        }
        // Strictly shorter each time round, and never empty: a slug starts with
        // [a-z0-9], which the trim keeps.
        stem = stem[..SLUG_MAX - suffix.len()].trim_end_matches(['-', '.', '+']);
    }
}

/// The highest N of the slugs `{stem}-N` (N written without leading zeros, at most
/// 9 digits), or 0. `-` and `.` are adjacent in ASCII, so the range is exactly the
/// slugs starting with `{stem}-`, and it is read from the slug index.
fn highest_suffix(conn: &Connection, stem: &str) -> rusqlite::Result<u64> {
    let mut stmt = conn.prepare_cached("SELECT slug FROM pages WHERE slug > ?1 AND slug < ?2")?;
    let rows = stmt.query_map([format!("{stem}-"), format!("{stem}.")], |r| {
        r.get::<_, String>(0)
    })?;
    let mut highest = 0;
    for slug in rows {
        let slug = slug?;
        let digits = &slug[stem.len() + 1..];
        let canonical = (1..=9).contains(&digits.len())
            && !digits.starts_with('0')
            && digits.bytes().all(|b| b.is_ascii_digit());
        if canonical {
            highest = highest.max(digits.parse::<u64>().expect("1-9 ASCII digits"));
        }
    }
    Ok(highest)
}

/// Sets title and/or body (`None` keeps the stored one) and bumps `current_version`
/// and `updated_at`, whether or not the text differs: every accepted write is a new
/// version, so concurrent writers each learn their own. Returns the new version.
pub fn update(
    tx: &Transaction<'_>,
    id: i64,
    title: Option<&PageTitle>,
    body: Option<&PageBody>,
    now: i64,
) -> rusqlite::Result<i64> {
    tx.query_row(
        "UPDATE pages SET title = COALESCE(?2, title), body = COALESCE(?3, body),
                current_version = current_version + 1, updated_at = ?4
         WHERE id = ?1 RETURNING current_version",
        params![
            id,
            title.map(PageTitle::as_str),
            body.map(PageBody::as_str),
            now
        ],
        |r| r.get(0),
    )
}

/// Archives the page (it leaves the ledger and search). Archiving an archived page
/// changes nothing, so its version stays; any other call bumps it.
pub fn archive(tx: &Transaction<'_>, id: i64, now: i64) -> rusqlite::Result<StateRow> {
    tx.execute(
        "UPDATE pages SET lifecycle = 'archived', current_version = current_version + 1,
                updated_at = ?2
         WHERE id = ?1 AND lifecycle = 'active'",
        params![id, now],
    )?;
    state(tx, id)
}

/// Claims the page at `now` (it leaves the ledger and search). Claiming a claimed
/// page changes nothing: the first `claimed_at` and the version stay.
pub fn claim(tx: &Transaction<'_>, id: i64, now: i64) -> rusqlite::Result<StateRow> {
    tx.execute(
        "UPDATE pages SET claimed_at = ?2, current_version = current_version + 1,
                updated_at = ?2
         WHERE id = ?1 AND claimed_at IS NULL",
        params![id, now],
    )?;
    state(tx, id)
}

fn state(conn: &Connection, id: i64) -> rusqlite::Result<StateRow> {
    conn.query_row(
        "SELECT slug, current_version, lifecycle, claimed_at, updated_at FROM pages
         WHERE id = ?1",
        [id],
        |r| Ok(from_row!(r => StateRow { slug, version, lifecycle, claimed_at, updated_at })),
    )
}

/// The id, PIN hash and state of the page with this slug, in any state: `None` when
/// no page has it. The only function that reads `pin_hash`; its value goes to
/// `pin::verify` and nowhere else.
pub fn pin_hash(conn: &Connection, slug: &str) -> rusqlite::Result<Option<PinRecord>> {
    conn.query_row(
        &format!("SELECT id, pin_hash, NOT ({CANDIDATE}) FROM pages WHERE slug = ?1"),
        [slug],
        |r| Ok(from_row!(r => PinRecord { id, pin_hash, gone })),
    )
    .optional()
}

/// A whole `pages` row, PIN hash included: what moving the pages to another
/// store keeps ([`rows_after`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRow {
    pub id: i64,
    pub slug: String,
    pub title: String,
    pub body: String,
    /// The argon2id PHC string, moved as it is (never shown, never re-hashed).
    pub pin_hash: Option<String>,
    pub version: i64,
    pub lifecycle: String,
    pub claimed_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// Up to `limit` pages in any state with ids above `after`, in id order (inside one
/// read transaction, successive calls read one snapshot). Besides [`pin_hash`], the
/// only read of `pin_hash`: for `crate::page_store::moving`, which writes it to the
/// new store and nowhere else.
pub fn rows_after(conn: &Connection, after: i64, limit: i64) -> rusqlite::Result<Vec<StoredRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, slug, title, body, pin_hash, current_version, lifecycle, claimed_at,
                created_at, updated_at
         FROM pages WHERE id > ?1 ORDER BY id LIMIT ?2",
    )?;
    let rows = stmt.query_map([after, limit], |r| {
        Ok(from_row!(r => StoredRow {
            id, slug, title, body, pin_hash, version, lifecycle, claimed_at, created_at, updated_at
        }))
    })?;
    rows.collect()
}

/// The highest page id ever given: `sqlite_sequence`'s, or the highest present.
pub fn highest_id(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row(
        "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'pages'), 0),
                coalesce((SELECT max(id) FROM pages), 0))",
        [],
        |r| r.get(0),
    )
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

/// The candidate count and `limit` candidates from `offset`, newest first, read in
/// one transaction so the two agree.
pub fn ledger_page(conn: &mut Connection, offset: i64, limit: i64) -> rusqlite::Result<LedgerPage> {
    let tx = conn.transaction()?;
    let page = LedgerPage {
        total: count_candidates(&tx)?,
        rows: ledger(&tx, offset, limit)?,
    };
    tx.commit()?;
    Ok(page)
}

/// Archives or claims the page ([`archive`], [`claim`]).
pub fn change_state(
    tx: &Transaction<'_>,
    id: i64,
    change: StateChange,
    now: i64,
) -> rusqlite::Result<StateRow> {
    match change {
        StateChange::Archive => archive(tx, id, now),
        StateChange::Claim => claim(tx, id, now),
    }
}

/// Upserts every page of an import in `tx`, in order ([`upsert`]), handing each
/// page it inserted or changed to `changed` right after; counts what each did.
/// An error from either stops the import there.
pub fn upsert_all(
    tx: &Transaction<'_>,
    pages: &[ImportPage],
    now: i64,
    mut changed: impl FnMut(&ImportPage) -> rusqlite::Result<()>,
) -> rusqlite::Result<ImportCounts> {
    let mut counts = ImportCounts::default();
    for page in pages {
        let done = upsert(
            tx,
            &page.slug,
            &page.title,
            &page.body,
            page.pin_hash.as_deref(),
            now,
        )?;
        if done != Upserted::Unchanged {
            changed(page)?;
        }
        counts.add(done);
    }
    Ok(counts)
}

/// Candidates newest first (`updated_at DESC, id DESC`), `limit` rows from `offset`.
pub fn ledger(conn: &Connection, offset: i64, limit: i64) -> rusqlite::Result<Vec<PageSummary>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT slug, title, current_version, updated_at FROM pages WHERE {CANDIDATE}
         ORDER BY updated_at DESC, id DESC LIMIT ?1 OFFSET ?2"
    ))?;
    let rows = stmt.query_map([limit, offset], |r| {
        Ok(from_row!(r => PageSummary { slug, title, version, updated_at }))
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
            Ok(from_row!(r => Page {
                id, slug, title, body, version, lifecycle, created_at, updated_at
            }))
        },
    )
    .optional()
}

/// The corpus generation: moves on every insert, update or delete on `pages`, from
/// any connection or process (triggers of migration 0001).
pub fn generation(conn: &Connection) -> rusqlite::Result<i64> {
    // Read on every budgeted search: keep the statement compiled.
    conn.prepare_cached("SELECT generation FROM corpus_generation WHERE id = 1")?
        .query_row([], |r| r.get(0))
}

/// A candidate from a row of `id, current_version, slug, title, updated_at`.
fn candidate_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Candidate> {
    Ok(from_row!(r => Candidate { id, version, slug, title, updated_at }))
}

/// All candidates ordered by id, with the generation they were read at, in one read
/// transaction so the two agree.
pub fn candidates(conn: &mut Connection) -> rusqlite::Result<(i64, Vec<Candidate>)> {
    let mut list = Vec::new();
    let generation = each_candidate(conn, |c| list.push(c.to_candidate()))?;
    Ok((generation, list))
}

/// Hands every candidate to `each`, ordered by id, borrowed from the row being
/// read (nothing is allocated per row), and returns the generation they were
/// read at, in one read transaction so the two agree. Building a snapshot this
/// way never holds the whole table as `Candidate`s.
pub fn each_candidate(
    conn: &mut Connection,
    mut each: impl FnMut(CandidateRef<'_>),
) -> rusqlite::Result<i64> {
    let tx = conn.transaction()?;
    let generation = generation(&tx)?;
    {
        let mut stmt = tx.prepare(&format!(
            "SELECT id, current_version, slug, title, updated_at FROM pages
             WHERE {CANDIDATE} ORDER BY id"
        ))?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            each(CandidateRef {
                id: r.get(0)?,
                version: r.get(1)?,
                slug: r.get_ref(2)?.as_str()?,
                title: r.get_ref(3)?.as_str()?,
                updated_at: r.get(4)?,
            });
        }
    }
    tx.commit()?;
    Ok(generation)
}

/// What changed after generation `since`: the generation read now, and for each
/// page changed since (ids ascending) its candidate row, or `None` when it is no
/// longer a candidate. `Ok(None)` when the change log no longer reaches back to
/// `since` (compacted, or written before the log existed): reload in full.
pub fn changes_since(
    conn: &mut Connection,
    since: i64,
) -> rusqlite::Result<Option<(i64, ChangedPages)>> {
    let tx = conn.transaction()?;
    let generation = generation(&tx)?;
    if generation == since {
        return Ok(Some((generation, Vec::new())));
    }
    let reaches_back: bool = tx
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM corpus_changes WHERE generation = ?1)")?
        .query_row([since + 1], |r| r.get(0))?;
    if !reaches_back || generation < since {
        return Ok(None);
    }
    let ids: Vec<i64> = tx
        .prepare_cached(
            "SELECT DISTINCT page_id FROM corpus_changes WHERE generation > ?1 ORDER BY page_id",
        )?
        .query_map([since], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut changes = Vec::with_capacity(ids.len());
    {
        let mut stmt = tx.prepare_cached(&format!(
            "SELECT id, current_version, slug, title, updated_at FROM pages
             WHERE id = ?1 AND {CANDIDATE}"
        ))?;
        for id in ids {
            let row = stmt.query_row([id], candidate_row).optional()?;
            changes.push((id, row));
        }
    }
    tx.commit()?;
    Ok(Some((generation, changes)))
}

/// Deletes change-log rows more than `keep` generations old, the oldest
/// first, at most [`COMPACT_BATCH`] of them. Returns how many.
///
/// In batches because a fresh import leaves one row per page: deleting a
/// million in one statement took the better part of a second of CPU and I/O
/// just as the first searches after start-up came in.
pub fn compact_changes(conn: &Connection, keep: i64) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "DELETE FROM corpus_changes WHERE generation IN (
             SELECT generation FROM corpus_changes
             WHERE generation <= (SELECT generation FROM corpus_generation WHERE id = 1) - ?1
             ORDER BY generation LIMIT ?2)",
    )?
    .execute(rusqlite::params![keep, COMPACT_BATCH as i64])
}

/// Most change-log rows one [`compact_changes`] deletes.
pub const COMPACT_BATCH: usize = if cfg!(test) { 2 } else { 10_000 };

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::TransactionBehavior;

    use crate::page_store::sqlite::temp_db as db;

    fn new_page(slug: Option<&str>, title: &str) -> NewPage {
        NewPage::parse(slug, title, None).unwrap()
    }

    fn create_one(
        conn: &mut Connection,
        slug: Option<&str>,
        title: &str,
    ) -> Result<CreatedRow, CreateRefused> {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        let out = create(&tx, &new_page(slug, title), Some("$argon2id$x"), 10).unwrap();
        tx.commit().unwrap();
        out
    }

    #[test]
    fn derived_slugs_take_the_next_number_after_the_highest_in_use() {
        let (_d, mut conn) = db();
        let slug = |conn: &mut Connection, s: Option<&str>, t: &str| {
            create_one(conn, s, t).unwrap().slug.to_string()
        };
        assert_eq!(slug(&mut conn, None, "Guide"), "guide");
        assert_eq!(slug(&mut conn, None, "Guide"), "guide-2");
        // Not numbers of `guide`: a leading zero, a sign, a word, a longer stem.
        for other in ["guide-07", "guide-+9", "guide-book", "guide-3x"] {
            slug(&mut conn, Some(other), "Other");
        }
        assert_eq!(slug(&mut conn, None, "guide"), "guide-3");
        slug(&mut conn, Some("guide-41"), "Other");
        assert_eq!(slug(&mut conn, None, "GUIDE"), "guide-42");
        // A suffix too long to count is still never reused.
        slug(&mut conn, Some("g-1000000000"), "Other");
        slug(&mut conn, Some("g"), "Other");
        slug(&mut conn, Some("g-999999999"), "Other");
        assert_eq!(slug(&mut conn, None, "G"), "g-1000000001");
    }

    #[test]
    fn changes_since_a_generation_name_each_changed_page_once_with_its_candidate_row() {
        let (_d, mut conn) = db();
        let a = create_one(&mut conn, Some("a"), "A").unwrap().id;
        let b = create_one(&mut conn, Some("b"), "B").unwrap().id;
        let since = generation(&conn).unwrap();
        let tx = conn.transaction().unwrap();
        update(&tx, a, Some(&PageTitle::parse("A two").unwrap()), None, 20).unwrap();
        update(&tx, a, None, None, 21).unwrap();
        archive(&tx, b, 22).unwrap();
        tx.commit().unwrap();
        let (now, changes) = changes_since(&mut conn, since).unwrap().unwrap();
        assert_eq!(now, generation(&conn).unwrap());
        assert_eq!(changes.len(), 2);
        assert_eq!(changes[0].0, a);
        let row = changes[0].1.as_ref().unwrap();
        assert_eq!((row.title.as_str(), row.version), ("A two", 3));
        assert_eq!((changes[1].0, changes[1].1.is_none()), (b, true));
        // Nothing changed since now; a generation the log no longer reaches is a
        // full reload.
        assert_eq!(changes_since(&mut conn, now).unwrap().unwrap().1.len(), 0);
        while compact_changes(&conn, 1).unwrap() == COMPACT_BATCH {}
        assert!(changes_since(&mut conn, since).unwrap().is_none());
        assert!(changes_since(&mut conn, now - 1).unwrap().is_some());
    }

    #[test]
    fn an_explicit_slug_in_use_is_refused() {
        let (_d, mut conn) = db();
        create_one(&mut conn, Some("a"), "A").unwrap();
        assert_eq!(
            create_one(&mut conn, Some("a"), "B"),
            Err(CreateRefused::SlugTaken(PageSlug::parse("a").unwrap()))
        );
        assert_eq!(count_all(&conn).unwrap(), 1);
    }

    #[test]
    fn updates_bump_the_version_and_archive_and_claim_happen_once() {
        let (_d, mut conn) = db();
        let id = create_one(&mut conn, Some("a"), "A").unwrap().id;
        let tx = conn.transaction().unwrap();
        let title = PageTitle::parse("B").unwrap();
        assert_eq!(update(&tx, id, Some(&title), None, 20).unwrap(), 2);
        assert_eq!(update(&tx, id, None, None, 21).unwrap(), 3);
        let archived = archive(&tx, id, 30).unwrap();
        assert_eq!(
            (
                archived.version,
                archived.lifecycle.as_str(),
                archived.updated_at
            ),
            (4, "archived", 30)
        );
        assert_eq!(archive(&tx, id, 31).unwrap(), archived);
        let claimed = claim(&tx, id, 40).unwrap();
        assert_eq!((claimed.version, claimed.claimed_at), (5, Some(40)));
        assert_eq!(claim(&tx, id, 41).unwrap(), claimed);
        assert_eq!(
            pin_hash(&tx, "a").unwrap(),
            Some(PinRecord {
                id,
                pin_hash: Some("$argon2id$x".into()),
                gone: true
            })
        );
        assert_eq!(pin_hash(&tx, "b").unwrap(), None);
        assert!(candidate_by_slug(&tx, "a").unwrap().is_none());
    }
}
