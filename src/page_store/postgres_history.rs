//! The page writes with their history (issue 32 §1–§2), over PostgreSQL: each
//! write is one statement whose data-modifying CTEs change the page, insert the
//! version it made into `page_versions` and delete the page's versions older than
//! the newest [`WriteTerms::keep`], so the three commit together. The expected
//! version is a condition of the `UPDATE` itself (`current_version = $n`): of two
//! writers expecting the same version, the second re-checks the row after the
//! first commits (READ COMMITTED's rule for `UPDATE`) and changes nothing. No row
//! is locked before the `UPDATE`, so the counter-then-pages lock order of
//! `migrations/postgres/0001_pages.sql` holds.

use tokio_postgres::Row;

use super::history::{PageHistory, WriteFuture};
use super::postgres::PostgresPages;
use super::postgres_history_sql::{change_state_sql, update_sql, RESTORE_SQL};
use super::{
    PageFuture, PageVersion, Restored, VersionKind, VersionList, VersionMismatch, VersionSummary,
    WriteTerms,
};
use crate::domain::{PageBody, PageTitle};
use crate::page_records::{PageEdit, StateChange, StateRow};

/// The stale answer of a statement whose `UPDATE` changed nothing.
fn stale(current: Option<i64>) -> VersionMismatch {
    VersionMismatch {
        current: current.unwrap_or(0),
    }
}

/// Page `id`'s version now, in a statement of its own (so a snapshot taken after
/// any write that committed while the caller's statement waited).
async fn current_version(
    c: &deadpool_postgres::Object,
    id: i64,
) -> Result<Option<i64>, tokio_postgres::Error> {
    Ok(
        c.query_opt("SELECT current_version FROM pages WHERE id = $1", &[&id])
            .await?
            .map(|r| r.get(0)),
    )
}

/// The state in a row's first five columns: `slug, current_version, lifecycle,
/// claimed_at, updated_at`.
fn state_row(r: &Row) -> StateRow {
    StateRow {
        slug: r.get(0),
        version: r.get(1),
        lifecycle: r.get(2),
        claimed_at: r.get(3),
        updated_at: r.get(4),
    }
}

fn version_row(r: &Row) -> PageVersion {
    PageVersion {
        version: r.get(0),
        title: r.get(1),
        body: r.get(2),
        kind: VersionKind::parse(r.get(3)),
        created_at: r.get(4),
    }
}

impl PageHistory for PostgresPages {
    fn update(&self, id: i64, edit: PageEdit, terms: WriteTerms) -> WriteFuture<'_, i64> {
        self.call(move |c| {
            Box::pin(async move {
                let statement = c.prepare_cached(&update_sql()).await?;
                let title = edit.title.as_ref().map(PageTitle::as_str);
                let body = edit.body.as_ref().map(PageBody::as_str);
                let row = c
                    .query_one(
                        &statement,
                        &[&id, &title, &body, &terms.now, &terms.expected, &terms.keep],
                    )
                    .await?;
                Ok(match row.get::<_, Option<i64>>(0) {
                    Some(version) => Ok(version),
                    None => Err(stale(current_version(c, id).await?)),
                })
            })
        })
    }

    fn change_state(
        &self,
        id: i64,
        change: StateChange,
        terms: WriteTerms,
    ) -> WriteFuture<'_, StateRow> {
        let sql = change_state_sql(change);
        self.call(move |c| {
            Box::pin(async move {
                let statement = c.prepare_cached(&sql).await?;
                let r = c
                    .query_one(&statement, &[&id, &terms.now, &terms.expected, &terms.keep])
                    .await?;
                let state = state_row(&r);
                let changed: bool = r.get(5);
                if changed {
                    return Ok(Ok(state));
                }
                // Nothing changed: the row above is of the statement's snapshot,
                // which a writer that committed while this one waited for its row
                // lock is not in. Read the page as it is now.
                let r = c
                    .query_one(
                        "SELECT slug, current_version, lifecycle, claimed_at, updated_at
                         FROM pages WHERE id = $1",
                        &[&id],
                    )
                    .await?;
                let state = state_row(&r);
                Ok(match terms.expected {
                    Some(expected) if state.version != expected => Err(stale(Some(state.version))),
                    _ => Ok(state),
                })
            })
        })
    }

    fn restore(&self, id: i64, version: i64, terms: WriteTerms) -> PageFuture<'_, Restored> {
        self.call(move |c| {
            Box::pin(async move {
                let statement = c.prepare_cached(RESTORE_SQL).await?;
                let r = c
                    .query_one(
                        &statement,
                        &[&id, &version, &terms.now, &terms.expected, &terms.keep],
                    )
                    .await?;
                if let Some(new) = r.get::<_, Option<i64>>(0) {
                    return Ok(Restored::Done(new));
                }
                let current = current_version(c, id).await?;
                Ok(match terms.expected {
                    Some(e) if Some(e) != current => Restored::Mismatch(stale(current)),
                    _ => Restored::NoSuchVersion,
                })
            })
        })
    }

    fn versions(&self, id: i64, offset: i64, limit: i64) -> PageFuture<'_, VersionList> {
        self.call(move |c| {
            Box::pin(async move {
                // The count and the rows in one statement (one snapshot).
                let statement = c
                    .prepare_cached(
                        "WITH total AS (SELECT count(*) AS n FROM page_versions WHERE page_id = $1)
                         SELECT total.n, v.version, v.title, v.kind, v.created_at, v.bytes
                         FROM total LEFT JOIN LATERAL (
                             SELECT version, title, kind, created_at,
                                    octet_length(body)::bigint AS bytes
                             FROM page_versions WHERE page_id = $1
                             ORDER BY version DESC LIMIT $2 OFFSET $3
                         ) v ON true
                         ORDER BY v.version DESC",
                    )
                    .await?;
                let rows = c.query(&statement, &[&id, &limit, &offset]).await?;
                let total = rows.first().map_or(0, |r| r.get(0));
                let rows = rows
                    .iter()
                    .filter_map(|r| {
                        Some(VersionSummary {
                            version: r.get::<_, Option<i64>>(1)?,
                            title: r.get(2),
                            kind: VersionKind::parse(r.get(3)),
                            created_at: r.get(4),
                            body_bytes: r.get(5),
                        })
                    })
                    .collect();
                Ok(VersionList { total, rows })
            })
        })
    }

    fn version(&self, id: i64, version: i64, before: bool) -> PageFuture<'_, Option<PageVersion>> {
        let sql = if before {
            "SELECT version, title, body, kind, created_at FROM page_versions
             WHERE page_id = $1 AND version < $2 ORDER BY version DESC LIMIT 1"
        } else {
            "SELECT version, title, body, kind, created_at FROM page_versions
             WHERE page_id = $1 AND version = $2"
        };
        self.call(move |c| {
            Box::pin(async move {
                let statement = c.prepare_cached(sql).await?;
                Ok(c.query_opt(&statement, &[&id, &version])
                    .await?
                    .map(|r| version_row(&r)))
            })
        })
    }
}
