-- Fixed-window request budget counters, one row per bucket key (hex SHA-256 of
-- "search-ip-min:<ip>" or "search-ip-hour:<ip>"). A row of an ended window is reset
-- on its next use and swept periodically, so the table cannot grow without bound.
CREATE TABLE rate_limit_counters (
    bucket       TEXT    PRIMARY KEY,
    window_start INTEGER NOT NULL,
    count        INTEGER NOT NULL CHECK (count >= 0)
) WITHOUT ROWID;

CREATE INDEX rate_limit_counters_window_start ON rate_limit_counters (window_start);
