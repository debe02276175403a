//! The PostgreSQL page store (`AGENT_PAGES_DATABASE_URL`): pages shared by replicas
//! on any number of hosts. The schema is `migrations/postgres/`; the pool, deadlines
//! and what each failure means are [`crate::pg`]'s.
//!
//! Following writes: triggers on `pages` bump a single-row generation counter and
//! log which pages each generation changed, inside the writing transaction, so
//! generations are gapless and in commit order (a writer holds the counter's row
//! lock until it commits). Every budgeted search reads the counter; reads that
//! arrive while one is in flight wait for the next one (never for one that started
//! before them, which could miss a commit they must see), so a burst of searches
//! costs one round trip per batch, not one each. No LISTEN/NOTIFY: nothing in it
//! is replayed after a disconnect, and it takes a database-wide lock at commit.

use std::any::Any;
use std::collections::HashSet;

use deadpool_postgres::ClientWrapper;
use futures_util::future::BoxFuture;
use futures_util::FutureExt as _;
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::{IsolationLevel, Row};

use super::postgres_history_sql;
use super::{
    Candidate, ChangedPages, CreateFuture, CreateRefused, CreatedRow, ImportCounts, ImportPage,
    LedgerPage, Page, PageBackend, PageFuture, PageStoreError, PinRecord,
};
use crate::domain::{NewPage, PageSlug, SLUG_MAX};
use crate::pg::{Call, CallError, Epoch, LastRead, Pg, PgError, PgSettings};

const CANDIDATE: &str = "lifecycle = 'active' AND claimed_at IS NULL";

/// Rows per statement of an import.
pub const IMPORT_BATCH: usize = 1000;

/// How long one statement of an import, a copy or a full candidate load may take
/// (they are not bounded by the request deadline).
const LONG_STATEMENT: &str = "SET LOCAL statement_timeout = '10min'";

/// Tries of a create whose derived slug another writer took in between.
const CREATE_TRIES: usize = 8;

impl From<PgError> for PageStoreError {
    fn from(e: PgError) -> Self {
        match e {
            PgError::Down(_) | PgError::Unavailable(_) => {
                PageStoreError::Unavailable(e.to_string())
            }
            PgError::Busy(_) => PageStoreError::Busy(e.to_string()),
            PgError::Failed(_) => PageStoreError::Failed(e.to_string()),
        }
    }
}

/// The pages in one PostgreSQL database.
pub struct PostgresPages {
    /// Page reads and writes (`AGENT_PAGES_DATABASE_POOL` connections).
    pg: Pg,
    /// A few connections of their own for what every search needs (the generation
    /// read, and the budget calls when the budget is here too), so that page
    /// writes holding every connection of `pg` never hold a search up.
    control: Pg,
    generations: mpsc::UnboundedSender<oneshot::Sender<Result<i64, PgError>>>,
    /// The history of the generations read last ([`PageBackend::epoch`]).
    epoch: Epoch,
}

impl PostgresPages {
    /// The pages behind `pg`, whose migrations must have run
    /// ([`crate::pg::migrations`]); `control` is the small pool of the generation
    /// reads. Starts the generation reader on the current Tokio runtime.
    pub fn new(pg: Pg, control: Pg) -> Self {
        let (generations, waiting) = mpsc::unbounded_channel();
        let epoch = Epoch::default();
        tokio::spawn(read_generations(control.clone(), epoch.clone(), waiting));
        Self {
            pg,
            control,
            generations,
            epoch,
        }
    }

    /// The epoch cell, for budget calls that read the generation too.
    pub fn epoch_cell(&self) -> Epoch {
        self.epoch.clone()
    }

    /// Pools for `settings`' server (connected lazily) and its migrations applied.
    ///
    /// Errors: the server cannot be reached, or a migration failed.
    pub async fn open(settings: &PgSettings) -> Result<Self, PgError> {
        let pg = Pg::connect_lazily(settings)?;
        let mut control = settings.clone();
        control.pool_size = crate::pg::CONTROL_CONNECTIONS;
        let control = Pg::connect_lazily(&control)?;
        crate::pg::migrations::run(&pg).await?;
        Ok(Self::new(pg, control))
    }

    /// The pool of page reads and writes.
    pub fn pg(&self) -> &Pg {
        &self.pg
    }

    /// The pool of the generation reads (and of the budget calls, when the budget
    /// is in this database too).
    pub fn control(&self) -> &Pg {
        &self.control
    }
}

/// The generation reader: takes every waiter queued when a read starts, reads
/// once, answers them all.
async fn read_generations(
    pg: Pg,
    epoch: Epoch,
    mut waiting: mpsc::UnboundedReceiver<oneshot::Sender<Result<i64, PgError>>>,
) {
    let mut last = LastRead::default();
    while let Some(first) = waiting.recv().await {
        let mut batch = vec![first];
        while let Ok(next) = waiting.try_recv() {
            batch.push(next);
        }
        batch.retain(|w| !w.is_closed());
        if batch.is_empty() {
            continue;
        }
        let read = read_generation(&pg).await.map(|(generation, history)| {
            epoch.saw(&mut last, history, generation);
            generation
        });
        for waiter in batch {
            let _ = waiter.send(read.clone());
        }
    }
}

/// The counter, from a server that takes writes: a server in recovery (a standby,
/// a demoted primary) or a session that became read-only still answers reads, but
/// from a copy that may lag the primary's writes, so its connection is dropped and
/// the call answers unavailable instead (the next one connects afresh, to a
/// writable server only).
///
/// Returns the generation and its history (`corpus_epoch()`, see [`Epoch`]).
pub async fn read_generation(pg: &Pg) -> Result<(i64, i64), PgError> {
    pg.run(|c| {
        Box::pin(async move {
            let statement = c
                .prepare_cached(
                    "SELECT generation,
                            pg_is_in_recovery() OR current_setting('transaction_read_only')::bool,
                            corpus_epoch()
                     FROM corpus_generation WHERE id = 1",
                )
                .await?;
            let row = c.query_one(&statement, &[]).await?;
            if row.get::<_, bool>(1) {
                return Err(CallError::Stale(
                    "the server is read-only (a standby, or a demoted primary)",
                ));
            }
            Ok((row.get(0), row.get(2)))
        })
    })
    .await
}

fn candidate(r: &Row) -> Candidate {
    Candidate {
        id: r.get(0),
        version: r.get(1),
        slug: r.get(2),
        title: r.get(3),
        updated_at: r.get(4),
    }
}

async fn exists(c: &ClientWrapper, slug: &str) -> Result<bool, tokio_postgres::Error> {
    let statement = c
        .prepare_cached("SELECT 1 FROM pages WHERE slug = $1")
        .await?;
    Ok(c.query_opt(&statement, &[&slug]).await?.is_some())
}

/// [`crate::page_store::sqlite::pages::free_slug`]'s rule over PostgreSQL: `base` if free, else
/// `base-N` with N one more than the highest canonical suffix in use (at least 2),
/// the stem shortened when the suffix would not fit.
async fn free_slug(c: &ClientWrapper, base: &PageSlug) -> Result<PageSlug, tokio_postgres::Error> {
    if !exists(c, base.as_str()).await? {
        return Ok(base.clone());
    }
    let mut stem = base.as_str().to_owned();
    loop {
        // `-` and `.` are adjacent in byte order (the column's collation is "C"):
        // the range is exactly the slugs starting with `{stem}-`.
        let statement = c
            .prepare_cached("SELECT slug FROM pages WHERE slug > $1 AND slug < $2")
            .await?;
        let taken: HashSet<String> = c
            .query(&statement, &[&format!("{stem}-"), &format!("{stem}.")])
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let highest = taken
            .iter()
            .filter_map(|slug| canonical_suffix(&slug[stem.len() + 1..]))
            .max()
            .unwrap_or(0);
        let mut next = highest.max(1) + 1;
        while taken.contains(&format!("{stem}-{next}")) {
            next += 1;
        }
        let suffix = format!("-{next}");
        if stem.len() + suffix.len() <= SLUG_MAX {
            let slug = format!("{stem}{suffix}");
            return Ok(PageSlug::parse(&slug).expect("a valid stem plus -N is a valid slug"));
        }
        stem = stem[..SLUG_MAX - suffix.len()]
            .trim_end_matches(['-', '.', '+'])
            .to_owned();
    }
}

/// N of a suffix written without leading zeros in at most 9 digits, as the SQLite
/// store counts them.
fn canonical_suffix(digits: &str) -> Option<u64> {
    let canonical = (1..=9).contains(&digits.len())
        && !digits.starts_with('0')
        && digits.bytes().all(|b| b.is_ascii_digit());
    canonical.then(|| digits.parse().expect("1-9 ASCII digits"))
}

/// The pages of `batch` split where a slug repeats, so one statement never upserts
/// a slug twice (PostgreSQL refuses that) and later lines still see earlier ones.
fn chunks(batch: &[ImportPage]) -> Vec<&[ImportPage]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut seen = HashSet::new();
    for (i, page) in batch.iter().enumerate() {
        if i - start == IMPORT_BATCH || !seen.insert(page.slug.as_str()) {
            out.push(&batch[start..i]);
            start = i;
            seen.clear();
            seen.insert(page.slug.as_str());
        }
    }
    if start < batch.len() {
        out.push(&batch[start..]);
    }
    out
}

impl PostgresPages {
    /// One call on a pooled client within the call deadline ([`Pg::run`]), as
    /// the store future the backend methods answer.
    pub(super) fn call<T, F>(&self, call: F) -> PageFuture<'_, T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut deadpool_postgres::Object) -> Call<'c, T> + Send + 'static,
    {
        async move { Ok(self.pg.run(call).await?) }.boxed()
    }

    /// The row `sql` reads for `slug` (its `$1`), as `read` makes it, or `None`:
    /// the one-row reads by slug ([`PageBackend::page`],
    /// [`PageBackend::pin_record`]).
    fn by_slug<T: Send + 'static>(
        &self,
        sql: String,
        slug: String,
        read: fn(&Row) -> T,
    ) -> PageFuture<'_, Option<T>> {
        self.call(move |c| {
            Box::pin(async move {
                let statement = c.prepare_cached(&sql).await?;
                Ok(c.query_opt(&statement, &[&slug]).await?.map(|r| read(&r)))
            })
        })
    }

    /// [`Self::call`] without the client-side deadline ([`Pg::run_unbounded`]):
    /// imports, which the operator waits for.
    fn call_unbounded<T, F>(&self, call: F) -> PageFuture<'_, T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut deadpool_postgres::Object) -> Call<'c, T> + Send + 'static,
    {
        async move { Ok(self.pg.run_unbounded(call).await?) }.boxed()
    }
}

/// A read-only REPEATABLE READ transaction on `c`, so that every statement in it
/// reads one snapshot, and the corpus generation that snapshot holds: how the
/// snapshot reads ([`PageBackend::candidates`], [`PageBackend::changes_since`])
/// begin.
async fn snapshot(
    c: &mut deadpool_postgres::Object,
) -> Result<(deadpool_postgres::Transaction<'_>, i64), tokio_postgres::Error> {
    let tx = c
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?;
    let generation: i64 = tx
        .query_one("SELECT generation FROM corpus_generation WHERE id = 1", &[])
        .await?
        .get(0);
    Ok((tx, generation))
}

impl PageBackend for PostgresPages {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn create(&self, page: NewPage, pin_hash: Option<String>, now: i64) -> CreateFuture<'_> {
        async move {
            let created = self
                .pg
                .run(|c| {
                    Box::pin(async move {
                        // The page and its version 1 in one statement.
                        let insert = c.prepare_cached(postgres_history_sql::CREATE_SQL).await?;
                        for _ in 0..CREATE_TRIES {
                            let slug = match &page.slug {
                                Some(slug) if exists(c, slug.as_str()).await? => {
                                    return Ok(Some(Err(CreateRefused::SlugTaken(slug.clone()))))
                                }
                                Some(slug) => slug.clone(),
                                None => {
                                    free_slug(c, &PageSlug::from_title(page.title.as_str())).await?
                                }
                            };
                            let row = c
                                .query_opt(
                                    &insert,
                                    &[
                                        &slug.as_str(),
                                        &page.title.as_str(),
                                        &page.body.as_str(),
                                        &pin_hash,
                                        &now,
                                    ],
                                )
                                .await?;
                            match row {
                                Some(row) => {
                                    return Ok(Some(Ok(CreatedRow {
                                        id: row.get(0),
                                        slug,
                                        version: 1,
                                    })))
                                }
                                // Taken between the check and the insert.
                                None if page.slug.is_some() => {
                                    return Ok(Some(Err(CreateRefused::SlugTaken(slug))))
                                }
                                None => continue,
                            }
                        }
                        Ok(None)
                    })
                })
                .await?;
            created.ok_or_else(|| {
                PageStoreError::Busy("other writers kept taking the derived slug".into())
            })
        }
        .boxed()
    }

    fn set_pin_hash(&self, id: i64, pin_hash: String) -> PageFuture<'_, ()> {
        self.call(move |c| {
            Box::pin(async move {
                c.execute(
                    "UPDATE pages SET pin_hash = $2 WHERE id = $1",
                    &[&id, &pin_hash],
                )
                .await?;
                Ok(())
            })
        })
    }

    fn page(&self, slug: String) -> PageFuture<'_, Option<Page>> {
        let sql = format!(
            "SELECT id, slug, title, body, current_version, lifecycle,
                    created_at, updated_at
             FROM pages WHERE slug = $1 AND {CANDIDATE}"
        );
        self.by_slug(sql, slug, |r| Page {
            id: r.get(0),
            slug: r.get(1),
            title: r.get(2),
            body: r.get(3),
            version: r.get(4),
            lifecycle: r.get(5),
            created_at: r.get(6),
            updated_at: r.get(7),
        })
    }

    fn ledger(&self, offset: i64, limit: i64) -> PageFuture<'_, LedgerPage> {
        self.call(move |c| {
            Box::pin(async move {
                // The count and the rows in one statement (one snapshot); the
                // count comes back even when the page is past the end.
                let statement = c
                    .prepare_cached(&format!(
                        "WITH total AS (SELECT count(*) AS n FROM pages WHERE {CANDIDATE})
                         SELECT total.n, p.slug, p.title, p.current_version, p.updated_at
                         FROM total LEFT JOIN LATERAL (
                             SELECT slug, title, current_version, updated_at, id
                             FROM pages WHERE {CANDIDATE}
                             ORDER BY updated_at DESC, id DESC LIMIT $1 OFFSET $2
                         ) p ON true
                         ORDER BY p.updated_at DESC, p.id DESC"
                    ))
                    .await?;
                let rows = c.query(&statement, &[&limit, &offset]).await?;
                let total = rows.first().map_or(0, |r| r.get(0));
                let rows = rows
                    .iter()
                    .filter_map(|r| {
                        Some(super::PageSummary {
                            slug: r.get::<_, Option<String>>(1)?,
                            title: r.get(2),
                            version: r.get(3),
                            updated_at: r.get(4),
                        })
                    })
                    .collect();
                Ok(LedgerPage { total, rows })
            })
        })
    }

    fn pin_record(&self, slug: String) -> PageFuture<'_, Option<PinRecord>> {
        let sql = format!("SELECT id, pin_hash, NOT ({CANDIDATE}) FROM pages WHERE slug = $1");
        self.by_slug(sql, slug, |r| PinRecord {
            id: r.get(0),
            pin_hash: r.get(1),
            gone: r.get(2),
        })
    }

    fn generation(&self) -> PageFuture<'_, i64> {
        async move {
            let (answer, read) = oneshot::channel();
            self.generations
                .send(answer)
                .map_err(|_| PageStoreError::Failed("the generation reader stopped".into()))?;
            let generation = read
                .await
                .map_err(|_| PageStoreError::Failed("the generation reader stopped".into()))??;
            Ok(generation)
        }
        .boxed()
    }

    fn epoch(&self) -> u64 {
        self.epoch.get()
    }

    fn candidates(&self) -> PageFuture<'_, (i64, Vec<Candidate>)> {
        self.call_unbounded(move |c| {
            Box::pin(async move {
                let (tx, generation) = snapshot(c).await?;
                tx.batch_execute(LONG_STATEMENT).await?;
                let rows = tx
                    .query(
                        &format!(
                            "SELECT id, current_version, slug, title, updated_at
                             FROM pages WHERE {CANDIDATE} ORDER BY id"
                        ),
                        &[],
                    )
                    .await?;
                tx.commit().await?;
                Ok((generation, rows.iter().map(candidate).collect()))
            })
        })
    }

    fn changes_since(&self, since: i64) -> PageFuture<'_, Option<(i64, ChangedPages)>> {
        self.call(move |c| {
            Box::pin(async move {
                let (tx, generation) = snapshot(c).await?;
                if generation == since {
                    tx.commit().await?;
                    return Ok(Some((generation, Vec::new())));
                }
                let reaches_back = tx
                    .query_opt(
                        "SELECT 1 FROM corpus_changes WHERE generation = $1",
                        &[&(since + 1)],
                    )
                    .await?
                    .is_some();
                if !reaches_back || generation < since {
                    tx.commit().await?;
                    return Ok(None);
                }
                let ids: Vec<i64> = tx
                    .query(
                        "SELECT DISTINCT page_id FROM corpus_changes
                         WHERE generation > $1 ORDER BY page_id",
                        &[&since],
                    )
                    .await?
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                let rows = tx
                    .query(
                        &format!(
                            "SELECT id, current_version, slug, title, updated_at
                             FROM pages WHERE id = ANY($1) AND {CANDIDATE}"
                        ),
                        &[&ids],
                    )
                    .await?;
                tx.commit().await?;
                let mut rows: std::collections::HashMap<i64, Candidate> = rows
                    .iter()
                    .map(|r| {
                        let c = candidate(r);
                        (c.id, c)
                    })
                    .collect();
                let changes = ids.into_iter().map(|id| (id, rows.remove(&id))).collect();
                Ok(Some((generation, changes)))
            })
        })
    }

    fn compact_changes(&self, keep: i64) -> PageFuture<'_, usize> {
        self.call(move |c| {
            Box::pin(async move {
                let n = c
                    .execute(
                        "DELETE FROM corpus_changes WHERE generation <=
                         (SELECT generation FROM corpus_generation WHERE id = 1) - $1",
                        &[&keep],
                    )
                    .await?;
                Ok(n as usize)
            })
        })
    }

    fn count_all(&self) -> PageFuture<'_, i64> {
        self.call(move |c| {
            Box::pin(
                async move { Ok(c.query_one("SELECT count(*) FROM pages", &[]).await?.get(0)) },
            )
        })
    }

    fn import(&self, batch: Vec<ImportPage>, now: i64, keep: i64) -> PageFuture<'_, ImportCounts> {
        self.call_unbounded(move |c| {
            Box::pin(async move {
                let tx = c.transaction().await?;
                tx.batch_execute(LONG_STATEMENT).await?;
                // Each page written and its new version in one statement.
                let upsert = tx.prepare(&postgres_history_sql::import_sql()).await?;
                let mut counts = ImportCounts::default();
                for chunk in chunks(&batch) {
                    let slugs: Vec<&str> = chunk.iter().map(|p| p.slug.as_str()).collect();
                    let titles: Vec<&str> = chunk.iter().map(|p| p.title.as_str()).collect();
                    let bodies: Vec<&str> = chunk.iter().map(|p| p.body.as_str()).collect();
                    let pins: Vec<Option<&str>> =
                        chunk.iter().map(|p| p.pin_hash.as_deref()).collect();
                    let rows = tx
                        .query(&upsert, &[&slugs, &titles, &bodies, &pins, &now, &keep])
                        .await?;
                    let inserted = rows.iter().filter(|r| r.get::<_, bool>(0)).count();
                    counts.inserted += inserted;
                    counts.updated += rows.len() - inserted;
                    counts.unchanged += chunk.len() - rows.len();
                }
                tx.commit().await?;
                Ok(counts)
            })
        })
    }

    fn check_ready(&self) -> BoxFuture<'_, Result<(), String>> {
        async move {
            // What a write needs: a server that assigns transaction ids (a standby
            // cannot) and does not default to read-only transactions. Asked on the
            // control pool: page calls holding every page connection are a busy
            // database, not one that is down (Issue 31 §3).
            let checked = self
                .control
                .run(|c| {
                    Box::pin(async move {
                        let row = c
                            .query_one(
                                "SELECT pg_current_xact_id()::text,
                                        current_setting('transaction_read_only')",
                                &[],
                            )
                            .await?;
                        Ok(row.get::<_, String>(1) == "off")
                    })
                })
                .await;
            match checked {
                Ok(true) => Ok(()),
                Ok(false) => Err("the database is read-only".to_owned()),
                // It answers, slowly: requests get `database-busy`, and taking this
                // replica out of rotation would move the load, not lift it.
                Err(PgError::Busy(_)) => Ok(()),
                Err(PgError::Failed(e)) => {
                    tracing::error!(error = %e, "readiness: database");
                    Err("the database failed".to_owned())
                }
                Err(_) => Err("the database does not answer".to_owned()),
            }
        }
        .boxed()
    }

    fn close(&self) {
        self.pg.close();
        self.control.close();
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{PageBody, PageTitle};

    fn page(slug: &str) -> ImportPage {
        ImportPage {
            slug: PageSlug::parse(slug).unwrap(),
            title: PageTitle::parse(slug).unwrap(),
            body: PageBody::parse(String::new()).unwrap(),
            pin_hash: None,
        }
    }

    #[test]
    fn an_import_is_cut_where_a_slug_repeats_and_at_the_batch_size() {
        let batch: Vec<ImportPage> = ["a", "b", "a", "c", "b", "b"]
            .iter()
            .map(|s| page(s))
            .collect();
        let sizes: Vec<usize> = chunks(&batch).iter().map(|c| c.len()).collect();
        assert_eq!(sizes, [2, 3, 1]);
        let many: Vec<ImportPage> = (0..2500).map(|i| page(&format!("p{i}"))).collect();
        let sizes: Vec<usize> = chunks(&many).iter().map(|c| c.len()).collect();
        assert_eq!(sizes, [1000, 1000, 500]);
        assert!(chunks(&[]).is_empty());
    }

    #[test]
    fn only_canonical_suffixes_count() {
        assert_eq!(canonical_suffix("41"), Some(41));
        for not in ["07", "+9", "book", "3x", "", "1000000000"] {
            assert_eq!(canonical_suffix(not), None, "{not}");
        }
    }
}
