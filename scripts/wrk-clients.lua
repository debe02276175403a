-- wrk script for scripts/bench.sh: each wrk thread is one client, sending a fixed
-- X-Forwarded-For (the server must trust 127.0.0.1 as a proxy), so a long run of
-- hits never fills one client's minute window (1,000,000 at most).
--   wrk -s scripts/wrk-clients.lua URL -- ROUND
-- ROUND (0-255) picks the third octet, so each round starts with fresh clients.
-- The header is set once per thread: the request stays prebuilt, costing wrk
-- nothing per request.
local threads = 0

function setup(thread)
   thread:set("id", threads)
   threads = threads + 1
end

function init(args)
   local round = tonumber(args[1] or "0") or 0
   wrk.headers["X-Forwarded-For"] = string.format("198.18.%d.%d", round % 256, id + 1)
end
