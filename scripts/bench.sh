#!/usr/bin/env bash
# Throughput of the search gates next to a bare actix-web handler, in one run on one
# machine (issue 11). Needs wrk (apt-get install wrk) and a release build
# (cargo build --release --bins --examples). Never run in CI.
#
#   scripts/bench.sh [--corpus FILE.jsonl] [--duration SECS] [--connections N]
#                    [--postgres postgres://USER@HOST:PORT]
#
# --postgres keeps the pages (and budgets) in the databases `demo` and `big` of that
# PostgreSQL server instead of SQLite files (scripts/bench-postgres.sh starts one
# and runs this script twice, SQLite first, then PostgreSQL).
#
# Workloads (each `wrk -t2 -cN -dD`, two rounds):
#   hit    one fixed query, every answer a cache hit        vs the bare handler
#          serving the very page the hit returns (same bytes); each wrk thread is
#          one client (X-Forwarded-For from scripts/wrk-clients.lua, fresh clients
#          each round), so no run fills a minute window (1,000,000 at most)
#   429    one client whose minute window is full           vs the same bare handler
#   busy   distinct misses from N connections, one client each, 1 scorer slot,
#          over --corpus (100k titles recommended): the 503's p50/p99 (from
#          examples/loadgen, which splits latency by outcome)
#   writes 20 API updates a second of existing pages while 4 clients search:
#          search p50/p99 for hits and misses (examples/loadgen --write-rate)
# Prints req/s and latency per workload and the ratios to the bare handler.
#
# The servers run at the log level a user runs, `info` (one line per search, into a
# file), unless RUST_LOG says otherwise (e.g. RUST_LOG=warn to see what the log
# costs).
set -euo pipefail
cd "$(dirname "$0")/.."

corpus=""
postgres=""
duration=10
connections=32
while [ $# -gt 0 ]; do
  case "$1" in
    --corpus) corpus="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    --postgres) postgres="$2"; shift 2 ;;
    -h|--help) sed -n 2,28p "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
log_level=${RUST_LOG:-info}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
bin=target/release/agent-pages
bare=target/release/examples/bare
loadgen=target/release/examples/loadgen
for f in "$bin" "$bare" "$loadgen"; do
  [ -x "$f" ] || { echo "$f is missing: cargo build --release --bins --examples" >&2; exit 1; }
done

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

# start NAME CMD...: runs CMD in the background, waits for its `listening on` line,
# and sets $url.
start() {
  local name=$1; shift
  "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 600); do
    url=$(grep -o 'listening on http://[0-9.:]*' "$work/$name.log" | head -1 | sed 's/listening on //') || true
    [ -n "$url" ] && return 0
    sleep 0.1
  done
  echo "$name did not start:" >&2; cat "$work/$name.log" >&2; exit 1
}

stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; pids=(); }

# wrk_rps URL [wrk options] [-- script args]: prints "req/s p50 p99 non2xx"
# (latency in ms; non2xx counts answers that were not 2xx/3xx).
wrk_rps() {
  local target=$1; shift
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
  wrk -t2 -c"$connections" -d"${duration}s" --latency "${opts[@]}" "$target" "$@" >"$work/wrk.out" 2>&1
  local rps p50 p99 non
  rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.out")
  p50=$(awk '$1=="50%" {print $2}' "$work/wrk.out")
  p99=$(awk '$1=="99%" {print $2}' "$work/wrk.out")
  non=$(awk '/Non-2xx/ {print $NF}' "$work/wrk.out")
  echo "$rps $p50 $p99 ${non:-0}"
}

# where the pages are: SQLite files in $work, or databases on --postgres
if [ -n "$postgres" ]; then
  db_demo=(AGENT_PAGES_DATABASE_URL="$postgres/demo" AGENT_PAGES_DATABASE="$work/unused.sqlite3")
  db_big=(AGENT_PAGES_DATABASE_URL="$postgres/big" AGENT_PAGES_DATABASE="$work/unused.sqlite3")
  echo "# pages and budgets in PostgreSQL at $postgres"
else
  db_demo=(AGENT_PAGES_DATABASE="$work/demo.sqlite3")
  db_big=(AGENT_PAGES_DATABASE="$work/big.sqlite3")
fi
echo "# preparing the demo database"
env "${db_demo[@]}" "$bin" migrate >/dev/null 2>&1
start demo env "${db_demo[@]}" AGENT_PAGES_BIND=127.0.0.1:0 "$bin" serve --demo
stop_all

query="kubernetes"
echo "# hit: one query, cache hits"
start hit env "${db_demo[@]}" AGENT_PAGES_BIND=127.0.0.1:0 RUST_LOG="$log_level" \
  TRUSTED_PROXY_CIDRS=127.0.0.1 SEARCH_RATE_PER_MINUTE=1000000 SEARCH_RATE_PER_HOUR=100000000 \
  "$bin" serve
curl -s "$url/search?q=$query" -o "$work/hit.html"
hit_url=$url
start bare "$bare" --body "$work/hit.html"
bare_url=$url
printf '%-8s %-10s %12s %9s %9s\n' workload server req/s p50 p99
for round in 1 2; do
  clients=(-s scripts/wrk-clients.lua)
  read -r b_rps b50 b99 _ < <(wrk_rps "$bare_url/search?q=$query" "${clients[@]}" -- "$round")
  read -r h_rps h50 h99 h_non < <(wrk_rps "$hit_url/search?q=$query" "${clients[@]}" -- "$round")
  [ "$h_non" = 0 ] || echo "warning: $h_non hit answers were not 200: the ratio is not of hits" >&2
  printf '%-8s %-10s %12s %9s %9s\n' hit bare "$b_rps" "$b50" "$b99" hit agent-pages "$h_rps" "$h50" "$h99"
  echo "hit ratio (round $round): $(awk -v a="$h_rps" -v b="$b_rps" 'BEGIN{printf "%.2f", a/b}')"
done
stop_all

echo "# 429: one client over its minute budget"
start refused env "${db_demo[@]}" AGENT_PAGES_BIND=127.0.0.1:0 RUST_LOG="$log_level" \
  SEARCH_RATE_PER_MINUTE=1 SEARCH_RATE_PER_HOUR=1 "$bin" serve
curl -s "$url/search?q=$query" -o /dev/null
curl -s "$url/search?q=$query" -o "$work/refused.html"
refused_url=$url
start bare429 "$bare" --body "$work/refused.html"
bare_url=$url
for round in 1 2; do
  read -r b_rps b50 b99 _ < <(wrk_rps "$bare_url/search?q=$query")
  read -r r_rps r50 r99 _ < <(wrk_rps "$refused_url/search?q=$query")
  printf '%-8s %-10s %12s %9s %9s\n' 429 bare "$b_rps" "$b50" "$b99" 429 agent-pages "$r_rps" "$r50" "$r99"
  echo "429 ratio (round $round): $(awk -v a="$r_rps" -v b="$b_rps" 'BEGIN{printf "%.2f", a/b}')"
done
stop_all

if [ -n "$corpus" ]; then
  echo "# importing $corpus for the busy and writes workloads"
  env "${db_big[@]}" "$bin" import "$corpus" >/dev/null 2>&1 || true
  echo "# busy: $connections connections of distinct misses, 1 scorer slot"
  start busy env "${db_big[@]}" AGENT_PAGES_BIND=127.0.0.1:0 RUST_LOG="$log_level" \
    SEARCH_CONCURRENCY=1 SEARCH_MAX_IN_FLIGHT=1024 TRUSTED_PROXY_CIDRS=127.0.0.1 \
    SEARCH_RATE_PER_MINUTE=1000000 SEARCH_RATE_PER_HOUR=100000000 "$bin" serve
  for round in 1 2; do
    "$loadgen" --url "$url" --mode distinct --concurrency "$connections" --requests 100000 \
      --clients "$connections" --query "round$round"
  done
  stop_all
  echo "# writes: 20 updates/s while 4 clients search (hits and misses)"
  start writes env "${db_big[@]}" AGENT_PAGES_BIND=127.0.0.1:0 RUST_LOG="$log_level" \
    TRUSTED_PROXY_CIDRS=127.0.0.1 PUBLISH_RATE_PER_MINUTE=1000000 PUBLISH_RATE_PER_HOUR=100000000 \
    SEARCH_RATE_PER_MINUTE=1000000 SEARCH_RATE_PER_HOUR=100000000 "$bin" serve
  "$loadgen" --url "$url" --mode mixed --concurrency 4 --requests 40000 --clients 4 \
    --write-rate 20
  stop_all
fi
