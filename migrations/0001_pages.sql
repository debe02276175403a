-- Pages: the published texts. AUTOINCREMENT so ids are never reused (SPEC §3).
CREATE TABLE pages (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    slug            TEXT    NOT NULL UNIQUE,
    title           TEXT    NOT NULL,
    body            TEXT    NOT NULL DEFAULT '',
    pin_hash        TEXT,
    current_version INTEGER NOT NULL DEFAULT 1 CHECK (current_version >= 1),
    lifecycle       TEXT    NOT NULL DEFAULT 'active' CHECK (lifecycle IN ('active', 'archived')),
    claimed_at      INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);

-- The ledger lists candidates newest first; a partial index keeps that cheap.
CREATE INDEX pages_ledger ON pages (updated_at DESC, id DESC)
    WHERE lifecycle = 'active' AND claimed_at IS NULL;

-- One number that moves on every change to `pages`, from any process (the triggers
-- live in the database file). Search reads it per request and rebuilds its in-memory
-- candidate snapshot only when it moved, so a request's cost does not grow with the
-- corpus while its answer stays that of a fresh fetch.
CREATE TABLE corpus_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
);
INSERT INTO corpus_generation (id, generation) VALUES (1, 0);

CREATE TRIGGER pages_generation_insert AFTER INSERT ON pages
BEGIN
    UPDATE corpus_generation SET generation = generation + 1 WHERE id = 1;
END;

CREATE TRIGGER pages_generation_update AFTER UPDATE ON pages
BEGIN
    UPDATE corpus_generation SET generation = generation + 1 WHERE id = 1;
END;

CREATE TRIGGER pages_generation_delete AFTER DELETE ON pages
BEGIN
    UPDATE corpus_generation SET generation = generation + 1 WHERE id = 1;
END;
