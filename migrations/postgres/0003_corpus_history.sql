-- Which history the corpus generations belong to (Issue 31 §1). A replica follows
-- the change log from its snapshot's generation only while the history it read
-- that generation in is the one it reads now; any other answer means a full
-- rebuild. `corpus_epoch()` names the history as one number, from four parts, each
-- moved by other ways of replacing what the generations stand for:
--
-- * `corpus_history.history`: a random id written here, when the schema is created,
--   and rewritten by `agent-pages copy`. A new database migrated afresh gets a new one.
-- * the database's own OID (`pg_database.oid`): a `DROP DATABASE` + `CREATE DATABASE`
--   + `pg_restore` into the same running server, or a restore into a new database
--   renamed into place, gives another OID (OIDs are not reused until the 32-bit
--   counter wraps), although the restored `corpus_history` row is the dumped one.
-- * the OID of the `corpus_generation` table: `pg_restore --clean` (or any restore
--   that drops and recreates the tables in the same database) creates it anew.
-- * the server's start time (`pg_postmaster_start_time()`): a physical restore or a
--   point-in-time recovery (the cluster is started from the copy) and a failover to
--   a promoted standby (another server) keep every OID and row but start another
--   postmaster. A plain restart moves it too (one full rebuild, never a wrong one).
--
-- What none of them sees, a restore that keeps the database, its tables and the
-- server (`TRUNCATE` then `pg_restore --data-only`), shows as a generation lower than
-- one already read: the service treats a generation that goes backwards as a new
-- history too (`crate::pg::Epoch`).
CREATE TABLE corpus_history (
    id         integer PRIMARY KEY CHECK (id = 1),
    history    uuid    NOT NULL,
    -- Unix seconds, the database server's clock: when this history began.
    created_at bigint  NOT NULL
);
INSERT INTO corpus_history (id, history, created_at)
    VALUES (1, gen_random_uuid(), extract(epoch FROM now())::bigint);

-- The history now, as one 64-bit number (a hash of the four parts above). STABLE:
-- one value per statement.
CREATE FUNCTION corpus_epoch() RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT hashtextextended(
               h.history::text
               || '/' || d.oid::text
               || '/' || 'corpus_generation'::regclass::oid::text
               || '/' || (extract(epoch FROM pg_postmaster_start_time()) * 1e6)::bigint::text,
               0)
    FROM corpus_history h, pg_database d
    WHERE h.id = 1 AND d.datname = current_database()
$$;

-- budget_apply (0002) as it was, except that its `started` column now carries
-- `corpus_epoch()` (the history), not the server's start time alone.
CREATE OR REPLACE FUNCTION budget_apply(
    p_now     bigint[],
    p_modes   text[],
    p_windows integer[],
    p_slots   integer[],
    p_seconds bigint[],
    p_limits  bigint[],
    p_buckets text[]
) RETURNS TABLE (refused integer, counts bigint[], at bigint, micros bigint,
                 generation bigint, started bigint)
LANGUAGE plpgsql AS $$
DECLARE
    server_us bigint := floor(extract(epoch FROM clock_timestamp()) * 1e6)::bigint;
    server bigint := server_us / 1000000;
    now_s  bigint;
    starts bigint[];
    held   bigint[];
    dirty  boolean[];
    gen    bigint;
    up     bigint := corpus_epoch();
    first  integer := 1;
    r      integer;
    i      integer;
    w      integer;
    ref    integer;
    st     bigint;
    cs     bigint[];
    sts    bigint[];
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    INSERT INTO rate_limit_counters (bucket, window_start, count)
        SELECT b, 0, 0 FROM unnest(p_buckets) AS u(b) ORDER BY b
        ON CONFLICT (bucket) DO NOTHING;
    PERFORM 1 FROM rate_limit_counters WHERE bucket = ANY (p_buckets)
        ORDER BY bucket FOR UPDATE;
    SELECT array_agg(c.window_start ORDER BY u.ord), array_agg(c.count ORDER BY u.ord)
        INTO starts, held
        FROM unnest(p_buckets) WITH ORDINALITY AS u(b, ord)
        JOIN rate_limit_counters c ON c.bucket = u.b;
    dirty := array_fill(false, ARRAY[array_length(p_buckets, 1)]);
    SELECT g.generation INTO gen FROM corpus_generation g WHERE g.id = 1;
    FOR r IN 1 .. coalesce(array_length(p_modes, 1), 0) LOOP
        now_s := coalesce(p_now[r], server);
        ref := 0;
        cs := '{}';
        sts := '{}';
        FOR w IN 1 .. p_windows[r] LOOP
            i := first + w - 1;
            st := now_s - (now_s % p_seconds[i]);
            sts := sts || st;
            IF starts[p_slots[i]] = st THEN
                cs := cs || held[p_slots[i]];
            ELSE
                cs := cs || 0::bigint;
            END IF;
            IF p_modes[r] = 'spend' AND ref = 0 AND cs[w] >= p_limits[i] THEN
                ref := w;
            END IF;
        END LOOP;
        IF p_modes[r] <> 'peek' AND ref = 0 THEN
            FOR w IN 1 .. p_windows[r] LOOP
                i := first + w - 1;
                cs[w] := cs[w] + 1;
                starts[p_slots[i]] := sts[w];
                held[p_slots[i]] := cs[w];
                dirty[p_slots[i]] := true;
            END LOOP;
        END IF;
        refused := ref;
        counts := cs;
        at := now_s;
        micros := CASE WHEN p_now[r] IS NULL THEN server_us % 1000000 ELSE 0 END;
        generation := gen;
        started := up;
        RETURN NEXT;
        first := first + p_windows[r];
    END LOOP;
    UPDATE rate_limit_counters c SET window_start = v.s, count = v.n
        FROM unnest(p_buckets, starts, held, dirty) AS v(b, s, n, d)
        WHERE c.bucket = v.b AND v.d;
END
$$;
