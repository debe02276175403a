-- Idempotent publishes (issue 32 §3): one row per `Idempotency-Key` a client sent
-- to `POST /api/pages` (or as `publish_page`'s `idempotency_key`) in the last 24 h.
-- The key itself is never stored: `key_hash` is hex(SHA-256(client || 0x00 || key)),
-- `client_hash` hex(SHA-256("idempotency-client:" || client)), for the per-client
-- bound. `fingerprint` is hex(SHA-256) of the request (the body bytes as received,
-- or the tool arguments' canonical JSON). A row is `running` while its publish runs
-- (`status` and `response` null) and `done` once it answered 2xx (`status` and the
-- JSON body it answered); a publish that answered anything else deletes its row.
-- `started_at` (unix seconds) is when the row's publish started: rows 24 h old are
-- expired and deleted by later claims, a `running` row 60 s old is abandoned.
--
-- WITHOUT ROWID: rows are small (a `Created` answer is a few hundred bytes) and
-- always found by their key hash.
CREATE TABLE idempotency_keys (
    key_hash    TEXT    NOT NULL PRIMARY KEY,
    client_hash TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    state       TEXT    NOT NULL CHECK (state IN ('running', 'done')),
    started_at  INTEGER NOT NULL,
    status      INTEGER,
    response    TEXT,
    CHECK ((state = 'done') = (status IS NOT NULL AND response IS NOT NULL))
) WITHOUT ROWID;

-- The bound (live keys of one client) and the Retry-After past it.
CREATE INDEX idempotency_keys_client ON idempotency_keys (client_hash, started_at);
-- The sweep of expired rows.
CREATE INDEX idempotency_keys_started ON idempotency_keys (started_at);
