//! Applies the SQL files of `migrations/postgres/` in order, each once, recorded in
//! `schema_migrations` as SQLite's are (`crate::sqlite::migrations`). The files are
//! compiled into the binary.
//!
//! All of one run happens in one transaction holding an advisory lock, so replicas
//! that start at once apply each migration exactly once (the others wait, then find
//! it recorded), and a migration that fails leaves nothing half-applied.

use super::{CallError, Pg, PgError};

/// The migrations, in the order they run: (version, name, SQL).
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "0001_pages",
        include_str!("../../migrations/postgres/0001_pages.sql"),
    ),
    (
        2,
        "0002_rate_limit_counters",
        include_str!("../../migrations/postgres/0002_rate_limit_counters.sql"),
    ),
    (
        3,
        "0003_corpus_history",
        include_str!("../../migrations/postgres/0003_corpus_history.sql"),
    ),
    (
        4,
        "0004_page_history",
        include_str!("../../migrations/postgres/0004_page_history.sql"),
    ),
    (
        5,
        "0005_idempotency_keys",
        include_str!("../../migrations/postgres/0005_idempotency_keys.sql"),
    ),
];

/// The advisory lock key of a migration run (any constant of our own).
const LOCK_KEY: i64 = 0x6167_656e_7470_6731; // "agentpg1"

/// Applies every migration not yet recorded; returns how many ran now.
///
/// Errors: the server could not be reached, its encoding is not UTF8 (text would
/// not round-trip), or a migration failed (then none of this run is kept).
pub async fn run(pg: &Pg) -> Result<usize, PgError> {
    pg.run_unbounded(|client| {
        Box::pin(async move {
            let tx = client.transaction().await?;
            tx.execute("SET LOCAL statement_timeout = 0", &[]).await?;
            tx.execute("SET LOCAL lock_timeout = 0", &[]).await?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_KEY])
                .await?;
            let encoding: String = tx.query_one("SHOW server_encoding", &[]).await?.get(0);
            if encoding != "UTF8" {
                return Ok(Err(encoding));
            }
            tx.batch_execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (
                     version    bigint PRIMARY KEY,
                     name       text   NOT NULL,
                     applied_at bigint NOT NULL
                 )",
            )
            .await?;
            let mut applied = Vec::new();
            for &(version, name, sql) in MIGRATIONS {
                let done = tx
                    .query_opt(
                        "SELECT 1 FROM schema_migrations WHERE version = $1",
                        &[&version],
                    )
                    .await?
                    .is_some();
                if !done {
                    tx.batch_execute(sql).await?;
                    tx.execute(
                        "INSERT INTO schema_migrations (version, name, applied_at)
                         VALUES ($1, $2, extract(epoch FROM now())::bigint)",
                        &[&version, &name],
                    )
                    .await?;
                    applied.push((version, name));
                }
            }
            tx.commit().await?;
            Ok::<_, CallError>(Ok(applied))
        })
    })
    .await
    .and_then(|applied| {
        let applied = applied.map_err(|encoding| {
            PgError::Failed(format!(
                "the database's encoding is {encoding}; pages need UTF8 \
                 (CREATE DATABASE … ENCODING 'UTF8')"
            ))
        })?;
        for (version, name) in &applied {
            tracing::info!(version, name, "applied PostgreSQL migration");
        }
        Ok(applied.len())
    })
}
