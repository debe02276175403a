-- Which page each corpus generation changed, so a process whose candidate snapshot
-- is at generation g applies only the pages of the generations after g instead of
-- reloading every candidate. Every generation bump writes exactly one row here (the
-- triggers below replace those of 0001), so the rows after g are complete exactly
-- when g + 1 is still present; older rows are compacted away, and a process that
-- fell behind them reloads in full.
CREATE TABLE corpus_changes (
    generation INTEGER PRIMARY KEY,
    page_id    INTEGER NOT NULL
);

DROP TRIGGER pages_generation_insert;
DROP TRIGGER pages_generation_update;
DROP TRIGGER pages_generation_delete;

CREATE TRIGGER pages_generation_insert AFTER INSERT ON pages
BEGIN
    UPDATE corpus_generation SET generation = generation + 1 WHERE id = 1;
    INSERT INTO corpus_changes (generation, page_id)
        SELECT generation, NEW.id FROM corpus_generation WHERE id = 1;
END;

CREATE TRIGGER pages_generation_update AFTER UPDATE ON pages
BEGIN
    UPDATE corpus_generation SET generation = generation + 1 WHERE id = 1;
    INSERT INTO corpus_changes (generation, page_id)
        SELECT generation, NEW.id FROM corpus_generation WHERE id = 1;
END;

CREATE TRIGGER pages_generation_delete AFTER DELETE ON pages
BEGIN
    UPDATE corpus_generation SET generation = generation + 1 WHERE id = 1;
    INSERT INTO corpus_changes (generation, page_id)
        SELECT generation, OLD.id FROM corpus_generation WHERE id = 1;
END;
