#!/usr/bin/env bash
# The result cache under a stream of creates (issue 35's goals): popular queries
# searched by a few visitors while real titles are published, then every answer
# compared with a cold server's on the same database. Needs a release build
# (cargo build --release --bin agent-pages --example loadgen), curl and jq. Never
# run in CI.
#
#   scripts/bench-carry.sh CORPUS.jsonl TITLES.jsonl [--secs 30] [--write-rate 20]
#       [--visitors 4] [--target DIR]
#
# CORPUS is imported into a fresh SQLite file (the issue: 100,000 npm titles);
# TITLES (JSON Lines with `title`, the issue: the Debian titles) are what the
# stream publishes, in order; the queries are scripts/popular-queries.txt (40
# two-word queries). --target is the cargo target folder holding release/ (to
# measure another checkout's build: main's, say).
#
# Steps, on one database and one server (defaults otherwise, budgets that never
# refuse, TRUSTED_PROXY_CIDRS=127.0.0.1):
#   warm     each query searched once (misses)
#   alone    examples/loadgen --mode cycle, VISITORS clients, --secs s, no writes:
#            the hit p99 without writes
#   stream   the same while WRITE_RATE pages a second are created with TITLES:
#            hit/miss/503 shares and p99s
#   after    each query's JSON answer (results and total) from the server, then
#            from a cold server started on the same database: how many are equal
set -euo pipefail
cd "$(dirname "$0")/.."

corpus="" titles="" secs=30 write_rate=20 visitors=4 target=target
while [ $# -gt 0 ]; do
  case "$1" in
    --secs) secs="$2"; shift 2 ;;
    --write-rate) write_rate="$2"; shift 2 ;;
    --visitors) visitors="$2"; shift 2 ;;
    --target) target="$2"; shift 2 ;;
    -h|--help) sed -n 2,27p "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) if [ -z "$corpus" ]; then corpus="$1"; else titles="$1"; fi; shift ;;
  esac
done
[ -n "$corpus" ] && [ -n "$titles" ] || { sed -n 7,9p "$0" >&2; exit 2; }
bin="$target/release/agent-pages"
loadgen="$target/release/examples/loadgen"
for f in "$bin" "$loadgen"; do
  [ -x "$f" ] || { echo "$f is missing: cargo build --release --bin agent-pages --example loadgen" >&2; exit 1; }
done
queries=scripts/popular-queries.txt

work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

db="$work/carry.sqlite3"
env AGENT_PAGES_DATABASE="$db" "$bin" import "$corpus" >"$work/import.out" 2>"$work/import.err"

# serve and stop (scripts/lib.sh): one server at a time, its pid and url.
. scripts/lib.sh
# answers DIR: each query's results and total, as JSON, one file a query.
answers() {
  mkdir -p "$1"; local n=0
  while read -r q; do
    curl -s -G --data-urlencode "q=$q" -H 'Accept: application/json' \
      -H 'X-Forwarded-For: 10.9.9.9' "$url/search" | jq -S '{results, total}' >"$1/$n.json"
    n=$((n + 1))
  done <"$queries"
}

serve "$db"
answers "$work/warm" >/dev/null
"$loadgen" --url "$url" --mode cycle --queries "$queries" --concurrency "$visitors" \
  --clients "$visitors" --duration "$secs" >"$work/alone"
"$loadgen" --url "$url" --mode cycle --queries "$queries" --concurrency "$visitors" \
  --clients "$visitors" --duration "$secs" --write-rate "$write_rate" --writes create \
  --titles "$titles" >"$work/stream"
answers "$work/hot"
stop
serve "$db"
answers "$work/cold"
stop
equal=0
for f in "$work"/cold/*.json; do
  cmp -s "$f" "$work/hot/$(basename "$f")" && equal=$((equal + 1))
done

col() { awk -v c="$1" -v k="$2" '$1 == c {print $k}' "$3"; }
# share CLASS FILE: CLASS's count in per cent of the searches (writes left out).
share() {
  awk -v c="$1" 'NR > 2 && $1 !~ /^write-/ && $1 != "all-searches" { n += $2; if ($1 == c) k = $2 }
    END { printf "%.1f", n ? 100 * k / n : 0 }' "$2"
}
printf '\n## %s, %s creates/s of %s, %s visitors, %s s (commit %s, %s)\n\n' \
  "$(grep -o '[0-9]* new' "$work/import.out" | head -1) pages" "$write_rate" "$(basename "$titles")" \
  "$visitors" "$secs" "$(git rev-parse --short HEAD 2>/dev/null || echo ?)" "$(date -u +%Y-%m-%dT%H:%MZ)"
echo "| measure | without writes | during the stream |"
echo "|---|---|---|"
echo "| answers from the cache (200-hit share of searches) | $(share 200-hit "$work/alone")% | $(share 200-hit "$work/stream")% |"
echo "| 503 search-busy | $(share 503-busy "$work/alone")% | $(share 503-busy "$work/stream")% |"
echo "| hit p99 | $(col 200-hit 6 "$work/alone") ms | $(col 200-hit 6 "$work/stream") ms |"
echo "| miss p99 | $(col 200-miss 6 "$work/alone") ms | $(col 200-miss 6 "$work/stream") ms |"
echo "| search p99, every outcome | $(col all-searches 6 "$work/alone") ms | $(col all-searches 6 "$work/stream") ms |"
echo "| answers after the stream equal to a cold server's | | $equal/$(wc -l <"$queries") |"
echo
echo "(shares are of the searches; the creates are not counted in them)"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)  (2 cores; other processes share them)"
echo
echo "loadgen, without writes:"; sed 's/^/    /' "$work/alone"
echo "loadgen, during the stream:"; sed 's/^/    /' "$work/stream"
