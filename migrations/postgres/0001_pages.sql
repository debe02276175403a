-- Pages in PostgreSQL: the same rows as SQLite's `pages` (migrations/0001_pages.sql),
-- times in unix seconds. Ids come from an identity that is never reset, so ids are
-- never reused (SPEC §3); `copy` keeps a SQLite database's ids and moves the identity
-- past them.
CREATE TABLE pages (
    id              bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- "C": byte order, as SQLite compares. The free-slug search reads the range
    -- ('stem-', 'stem.'), which only holds the `stem-…` slugs in byte order.
    slug            text    COLLATE "C" NOT NULL UNIQUE,
    title           text    NOT NULL,
    body            text    NOT NULL DEFAULT '',
    pin_hash        text,
    current_version bigint  NOT NULL DEFAULT 1 CHECK (current_version >= 1),
    lifecycle       text    NOT NULL DEFAULT 'active' CHECK (lifecycle IN ('active', 'archived')),
    claimed_at      bigint,
    created_at      bigint  NOT NULL,
    updated_at      bigint  NOT NULL
);

-- The ledger lists candidates newest first.
CREATE INDEX pages_ledger ON pages (updated_at DESC, id DESC)
    WHERE lifecycle = 'active' AND claimed_at IS NULL;

-- One number that moves on every committed change to `pages`, whoever wrote it, and
-- which pages each generation changed. Every replica reads the number per search and
-- applies the pages of the generations after its snapshot's (SPEC §10).
--
-- A single row bumped by the triggers, not a sequence: a writer holds its row lock
-- until it commits, so the next writer's generations come after it, and a reader that
-- sees generation g also sees every change up to g (a `bigserial` is not commit
-- order: a reader could see 2 while 1 was uncommitted, and skip 1 for good).
CREATE TABLE corpus_generation (
    id         integer PRIMARY KEY CHECK (id = 1),
    generation bigint  NOT NULL
);
INSERT INTO corpus_generation (id, generation) VALUES (1, 0);

-- One row per generation; compacted (old rows deleted) by every replica, and a
-- replica whose snapshot fell behind the oldest row reloads in full.
CREATE TABLE corpus_changes (
    generation bigint PRIMARY KEY,
    page_id    bigint NOT NULL
);

-- Statement triggers with transition tables: one bump of the counter per statement
-- (by the number of rows it changed), so a batched import costs one row lock per
-- batch, not one per page. A statement that changed no row moves nothing.
CREATE FUNCTION corpus_record_changes() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    n     bigint;
    first bigint;
BEGIN
    SELECT count(*) INTO n FROM changed_rows;
    IF n = 0 THEN
        RETURN NULL;
    END IF;
    UPDATE corpus_generation SET generation = generation + n WHERE id = 1
        RETURNING generation - n INTO first;
    INSERT INTO corpus_changes (generation, page_id)
        SELECT first + row_number() OVER (ORDER BY id), id FROM changed_rows;
    RETURN NULL;
END
$$;

-- Every writing statement takes the counter's row lock before it touches a page, so
-- writers always lock in the same order (counter, then pages) and never deadlock on
-- each other (a page row locked first, then the counter, would deadlock against an
-- import holding the counter and wanting that page).
CREATE FUNCTION corpus_lock_generation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM corpus_generation WHERE id = 1 FOR UPDATE;
    RETURN NULL;
END
$$;

CREATE TRIGGER pages_lock_generation BEFORE INSERT OR UPDATE OR DELETE ON pages
    FOR EACH STATEMENT EXECUTE FUNCTION corpus_lock_generation();

CREATE TRIGGER pages_changes_insert AFTER INSERT ON pages
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION corpus_record_changes();

CREATE TRIGGER pages_changes_update AFTER UPDATE ON pages
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION corpus_record_changes();

CREATE TRIGGER pages_changes_delete AFTER DELETE ON pages
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION corpus_record_changes();
