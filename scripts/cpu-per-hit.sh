#!/usr/bin/env bash
# Server CPU per cache hit, per thread (issue 22): starts `serve` on the demo corpus,
# drives one fixed query with `wrk -t2 -c32` (one client per wrk thread, as in
# scripts/bench.sh), and divides each thread's utime + stime over the run
# (/proc/PID/task/*/stat) by the requests answered. CPU per request varies much less
# between runs than req/s on a shared machine; alternate builds or log levels in one
# batch to compare them. Needs wrk and a release build. Never run in CI.
#
#   scripts/cpu-per-hit.sh [--bin target/release/agent-pages] [--duration 8]
#                          [--runs 3] [LEVEL ...]       (default levels: info warn)
#
# Prints one line per run and level: total µs a hit, then per thread (threads named
# alike are summed: the HTTP workers and the RateLimiter share a name, so the second
# line of a level splits them by thread id).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=target/release/agent-pages
duration=8
runs=3
levels=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    *) levels+=("$1"); shift ;;
  esac
done
[ "${#levels[@]}" -gt 0 ] || levels=(info warn)
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
[ -x "$bin" ] || { echo "$bin is missing: cargo build --release --bins" >&2; exit 1; }

work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
db="$work/demo.sqlite3"
AGENT_PAGES_DATABASE="$db" "$bin" migrate >/dev/null 2>&1
# Load the demo corpus once.
AGENT_PAGES_DATABASE="$db" AGENT_PAGES_BIND=127.0.0.1:0 RUST_LOG=warn "$bin" serve --demo \
  >"$work/demo.log" 2>&1 &
pid=$!
until grep -q "listening on" "$work/demo.log"; do sleep 0.1; done
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""

# per_thread PID: "name-tid ticks" for every thread.
per_thread() {
  for t in /proc/"$1"/task/*; do
    echo "$(tr ' ' '_' <"$t/comm")-${t##*/} $(awk '{print $14 + $15}' "$t/stat")"
  done | sort
}
hz=$(getconf CLK_TCK)
round=0
for run in $(seq 1 "$runs"); do
  for level in "${levels[@]}"; do
    round=$((round + 1))
    AGENT_PAGES_DATABASE="$db" AGENT_PAGES_BIND=127.0.0.1:0 RUST_LOG="$level" \
      TRUSTED_PROXY_CIDRS=127.0.0.1 SEARCH_RATE_PER_MINUTE=1000000 \
      SEARCH_RATE_PER_HOUR=100000000 "$bin" serve >"$work/serve.log" 2>"$work/serve.err" &
    pid=$!
    until url=$(grep -o 'listening on http://[0-9.:]*' "$work/serve.log" | sed 's/listening on //'); do
      sleep 0.05
    done
    curl -s -o /dev/null "$url/search?q=kubernetes"
    per_thread "$pid" >"$work/t0"
    wrk -t2 -c32 -d"${duration}s" -s scripts/wrk-clients.lua "$url/search?q=kubernetes" \
      -- "$round" >"$work/wrk.out"
    per_thread "$pid" >"$work/t1"
    requests=$(awk '/requests in/ {print $1}' "$work/wrk.out")
    rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.out")
    join "$work/t0" "$work/t1" | awk -v n="$requests" -v hz="$hz" -v level="$level" \
      -v run="$run" -v rps="$rps" '
      { us = ($3 - $2) * 1e6 / hz / n; total += us; name = $1; sub(/-[0-9]+$/, "", name)
        by[name] += us; if (us >= 0.05) split_line = split_line sprintf(" %s %.1f", $1, us) }
      END {
        printf "run %d %-6s %9s req/s  %.1f µs a hit:", run, level, rps, total
        for (k in by) if (by[k] >= 0.05) printf " %s %.1f", k, by[k]; print ""
        print "      by thread:" split_line }'
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  done
done
