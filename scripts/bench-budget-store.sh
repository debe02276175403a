#!/usr/bin/env bash
# The budget store, SQLite next to Redis in one run, on loopback only:
#   - cache-hit throughput (budgets so large nothing is refused),
#   - 429 throughput (a budget of 1 a minute and 1 an hour, spent by the first request),
#   - with the store gone: the 503 budget-unavailable latency with Redis stopped
#     (connections refused) and frozen (SIGSTOP: the call deadline decides).
# Each run starts `agent-pages serve --demo` on its own copy of one demo database and a
# redis-server of its own (no persistence), and stops both afterwards.
#
#   scripts/bench-budget-store.sh [target/release/agent-pages] [seconds per wrk run]
#
# Needs wrk, curl and redis-server (Debian packages of those names).
set -euo pipefail

bin="${1:-target/release/agent-pages}"
seconds="${2:-10}"
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    kill -CONT "$pid" 2>/dev/null || true
    kill "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_port() {
  for _ in $(seq 1 600); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on $1" >&2
  exit 1
}

start_redis() {
  redis_port="$(free_port)"
  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$work" >"$work/redis-$redis_port.log" 2>&1 &
  redis_pid=$!
  pids+=("$redis_pid")
  wait_port "$redis_port"
}

# start_app NAME MINUTE HOUR [REDIS_URL]: sets app_url and app_pid.
start_app() {
  local name="$1" minute="$2" hour="$3" redis_url="${4:-}"
  for suffix in "" -wal -shm; do
    [ -f "$work/demo.sqlite3$suffix" ] && cp "$work/demo.sqlite3$suffix" "$work/$name.sqlite3$suffix"
  done
  AGENT_PAGES_BIND=127.0.0.1:0 AGENT_PAGES_DATABASE="$work/$name.sqlite3" \
    SEARCH_RATE_PER_MINUTE="$minute" SEARCH_RATE_PER_HOUR="$hour" \
    AGENT_PAGES_REDIS_URL="$redis_url" RUST_LOG=warn \
    "$bin" serve >"$work/$name.out" 2>"$work/$name.err" &
  app_pid=$!
  pids+=("$app_pid")
  for _ in $(seq 1 600); do
    app_url="$(grep -o 'http://[0-9.:]*' "$work/$name.out" 2>/dev/null | head -n1 || true)"
    [ -n "$app_url" ] && return 0
    sleep 0.1
  done
  echo "$name never printed its address" >&2
  cat "$work/$name.err" >&2
  exit 1
}

stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# run_wrk LABEL URL: wrk's summary, one line.
run_wrk() {
  local out
  curl -s -o /dev/null "$2/search?q=kubernetes" # fills the cache (or spends the budget)
  out="$(wrk -t2 -c32 -d"${seconds}s" --latency "$2/search?q=kubernetes" 2>&1)"
  printf '%-28s %12s req/s   p50 %-9s p99 %-9s non-2xx %s\n' "$1" \
    "$(awk '/Requests\/sec/ {print $2}' <<<"$out")" \
    "$(awk '$1 == "50%" {print $2}' <<<"$out")" \
    "$(awk '$1 == "99%" {print $2}' <<<"$out")" \
    "$(awk '/Non-2xx/ {print $5}' <<<"$out")"
}

# statuses URL: the status split of 10 sequential searches.
statuses() {
  for _ in $(seq 1 10); do curl -s -o /dev/null -w '%{http_code}\n' "$1/search?q=kubernetes"; done |
    sort | uniq -c | tr '\n' ' '
}

# latency LABEL URL: min/median/max of 50 sequential searches, with their statuses.
latency() {
  local times
  times="$(for _ in $(seq 1 50); do
    curl -s -o /dev/null -w '%{time_total} %{http_code}\n' "$2/search?q=kubernetes"
  done)"
  printf '%-28s min %s s   median %s s   max %s s   statuses: %s\n' "$1" \
    "$(sort -n <<<"$times" | head -n1 | cut -d' ' -f1)" \
    "$(sort -n <<<"$times" | sed -n 25p | cut -d' ' -f1)" \
    "$(sort -n <<<"$times" | tail -n1 | cut -d' ' -f1)" \
    "$(cut -d' ' -f2 <<<"$times" | sort | uniq -c | tr '\n' ' ')"
}

echo "building the demo database once"
AGENT_PAGES_BIND=127.0.0.1:0 AGENT_PAGES_DATABASE="$work/seed.sqlite3" RUST_LOG=warn \
  "$bin" serve --demo >"$work/seed.out" 2>&1 &
seed_pid=$!
pids+=("$seed_pid")
for _ in $(seq 1 3000); do grep -q 'listening on' "$work/seed.out" && break; sleep 0.1; done
stop "$seed_pid"
for suffix in "" -wal -shm; do
  [ -f "$work/seed.sqlite3$suffix" ] && cp "$work/seed.sqlite3$suffix" "$work/demo.sqlite3$suffix"
done

echo "wrk -t2 -c32 -d${seconds}s, one client (127.0.0.1), GET /search?q=kubernetes"
for store in sqlite redis; do
  url=""
  if [ "$store" = redis ]; then start_redis; url="redis://127.0.0.1:$redis_port/0"; fi
  start_app "hits-$store" 1000000 100000000 "$url"
  run_wrk "$store: cache hits (200)" "$app_url"
  stop "$app_pid"
  start_app "refused-$store" 1 1 "$url"
  run_wrk "$store: refused (429)" "$app_url"
  stop "$app_pid"
  if [ "$store" = redis ]; then stop "$redis_pid"; fi
done

echo "Redis gone under a running app (AGENT_PAGES_REDIS_TIMEOUT_MS=50, the default)"
start_redis
start_app outage 1000000 100000000 "redis://127.0.0.1:$redis_port/0"
latency "redis up (200)" "$app_url"
kill -STOP "$redis_pid"
latency "redis frozen (SIGSTOP)" "$app_url"
kill -CONT "$redis_pid"
stop "$redis_pid"
latency "redis stopped" "$app_url"
run_wrk "redis stopped (503)" "$app_url"
echo "after: $(statuses "$app_url")(redis still stopped)"
