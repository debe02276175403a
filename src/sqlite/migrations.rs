//! Applies the SQL files of `migrations/` in order, each once, recorded in
//! `schema_migrations`. The files are compiled into the binary so a deployed server
//! needs nothing beside it.
//!
//! Two databases, two lists: the page database's ([`run`], `migrations/*.sql`) and
//! the budget database's ([`run_budget`], `migrations/budget/*.sql`), each recorded
//! in a `schema_migrations` table of its own file.

use rusqlite::{Connection, TransactionBehavior};

/// The migrations, in the order they run: (version, name, SQL).
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "0001_pages",
        include_str!("../../migrations/0001_pages.sql"),
    ),
    (
        2,
        "0002_rate_limit_counters",
        include_str!("../../migrations/0002_rate_limit_counters.sql"),
    ),
    (
        3,
        "0003_corpus_changes",
        include_str!("../../migrations/0003_corpus_changes.sql"),
    ),
    (
        4,
        "0004_budget_counters_moved",
        include_str!("../../migrations/0004_budget_counters_moved.sql"),
    ),
    (
        5,
        "0005_page_history",
        include_str!("../../migrations/0005_page_history.sql"),
    ),
    (
        6,
        "0006_idempotency_keys",
        include_str!("../../migrations/0006_idempotency_keys.sql"),
    ),
];

/// The budget database's migrations, in order: (version, name, SQL).
const BUDGET_MIGRATIONS: &[(i64, &str, &str)] = &[(
    1,
    "0001_rate_limit_counters",
    include_str!("../../migrations/budget/0001_rate_limit_counters.sql"),
)];

/// Applies every page-database migration not yet recorded; returns how many ran now.
///
/// Each runs in its own `IMMEDIATE` transaction that re-checks the record inside it,
/// so two processes starting at once cannot both apply one.
pub fn run(conn: &mut Connection) -> rusqlite::Result<usize> {
    apply(conn, MIGRATIONS)
}

/// [`run`] for the budget database (its own file and its own list).
pub fn run_budget(conn: &mut Connection) -> rusqlite::Result<usize> {
    apply(conn, BUDGET_MIGRATIONS)
}

fn apply(conn: &mut Connection, migrations: &[(i64, &str, &str)]) -> rusqlite::Result<usize> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version    INTEGER PRIMARY KEY,
             name       TEXT    NOT NULL,
             applied_at INTEGER NOT NULL
         )",
    )?;
    let mut applied = 0;
    for &(version, name, sql) in migrations {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let done: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = ?1)",
            [version],
            |row| row.get(0),
        )?;
        if !done {
            tx.execute_batch(sql)?;
            tx.execute(
                "INSERT INTO schema_migrations (version, name, applied_at)
                 VALUES (?1, ?2, CAST(strftime('%s', 'now') AS INTEGER))",
                rusqlite::params![version, name],
            )?;
            applied += 1;
            tracing::info!(version, name, "applied migration");
        }
        tx.commit()?;
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_apply_once_and_a_second_run_is_a_no_op() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::sqlite::open(&dir.path().join("t.sqlite3")).unwrap();
        assert_eq!(run(&mut conn).unwrap(), MIGRATIONS.len());
        assert_eq!(run(&mut conn).unwrap(), 0);
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn the_budget_database_has_the_counters_and_the_page_database_not_any_more() {
        let dir = tempfile::tempdir().unwrap();
        let pages = crate::sqlite::open_migrated(&dir.path().join("p.sqlite3")).unwrap();
        let budget = crate::sqlite::open_budget(&dir.path().join("b.sqlite3")).unwrap();
        let has = |c: &Connection| -> bool {
            c.query_row(
                "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE name = 'rate_limit_counters')",
                [],
                |r| r.get(0),
            )
            .unwrap()
        };
        assert!(has(&budget) && !has(&pages));
        let recorded: i64 = budget
            .query_row("SELECT COUNT(*) FROM schema_migrations", [], |r| r.get(0))
            .unwrap();
        assert_eq!(recorded, BUDGET_MIGRATIONS.len() as i64);
    }
}
