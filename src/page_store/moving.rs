//! Moving house: every page of a SQLite file into an empty PostgreSQL database
//! (`agent-pages copy`), keeping what readers and writers rely on: ids (so search
//! fingerprints and ledger order stay), slugs, versions, states, `claimed_at`,
//! creation and update times, and PIN hashes, moved as the PHC strings they are
//! (never re-hashed, never printed). Ids given later start past the highest the
//! SQLite file ever gave.
//!
//! One SQLite read transaction (one snapshot) and one PostgreSQL transaction: an
//! interrupted copy leaves the PostgreSQL database as it was (empty), and the copy
//! is checked (page count and the sum of versions) before it commits. Each page's
//! history (`page_versions`) moves with it, row for row.

use rusqlite::Connection;

use crate::page_store::sqlite::history;
use crate::page_store::sqlite::pages::{self, StoredRow};
use crate::pg::{Pg, PgError};

/// Pages per statement.
const CHUNK: i64 = 1000;

/// What a copy moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Copied {
    pub pages: u64,
    /// Rows of page history (kept versions).
    pub versions: u64,
    pub with_pin: u64,
    /// Archived or claimed.
    pub gone: u64,
}

/// Why a copy wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("reading the SQLite file: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("{0}")]
    Postgres(#[from] PgError),
    #[error("the PostgreSQL database already has {0} pages: copy fills an empty one")]
    NotEmpty(i64),
    #[error("the copy does not match its source ({0}); nothing was kept")]
    Mismatch(String),
}

impl From<tokio_postgres::Error> for CopyError {
    fn from(e: tokio_postgres::Error) -> Self {
        CopyError::Postgres(PgError::of(&e))
    }
}

/// Copies every row of `sqlite`'s page history into `tx`; returns how many, after
/// checking PostgreSQL holds as many.
async fn copy_history(
    sqlite: &Connection,
    tx: &tokio_postgres::Transaction<'_>,
) -> Result<u64, CopyError> {
    let insert = tx
        .prepare(
            "INSERT INTO page_versions (page_id, version, title, body, kind, created_at)
             SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[],
                                  $5::text[], $6::bigint[])",
        )
        .await?;
    let mut moved = 0u64;
    let mut after = 0;
    loop {
        let rows = history::rows_after(sqlite, after, CHUNK)?;
        let Some(last) = rows.last() else { break };
        after = last.0;
        let ids: Vec<i64> = rows.iter().map(|r| r.1).collect();
        let versions: Vec<i64> = rows.iter().map(|r| r.2.version).collect();
        let titles: Vec<&str> = rows.iter().map(|r| r.2.title.as_str()).collect();
        let bodies: Vec<&str> = rows.iter().map(|r| r.2.body.as_str()).collect();
        let kinds: Vec<&str> = rows.iter().map(|r| r.2.kind.as_str()).collect();
        let times: Vec<i64> = rows.iter().map(|r| r.2.created_at).collect();
        tx.execute(
            &insert,
            &[&ids, &versions, &titles, &bodies, &kinds, &times],
        )
        .await?;
        moved += rows.len() as u64;
    }
    let present: i64 = tx
        .query_one("SELECT count(*) FROM page_versions", &[])
        .await?
        .get(0);
    if present != moved as i64 {
        return Err(CopyError::Mismatch(format!(
            "{present} history rows in PostgreSQL, {moved} read"
        )));
    }
    Ok(moved)
}

/// Copies every page of `sqlite` (migrated) into the empty, migrated database of
/// `pg`. Errors: see [`CopyError`]; in every case PostgreSQL keeps nothing of it.
pub async fn copy_sqlite_to_postgres(sqlite: &Connection, pg: &Pg) -> Result<Copied, CopyError> {
    sqlite.execute_batch("BEGIN")?;
    let copied = copy_in(sqlite, pg).await;
    sqlite.execute_batch("COMMIT")?;
    copied
}

async fn copy_in(sqlite: &Connection, pg: &Pg) -> Result<Copied, CopyError> {
    let mut client = pg.client().await?;
    let tx = client.transaction().await?;
    tx.batch_execute("SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0")
        .await?;
    let present: i64 = tx
        .query_one("SELECT count(*) FROM pages", &[])
        .await?
        .get(0);
    if present > 0 {
        return Err(CopyError::NotEmpty(present));
    }
    let insert = tx
        .prepare(
            "INSERT INTO pages (id, slug, title, body, pin_hash, current_version, lifecycle,
                                claimed_at, created_at, updated_at)
             OVERRIDING SYSTEM VALUE
             SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[],
                                  $6::bigint[], $7::text[], $8::bigint[], $9::bigint[],
                                  $10::bigint[])",
        )
        .await?;
    let mut copied = Copied::default();
    let mut versions: i64 = 0;
    let mut after = 0;
    loop {
        let rows = pages::rows_after(sqlite, after, CHUNK)?;
        let Some(last) = rows.last() else { break };
        after = last.id;
        let column = |f: fn(&StoredRow) -> i64| rows.iter().map(f).collect::<Vec<i64>>();
        let text = |f: fn(&StoredRow) -> &str| rows.iter().map(f).collect::<Vec<&str>>();
        let ids = column(|r| r.id);
        let version = column(|r| r.version);
        let created = column(|r| r.created_at);
        let updated = column(|r| r.updated_at);
        let pins: Vec<Option<&str>> = rows.iter().map(|r| r.pin_hash.as_deref()).collect();
        let claimed: Vec<Option<i64>> = rows.iter().map(|r| r.claimed_at).collect();
        tx.execute(
            &insert,
            &[
                &ids,
                &text(|r| r.slug.as_str()),
                &text(|r| r.title.as_str()),
                &text(|r| r.body.as_str()),
                &pins,
                &version,
                &text(|r| r.lifecycle.as_str()),
                &claimed,
                &created,
                &updated,
            ],
        )
        .await?;
        for row in &rows {
            copied.pages += 1;
            copied.with_pin += u64::from(row.pin_hash.is_some());
            copied.gone += u64::from(row.lifecycle != "active" || row.claimed_at.is_some());
            versions += row.version;
        }
    }
    copied.versions = copy_history(sqlite, &tx).await?;
    let highest = pages::highest_id(sqlite)?;
    if highest > 0 {
        // The identity continues past every id the SQLite file ever gave.
        tx.execute(
            "SELECT setval(pg_get_serial_sequence('pages', 'id'), $1)",
            &[&highest],
        )
        .await?;
    }
    let check = tx
        .query_one(
            "SELECT count(*), coalesce(sum(current_version), 0)::bigint FROM pages",
            &[],
        )
        .await?;
    let (count, sum): (i64, i64) = (check.get(0), check.get(1));
    if count != copied.pages as i64 || sum != versions {
        return Err(CopyError::Mismatch(format!(
            "{count} pages and {sum} versions in PostgreSQL, {} and {versions} read",
            copied.pages
        )));
    }
    // Another history (Issue 31 §1): a replica that followed this database while
    // it was empty rebuilds in full rather than following the copy's generations.
    tx.execute(
        "UPDATE corpus_history SET history = gen_random_uuid(),
                created_at = extract(epoch FROM now())::bigint
         WHERE id = 1",
        &[],
    )
    .await?;
    tx.commit().await?;
    Ok(copied)
}
