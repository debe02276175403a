//! The page writes with their history (issue 32 §1–§2), over SQLite: each runs
//! one of [`super::pages`]' statements and, in the same `BEGIN IMMEDIATE`
//! transaction, writes the version it made to `page_versions` and prunes the
//! page's history to [`WriteTerms::keep`] versions. A write with an expected
//! version checks it first, inside the transaction (writers are serialized by the
//! write lock, so the check and the write see the same row); a mismatch returns
//! before anything is written, so no trigger moves the corpus generation.

use rusqlite::{params, Connection, OptionalExtension, Row, Transaction};

use super::pages;
use super::rows::from_row;
use crate::domain::NewPage;
use crate::page_records::{
    CreateRefused, CreatedRow, ImportCounts, ImportPage, PageEdit, StateChange, StateRow,
};
use crate::page_store::history::{
    PageVersion, Restored, VersionKind, VersionList, VersionMismatch, VersionSummary, WriteTerms,
};

/// Writes page `id`'s current row as its version of `kind`, then deletes its
/// versions older than the newest `keep`.
pub fn record(tx: &Transaction<'_>, id: i64, kind: VersionKind, keep: i64) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO page_versions (page_id, version, title, body, kind, created_at)
         SELECT id, current_version, title, body, ?2, updated_at FROM pages WHERE id = ?1",
    )?
    .execute(params![id, kind.as_str()])?;
    tx.prepare_cached(
        "DELETE FROM page_versions WHERE page_id = ?1
         AND version <= (SELECT current_version FROM pages WHERE id = ?1) - ?2",
    )?
    .execute(params![id, keep.max(1)])?;
    Ok(())
}

/// The page's current version, when `expected` is given and differs from it.
fn mismatch(
    conn: &Connection,
    id: i64,
    expected: Option<i64>,
) -> rusqlite::Result<Option<VersionMismatch>> {
    let Some(expected) = expected else {
        return Ok(None);
    };
    let current: i64 = conn
        .prepare_cached("SELECT current_version FROM pages WHERE id = ?1")?
        .query_row([id], |r| r.get(0))?;
    Ok((current != expected).then_some(VersionMismatch { current }))
}

/// [`pages::create`], with version 1 kept as a `publish`.
pub fn create(
    tx: &Transaction<'_>,
    page: &NewPage,
    pin_hash: Option<&str>,
    now: i64,
    keep: i64,
) -> rusqlite::Result<Result<CreatedRow, CreateRefused>> {
    let created = pages::create(tx, page, pin_hash, now)?;
    if let Ok(c) = &created {
        record(tx, c.id, VersionKind::Publish, keep)?;
    }
    Ok(created)
}

/// [`pages::update`] on the terms given, with the new version kept as an
/// `update`.
pub fn update(
    tx: &Transaction<'_>,
    id: i64,
    edit: &PageEdit,
    terms: WriteTerms,
) -> rusqlite::Result<Result<i64, VersionMismatch>> {
    if let Some(stale) = mismatch(tx, id, terms.expected)? {
        return Ok(Err(stale));
    }
    let version = pages::update(tx, id, edit.title.as_ref(), edit.body.as_ref(), terms.now)?;
    record(tx, id, VersionKind::Update, terms.keep)?;
    Ok(Ok(version))
}

/// [`pages::change_state`] on the terms given; a change that happened is kept as
/// an `archive` or `claim` version (a repeated one changes nothing, so keeps
/// nothing).
pub fn change_state(
    tx: &Transaction<'_>,
    id: i64,
    change: StateChange,
    terms: WriteTerms,
) -> rusqlite::Result<Result<StateRow, VersionMismatch>> {
    if let Some(stale) = mismatch(tx, id, terms.expected)? {
        return Ok(Err(stale));
    }
    let before: i64 = tx.query_row(
        "SELECT current_version FROM pages WHERE id = ?1",
        [id],
        |r| r.get(0),
    )?;
    let after = pages::change_state(tx, id, change, terms.now)?;
    if after.version != before {
        let kind = match change {
            StateChange::Archive => VersionKind::Archive,
            StateChange::Claim => VersionKind::Claim,
        };
        record(tx, id, kind, terms.keep)?;
    }
    Ok(Ok(after))
}

/// Sets page `id`'s title and body to those of its version `version` as a new
/// version (kept as a `restore`), on the terms given: the expected version is
/// checked first, then that the history holds `version`.
pub fn restore(
    tx: &Transaction<'_>,
    id: i64,
    version: i64,
    terms: WriteTerms,
) -> rusqlite::Result<Restored> {
    if let Some(stale) = mismatch(tx, id, terms.expected)? {
        return Ok(Restored::Mismatch(stale));
    }
    let Some(old) = version_of(tx, id, version)? else {
        return Ok(Restored::NoSuchVersion);
    };
    let new = tx.query_row(
        "UPDATE pages SET title = ?2, body = ?3, current_version = current_version + 1,
                updated_at = ?4
         WHERE id = ?1 RETURNING current_version",
        params![id, old.title, old.body, terms.now],
        |r| r.get(0),
    )?;
    record(tx, id, VersionKind::Restore, terms.keep)?;
    Ok(Restored::Done(new))
}

/// [`pages::upsert_all`], with each page it inserted or changed kept as an
/// `import` version.
pub fn import_all(
    tx: &Transaction<'_>,
    batch: &[ImportPage],
    now: i64,
    keep: i64,
) -> rusqlite::Result<ImportCounts> {
    pages::upsert_all(tx, batch, now, |page| {
        let id: i64 = tx
            .prepare_cached("SELECT id FROM pages WHERE slug = ?1")?
            .query_row([page.slug.as_str()], |r| r.get(0))?;
        record(tx, id, VersionKind::Import, keep)
    })
}

/// The `kind` in column `i`, read borrowed.
fn version_kind(r: &Row<'_>, i: usize) -> rusqlite::Result<VersionKind> {
    Ok(VersionKind::parse(r.get_ref(i)?.as_str()?))
}

/// A version from the columns `version, title, body, kind, created_at`, the
/// first of them at `start`.
fn version_row(r: &Row<'_>, start: usize) -> rusqlite::Result<PageVersion> {
    Ok(from_row!(r, start => PageVersion { version, title, body, kind: version_kind, created_at }))
}

/// One version of a page read from its history: `None` when it holds no such
/// version.
pub type MaybeVersion = rusqlite::Result<Option<PageVersion>>;

/// The version of page `id` that `sql` selects, with `?1` the page id and `?2`
/// `version`, in [`version_row`]'s columns; `None` when there is none.
fn one_version(conn: &Connection, sql: &str, id: i64, version: i64) -> MaybeVersion {
    conn.prepare_cached(sql)?
        .query_row([id, version], |r| version_row(r, 0))
        .optional()
}

/// Version `version` of page `id`, when its history holds it.
pub fn version_of(conn: &Connection, id: i64, version: i64) -> MaybeVersion {
    let sql = "SELECT version, title, body, kind, created_at FROM page_versions
               WHERE page_id = ?1 AND version = ?2";
    one_version(conn, sql, id, version)
}

/// The newest version of page `id` older than `version`, when its history holds
/// one.
pub fn version_before(conn: &Connection, id: i64, version: i64) -> MaybeVersion {
    let sql = "SELECT version, title, body, kind, created_at FROM page_versions
               WHERE page_id = ?1 AND version < ?2 ORDER BY version DESC LIMIT 1";
    one_version(conn, sql, id, version)
}

/// The number of versions kept of page `id` and `limit` of them from `offset`,
/// newest first, read in one transaction so the two agree.
pub fn versions(
    conn: &mut Connection,
    id: i64,
    offset: i64,
    limit: i64,
) -> rusqlite::Result<VersionList> {
    let tx = conn.transaction()?;
    let total = tx
        .prepare_cached("SELECT count(*) FROM page_versions WHERE page_id = ?1")?
        .query_row([id], |r| r.get(0))?;
    let rows = tx
        .prepare_cached(
            "SELECT version, title, kind, created_at, length(CAST(body AS BLOB))
             FROM page_versions WHERE page_id = ?1
             ORDER BY version DESC LIMIT ?2 OFFSET ?3",
        )?
        .query_map([id, limit, offset], |r| {
            Ok(from_row!(r => VersionSummary {
                version, title, kind: version_kind, created_at, body_bytes
            }))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    drop(tx);
    Ok(VersionList { total, rows })
}

/// Every history row with a rowid above `after`, `limit` of them in rowid order,
/// for `crate::page_store::moving` (inside its read transaction).
pub fn rows_after(
    conn: &Connection,
    after: i64,
    limit: i64,
) -> rusqlite::Result<Vec<(i64, i64, PageVersion)>> {
    conn.prepare_cached(
        "SELECT rowid, page_id, version, title, body, kind, created_at FROM page_versions
         WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
    )?
    .query_map([after, limit], |r| {
        Ok((r.get(0)?, r.get(1)?, version_row(r, 2)?))
    })?
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::TransactionBehavior;

    use crate::domain::PageBody;

    use crate::page_store::sqlite::temp_db as db;

    fn write<T>(conn: &mut Connection, f: impl FnOnce(&Transaction<'_>) -> T) -> T {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        let out = f(&tx);
        tx.commit().unwrap();
        out
    }

    /// Creates page `a` (body `one`) at time 1, keeping `keep` versions; its id.
    fn page_a(conn: &mut Connection, keep: i64) -> i64 {
        let page = NewPage::parse(Some("a"), "A", Some("one".into())).unwrap();
        write(conn, |tx| create(tx, &page, None, 1, keep))
            .unwrap()
            .unwrap()
            .id
    }

    /// An edit of the body alone.
    fn body(text: &str) -> PageEdit {
        PageEdit {
            title: None,
            body: Some(PageBody::parse(text.to_owned()).unwrap()),
        }
    }

    #[test]
    fn every_write_keeps_its_version_and_the_history_is_pruned_to_the_bound() {
        let (_d, mut conn) = db();
        let id = page_a(&mut conn, 3);
        for (n, text) in ["two", "three", "four"].iter().enumerate() {
            let v = write(&mut conn, |tx| {
                update(tx, id, &body(text), WriteTerms::keeping(3, 2 + n as i64))
            })
            .unwrap()
            .unwrap();
            assert_eq!(v, 2 + n as i64);
        }
        let list = versions(&mut conn, id, 0, 10).unwrap();
        assert_eq!(list.total, 3);
        let numbers: Vec<i64> = list.rows.iter().map(|r| r.version).collect();
        assert_eq!(numbers, [4, 3, 2]);
        assert_eq!(version_of(&conn, id, 1).unwrap(), None);
        assert_eq!(version_of(&conn, id, 2).unwrap().unwrap().body, "two");
        assert_eq!(version_before(&conn, id, 4).unwrap().unwrap().version, 3);
    }

    #[test]
    fn a_stale_expected_version_writes_nothing_and_a_restore_copies_the_old_text() {
        let (_d, mut conn) = db();
        let id = page_a(&mut conn, 100);
        write(&mut conn, |tx| {
            update(tx, id, &body("two"), WriteTerms::keeping(100, 2))
        })
        .unwrap()
        .unwrap();
        let generation = pages::generation(&conn).unwrap();
        let stale = WriteTerms {
            now: 3,
            keep: 100,
            expected: Some(1),
        };
        let refused = write(&mut conn, |tx| update(tx, id, &body("three"), stale));
        assert_eq!(refused, Ok(Err(VersionMismatch { current: 2 })));
        let refused = write(&mut conn, |tx| restore(tx, id, 1, stale)).unwrap();
        assert_eq!(refused, Restored::Mismatch(VersionMismatch { current: 2 }));
        let refused = write(&mut conn, |tx| {
            change_state(tx, id, StateChange::Archive, stale)
        });
        assert_eq!(refused, Ok(Err(VersionMismatch { current: 2 })));
        assert_eq!(pages::generation(&conn).unwrap(), generation);
        assert_eq!(versions(&mut conn, id, 0, 10).unwrap().total, 2);

        let current = WriteTerms {
            now: 4,
            keep: 100,
            expected: Some(2),
        };
        let restored = write(&mut conn, |tx| restore(tx, id, 1, current)).unwrap();
        assert_eq!(restored, Restored::Done(3));
        let v3 = version_of(&conn, id, 3).unwrap().unwrap();
        assert_eq!((v3.body.as_str(), v3.kind), ("one", VersionKind::Restore));
        let missing = write(&mut conn, |tx| {
            restore(tx, id, 9, WriteTerms::keeping(100, 5))
        });
        assert_eq!(missing, Ok(Restored::NoSuchVersion));
    }
}
