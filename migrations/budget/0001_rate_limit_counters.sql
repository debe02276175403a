-- The budget database: a SQLite file of its own beside the page database, so a
-- budget write (every search, page write and wrong PIN) never waits for a page
-- write's lock, however large (an import of 60,000 pages from another process).
--
-- Fixed-window request budget counters, one row per bucket key (hex SHA-256 of
-- "search-ip-min:<ip>" or "search-ip-hour:<ip>", and the publish and PIN-failure
-- keys). A row of an ended window is reset on its next use and swept periodically,
-- so the table cannot grow without bound.
CREATE TABLE rate_limit_counters (
    bucket       TEXT    PRIMARY KEY,
    window_start INTEGER NOT NULL,
    count        INTEGER NOT NULL CHECK (count >= 0)
) WITHOUT ROWID;

CREATE INDEX rate_limit_counters_window_start ON rate_limit_counters (window_start);
