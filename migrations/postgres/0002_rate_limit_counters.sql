-- Fixed-window budget counters when pages are in PostgreSQL and no Redis/Valkey is
-- configured: one row per bucket key (hex SHA-256, as in SQLite's table), the start
-- of its window (unix seconds, the database server's clock) and its count. A row of
-- an ended window counts as 0 and is overwritten on its next use; rows of windows
-- that ended are swept periodically.
CREATE TABLE rate_limit_counters (
    bucket       text   COLLATE "C" PRIMARY KEY,
    window_start bigint NOT NULL,
    count        bigint NOT NULL CHECK (count >= 0)
);

CREATE INDEX rate_limit_counters_window_start ON rate_limit_counters (window_start);

-- One call decides a batch of budget requests, as the Redis script does one: in
-- arrival order, each both-or-neither over its windows (a spend counts one in every
-- window only if all are under their limits; a refusal changes nothing), with the
-- rows of every key locked in key order first (so batches of several replicas
-- serialize per key and never deadlock), then every changed row written once. It
-- also returns the corpus generation, read after the requests were queued, so a
-- search needs no second round trip to know whether its snapshot is current.
--
-- It commits with synchronous_commit off (set for its own transaction): the answer
-- does not wait for the WAL flush, and a crash of the server can forget the last
-- fraction of a second of counts, never a page.
--
-- p_now: per request, the caller's unix seconds, or NULL for the server's clock
-- (the service).
-- p_modes: per request 'spend', 'peek' or 'record'; p_windows: per request how many
-- windows it has (its entries follow the previous request's). Per entry: p_slots
-- (1-based index of its key in p_buckets), p_seconds, p_limits. p_buckets: the
-- distinct keys, sorted.
-- Returns per request, in order: the 1-based number of the window that refused a
-- spend (0 otherwise), each window's count after, the seconds the windows were
-- aligned with and the microseconds past that second (0 with the caller's clock),
-- the corpus generation and the server's start time in microseconds (which history
-- that generation belongs to).
CREATE FUNCTION budget_apply(
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
    up     bigint := (extract(epoch FROM pg_postmaster_start_time()) * 1e6)::bigint;
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
