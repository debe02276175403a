-- Idempotent publishes (issue 32 §3), as SQLite's migrations/0006_idempotency_keys.sql:
-- one row per `Idempotency-Key` a client sent in the last 24 h, the key stored only
-- as hex(SHA-256(client || 0x00 || key)); `running` while its publish runs, `done`
-- with the 2xx answer it gave. Shared by every replica on this database: a claim
-- runs in one transaction under a per-client advisory lock, so two replicas
-- claiming one key at once see one winner.
CREATE TABLE idempotency_keys (
    key_hash    text   NOT NULL PRIMARY KEY,
    client_hash text   NOT NULL,
    fingerprint text   NOT NULL,
    state       text   NOT NULL CHECK (state IN ('running', 'done')),
    started_at  bigint NOT NULL,
    status      integer,
    response    text,
    CHECK ((state = 'done') = (status IS NOT NULL AND response IS NOT NULL))
);

CREATE INDEX idempotency_keys_client ON idempotency_keys (client_hash, started_at);
CREATE INDEX idempotency_keys_started ON idempotency_keys (started_at);
