-- Page history (issue 32 §1), as SQLite's migrations/0005_page_history.sql: every
-- version of a page as it was written, newest `PAGE_HISTORY_VERSIONS` of them per
-- page (the writer prunes older ones in the same statement as the write). No
-- triggers: only the writer knows what made a version and how many to keep.
CREATE TABLE page_versions (
    page_id    bigint NOT NULL,
    version    bigint NOT NULL CHECK (version >= 1),
    title      text   NOT NULL,
    body       text   NOT NULL,
    kind       text   NOT NULL
        CHECK (kind IN ('publish', 'update', 'archive', 'claim', 'restore', 'import')),
    created_at bigint NOT NULL,
    PRIMARY KEY (page_id, version)
);

-- Pages written before history existed keep their current version; its kind is
-- read from the page's state.
INSERT INTO page_versions (page_id, version, title, body, kind, created_at)
    SELECT id, current_version, title, body,
           CASE WHEN claimed_at IS NOT NULL THEN 'claim'
                WHEN lifecycle = 'archived' THEN 'archive'
                WHEN current_version = 1 THEN 'publish'
                ELSE 'update' END,
           updated_at
    FROM pages;
