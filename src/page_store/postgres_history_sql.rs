//! The SQL texts of the PostgreSQL page writes with their history (one statement
//! a write: see [`super::postgres_history`] for why), apart from the code that runs
//! them so that both the create and import of [`super::postgres`] and the writes of
//! [`super::postgres_history`] take them from below.

use crate::page_records::StateChange;

/// The CTEs that keep the row `changed` returned (`id, current_version, title,
/// body, updated_at`) as a version of kind `$kind` and prune to `$keep`.
fn keep_version(kind: &str, keep: &str) -> String {
    format!(
        "kept AS (
             INSERT INTO page_versions (page_id, version, title, body, kind, created_at)
             SELECT id, current_version, title, body, {kind}, updated_at FROM changed),
         pruned AS (
             DELETE FROM page_versions v USING changed
             WHERE v.page_id = changed.id AND v.version <= changed.current_version - {keep})"
    )
}

/// `UPDATE pages` of an update: `$1` id, `$2` title, `$3` body, `$4` now, `$5`
/// expected version (or null), `$6` versions kept. Answers the new version, or
/// null and the current one.
pub fn update_sql() -> String {
    format!(
        "WITH changed AS (
             UPDATE pages SET title = COALESCE($2, title), body = COALESCE($3, body),
                    current_version = current_version + 1, updated_at = $4
             WHERE id = $1 AND ($5::bigint IS NULL OR current_version = $5)
             RETURNING id, current_version, title, body, updated_at),
         {}
         SELECT (SELECT current_version FROM changed),
                (SELECT current_version FROM pages WHERE id = $1)",
        keep_version("'update'", "$6")
    )
}

/// `$1` id, `$2` now, `$3` expected (or null), `$4` versions kept. Answers the
/// page's state, whether it changed, and its version before the statement.
pub fn change_state_sql(change: StateChange) -> String {
    let (set, still, kind) = match change {
        StateChange::Archive => (
            "lifecycle = 'archived', current_version = current_version + 1, updated_at = $2",
            "lifecycle = 'active'",
            "'archive'",
        ),
        StateChange::Claim => (
            "claimed_at = $2, current_version = current_version + 1, updated_at = $2",
            "claimed_at IS NULL",
            "'claim'",
        ),
    };
    format!(
        "WITH changed AS (
             UPDATE pages SET {set}
             WHERE id = $1 AND {still} AND ($3::bigint IS NULL OR current_version = $3)
             RETURNING id, current_version, title, body, updated_at, slug, lifecycle,
                       claimed_at),
         {}
         SELECT slug, current_version, lifecycle, claimed_at, updated_at, true FROM changed
         UNION ALL
         SELECT slug, current_version, lifecycle, claimed_at, updated_at, false FROM pages
         WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM changed)",
        keep_version(kind, "$4")
    )
}

/// `$1` id, `$2` version to restore, `$3` now, `$4` expected (or null), `$5`
/// versions kept. Answers the new version (or null), whether the history holds
/// `$2`, and the page's version before the statement.
pub const RESTORE_SQL: &str = "WITH old AS (
         SELECT title, body FROM page_versions WHERE page_id = $1 AND version = $2),
     changed AS (
         UPDATE pages p SET title = old.title, body = old.body,
                current_version = p.current_version + 1, updated_at = $3
         FROM old
         WHERE p.id = $1 AND ($4::bigint IS NULL OR p.current_version = $4)
         RETURNING p.id, p.current_version, p.title, p.body, p.updated_at),
     kept AS (
         INSERT INTO page_versions (page_id, version, title, body, kind, created_at)
         SELECT id, current_version, title, body, 'restore', updated_at FROM changed),
     pruned AS (
         DELETE FROM page_versions v USING changed
         WHERE v.page_id = changed.id AND v.version <= changed.current_version - $5)
     SELECT (SELECT current_version FROM changed), EXISTS (SELECT 1 FROM old),
            (SELECT current_version FROM pages WHERE id = $1)";

/// The import upsert with its history: `$1`–`$4` the columns, `$5` now, `$6`
/// versions kept. Answers per page written whether it was inserted.
pub fn import_sql() -> String {
    format!(
        "WITH changed AS (
             INSERT INTO pages (slug, title, body, pin_hash, created_at, updated_at)
             SELECT slug, title, body, pin_hash, $5, $5
             FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
                  AS t(slug, title, body, pin_hash)
             ON CONFLICT (slug) DO UPDATE
                 SET title = EXCLUDED.title, body = EXCLUDED.body,
                     current_version = pages.current_version + 1,
                     updated_at = EXCLUDED.updated_at
                 WHERE pages.title <> EXCLUDED.title
                    OR pages.body <> EXCLUDED.body
             RETURNING id, current_version, title, body, updated_at, (xmax = 0) AS inserted),
         {}
         SELECT inserted FROM changed",
        keep_version("'import'", "$6")
    )
}

/// The create insert with version 1 kept: `$1`–`$5` slug, title, body, PIN hash,
/// now. Answers the id, or no row when the slug is taken.
pub const CREATE_SQL: &str = "WITH created AS (
         INSERT INTO pages (slug, title, body, pin_hash, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $5)
         ON CONFLICT (slug) DO NOTHING RETURNING id, title, body, created_at),
     kept AS (
         INSERT INTO page_versions (page_id, version, title, body, kind, created_at)
         SELECT id, 1, title, body, 'publish', created_at FROM created)
     SELECT id FROM created";
