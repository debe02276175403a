#!/usr/bin/env bash
# Page history under an update storm (issue 32's done-when): one page updated
# WRITE_RATE times a second (about 1 KiB of body each) while a few visitors
# repeat popular queries, run twice on the same corpus: with the history kept
# (PAGE_HISTORY_VERSIONS=100, the default) and without it (=1: only the current
# version is kept, the nearest the server comes to no history). Prints search
# p99 in both runs, the versions kept after each and the page's history size.
# Needs a release build (cargo build --release --bin agent-pages --example
# loadgen), curl, jq and sqlite3. Never run in CI.
#
#   scripts/bench-history.sh CORPUS.jsonl [--secs 60] [--write-rate 20]
#       [--visitors 4] [--target DIR]
#
# CORPUS is imported into a fresh SQLite file for each run (100,000 npm titles,
# say); the queries are scripts/popular-queries.txt. Budgets never refuse;
# TRUSTED_PROXY_CIDRS=127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."

corpus="" secs=60 write_rate=20 visitors=4 target=target
while [ $# -gt 0 ]; do
  case "$1" in
    --secs) secs="$2"; shift 2 ;;
    --write-rate) write_rate="$2"; shift 2 ;;
    --visitors) visitors="$2"; shift 2 ;;
    --target) target="$2"; shift 2 ;;
    -h|--help) sed -n 2,16p "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) corpus="$1"; shift ;;
  esac
done
[ -n "$corpus" ] || { sed -n 11,12p "$0" >&2; exit 2; }
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

# serve and stop (scripts/lib.sh): one server at a time, its pid and url.
. scripts/lib.sh

# storm VERSIONS NAME: one run; its loadgen table in $work/NAME, its versions
# kept in $work/NAME.kept, the page's history rows and their bytes in $work/NAME.bytes.
storm() {
  local db="$work/$2.sqlite3"
  env AGENT_PAGES_DATABASE="$db" "$bin" import "$corpus" >/dev/null 2>"$work/import.err"
  serve "$db" PAGE_HISTORY_VERSIONS="$1"
  while read -r q; do
    curl -s -o /dev/null -G --data-urlencode "q=$q" -H 'X-Forwarded-For: 10.9.9.9' "$url/search"
  done <"$queries"
  "$loadgen" --url "$url" --mode cycle --queries "$queries" --concurrency "$visitors" \
    --clients "$visitors" --duration "$secs" --write-rate "$write_rate" --writes update \
    --update-pages 1 >"$work/$2"
  curl -s "$url/api/pages/loadgen-page-0-written-under-load/versions?per_page=1" \
    | jq -r .total >"$work/$2.kept"
  stop
  sqlite3 "$db" "SELECT COUNT(*) || ' versions, ' || COALESCE(SUM(LENGTH(CAST(title AS BLOB)) + LENGTH(CAST(body AS BLOB))), 0) || ' bytes of title and body' FROM page_versions WHERE page_id = (SELECT id FROM pages WHERE slug = 'loadgen-page-0-written-under-load')" \
    >"$work/$2.bytes" 2>/dev/null || echo "?" >"$work/$2.bytes"
}

storm 100 with
storm 1 without

col() { awk -v c="$1" -v k="$2" '$1 == c {print $k}' "$3"; }
printf '\n## update storm: %s updates/s on one page for %s s, %s visitors, %s (commit %s, %s)\n\n' \
  "$write_rate" "$secs" "$visitors" "$(basename "$corpus")" \
  "$(git rev-parse --short HEAD 2>/dev/null || echo ?)" "$(date -u +%Y-%m-%dT%H:%MZ)"
echo "| measure | history kept (100 versions) | without history (1 version) |"
echo "|---|---|---|"
echo "| search p99, every outcome | $(col all-searches 6 "$work/with") ms | $(col all-searches 6 "$work/without") ms |"
echo "| hit p99 | $(col 200-hit 6 "$work/with") ms | $(col 200-hit 6 "$work/without") ms |"
echo "| update p99 (write-200) | $(col write-200 6 "$work/with") ms | $(col write-200 6 "$work/without") ms |"
echo "| updates answered 200 | $(col write-200 2 "$work/with") | $(col write-200 2 "$work/without") |"
echo "| versions kept after | $(cat "$work/with.kept") | $(cat "$work/without.kept") |"
echo "| the page's history rows | $(cat "$work/with.bytes") | $(cat "$work/without.bytes") |"
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)  (2 cores; other processes share them)"
echo
echo "loadgen, history kept:"; sed 's/^/    /' "$work/with"
echo "loadgen, without history:"; sed 's/^/    /' "$work/without"
