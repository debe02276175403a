-- Page history (issue 32 §1): every version of a page as it was written, newest
-- `PAGE_HISTORY_VERSIONS` of them per page (the writer prunes older ones in the
-- same transaction). `kind` is what made the version. Rows are written by the
-- page store's code, not by triggers: only the writer knows whether a write was an
-- update or a restore, and how many versions to keep.
--
-- A rowid table (not WITHOUT ROWID): bodies are up to 256 KiB, far past the size
-- SQLite advises for WITHOUT ROWID rows; the unique index finds a version.
CREATE TABLE page_versions (
    page_id    INTEGER NOT NULL,
    version    INTEGER NOT NULL CHECK (version >= 1),
    title      TEXT    NOT NULL,
    body       TEXT    NOT NULL,
    kind       TEXT    NOT NULL
        CHECK (kind IN ('publish', 'update', 'archive', 'claim', 'restore', 'import')),
    created_at INTEGER NOT NULL
);

CREATE UNIQUE INDEX page_versions_page ON page_versions (page_id, version);

-- Pages written before history existed keep their current version, the one the
-- database still holds; its kind is read from the page's state.
INSERT INTO page_versions (page_id, version, title, body, kind, created_at)
    SELECT id, current_version, title, body,
           CASE WHEN claimed_at IS NOT NULL THEN 'claim'
                WHEN lifecycle = 'archived' THEN 'archive'
                WHEN current_version = 1 THEN 'publish'
                ELSE 'update' END,
           updated_at
    FROM pages;
