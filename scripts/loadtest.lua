-- wrk script for scripts/loadtest.sh: a fixed number of GET /search requests, spread
-- round-robin over LOADTEST_CLIENTS client addresses sent as X-Forwarded-For, with
-- the status of each search answer counted. Run with one wrk thread (-t1): the
-- counts live in that thread, which prints them and ends wrk as soon as every
-- planned search is answered (wrk would otherwise wait out its whole -d).
--
-- Settings come from the environment (loadtest.sh sets them):
--   LOADTEST_REQUESTS    searches to send
--   LOADTEST_CLIENTS     distinct client addresses (round-robin)
--   LOADTEST_CLIENT_BASE offset of the first address in 198.18.0.0/15 (RFC 2544's
--                        benchmarking range: header text only, never a destination)
--   LOADTEST_FORWARDED   1: send X-Forwarded-For; 0: send none
--   LOADTEST_QUERY       the query text
--   LOADTEST_DISTINCT    1: append the request number, so every search is a cache miss

local requests = tonumber(os.getenv("LOADTEST_REQUESTS") or "60")
local clients = tonumber(os.getenv("LOADTEST_CLIENTS") or "1")
local client_base = tonumber(os.getenv("LOADTEST_CLIENT_BASE") or "0")
local forwarded = os.getenv("LOADTEST_FORWARDED") ~= "0"
local query = os.getenv("LOADTEST_QUERY") or "kubernetes"
local distinct = os.getenv("LOADTEST_DISTINCT") == "1"

sent = 0
answered = 0
statuses = {}
-- Answers per second: timeline[unix second][status] = count (for --report).
timeline = {}
first_sent = nil
last_answered = nil

local function client_address(i)
  local n = client_base + (i % clients)
  return string.format("198.%d.%d.%d", 18 + math.floor(n / 65536), math.floor(n / 256) % 256, n % 256)
end

local function encode(text)
  return (text:gsub("[^%w%-%._~]", function(c)
    return string.format("%%%02X", string.byte(c))
  end))
end

local prefix = ""

function init(args)
  prefix = (wrk.path or "/"):gsub("/+$", "")
end

-- wrk calls request() once right after init() to check the script and throws that
-- request away; a search made then would be counted but never sent. The first call
-- is therefore a /healthz request, harmless if a wrk version does send it.
local checked = false

function request()
  if not checked then
    checked = true
    return wrk.format("GET", prefix .. "/healthz")
  end
  if sent >= requests then
    -- Every planned search is out; keep the other connections busy with a request
    -- that spends no budget until the last search answer arrives.
    return wrk.format("GET", prefix .. "/healthz")
  end
  local q = query
  if distinct then
    q = q .. " " .. sent
  end
  local headers = {}
  if forwarded then
    headers["X-Forwarded-For"] = client_address(sent)
  end
  sent = sent + 1
  first_sent = first_sent or os.time()
  return wrk.format("GET", prefix .. "/search?q=" .. encode(q), headers)
end

-- Only /search answers carry Cache-Control: no-store (SPEC §5); /healthz does not.
local function is_search(headers)
  local cc = headers["Cache-Control"] or headers["cache-control"]
  return cc ~= nil and cc:find("no-store", 1, true) ~= nil
end

function report(s)
  local function count(code) return s.statuses[code] or 0 end
  local other = 0
  for code, n in pairs(s.statuses) do
    if code ~= 200 and code ~= 429 and code ~= 503 and code ~= 500 then
      other = other + n
    end
  end
  io.write(string.format(
    "LOADTEST sent=%d answered=%d s200=%d s429=%d s503=%d s500=%d other=%d first=%d last=%d complete=%d\n",
    s.sent, s.answered, count(200), count(429), count(503), count(500), other,
    s.first_sent or 0, s.last_answered or 0, s.complete and 1 or 0))
  -- One line per second with answers: LOADSEC second s200 s429 s503 s500 other.
  for second, codes in pairs(s.timeline or {}) do
    local other_n = 0
    for code, n in pairs(codes) do
      if code ~= 200 and code ~= 429 and code ~= 503 and code ~= 500 then
        other_n = other_n + n
      end
    end
    io.write(string.format("LOADSEC %d %d %d %d %d %d\n", second, codes[200] or 0,
      codes[429] or 0, codes[503] or 0, codes[500] or 0, other_n))
  end
  io.flush()
end

function response(status, headers, body)
  if not is_search(headers) then
    return
  end
  answered = answered + 1
  statuses[status] = (statuses[status] or 0) + 1
  last_answered = os.time()
  local second = timeline[last_answered] or {}
  second[status] = (second[status] or 0) + 1
  timeline[last_answered] = second
  if answered >= requests then
    report({ sent = sent, answered = answered, statuses = statuses,
             first_sent = first_sent, last_answered = last_answered, complete = true,
             timeline = timeline })
    os.exit(0)
  end
end

-- Reached only when wrk's -d ran out before every search was answered.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function done(summary, latency, reqs)
  for _, t in ipairs(threads) do
    report({ sent = t:get("sent"), answered = t:get("answered"), statuses = t:get("statuses"),
             first_sent = t:get("first_sent"), last_answered = t:get("last_answered"),
             complete = false, timeline = t:get("timeline") })
  end
end
