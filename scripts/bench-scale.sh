#!/usr/bin/env bash
# A large corpus end to end (issue 22): import, start-up, memory, the first search,
# miss scoring time, a write then a search, and searching under a write stream,
# printed as one table. Needs a release build (cargo build --release --bins
# --examples), curl and jq. Never run in CI.
#
#   scripts/bench-scale.sh CORPUS.jsonl[.gz] [--stream-secs 10] [--write-rate 20]
#
# Every server runs with the defaults a user gets (log level `info`, 2 scorer
# slots, cache of 256) except budgets high enough never to refuse, and
# TRUSTED_PROXY_CIDRS=127.0.0.1 for the load generator's client addresses.
#
# Steps, in order, on one fresh database:
#   import   `agent-pages import FILE` into a new SQLite file: wall time and peak RSS
#            (GNU time), and µs per page
#   start    `serve` launched → its `listening on` line (polled every 10 ms)
#   ready    VmRSS right after `listening on`
#   first    the first search after `listening on` (a miss), then 99 more distinct
#            misses: the hundredth, and the median of the 99
#   miss     40 more distinct 2–3 word queries, one at a time: server scoring time
#            from the `agent_pages_search_scoring_seconds` histogram (/metrics,
#            the difference of two scrapes, interpolated in its buckets as
#            Prometheus' histogram_quantile does), and as curl saw them
#   nonword  40 misses of the shape "two common title words and a token that is
#            no word" (`web json z12q`): the pairs from the corpus's 100 most
#            common title words (3+ letters), the token z<10..49>q; timed alike
#   write    20 rounds of "a search of a new query" and 20 of "create a page
#            (no PIN), then a search of a new query", alternating: the search's
#            time as curl saw it, p50 and max of each, and the difference
#   stream   examples/loadgen --mode mixed, 2 clients (3 of 4 requests one fixed
#            query, a hit; the 4th a new one, a miss) for --stream-secs while
#            --write-rate pages a second are created: search and write latency
#   after    VmRSS after the stream, and its ratio to `ready`; the search cache's
#            bytes then (agent_pages_search_cache_bytes)
#
# Queries are made from the corpus itself (2 or 3 consecutive words of sampled
# titles, every second one with two letters swapped), so runs over different
# corpora use queries made the same way; every query is used once (a miss).
set -euo pipefail
cd "$(dirname "$0")/.."

corpus=""
stream_secs=10
write_rate=20
while [ $# -gt 0 ]; do
  case "$1" in
    --stream-secs) stream_secs="$2"; shift 2 ;;
    --write-rate) write_rate="$2"; shift 2 ;;
    -h|--help) sed -n 2,37p "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) corpus="$1"; shift ;;
  esac
done
[ -n "$corpus" ] || { sed -n 2,8p "$0" >&2; exit 2; }
[ -r "$corpus" ] || { echo "cannot read $corpus" >&2; exit 1; }
for tool in curl jq /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "$tool is missing" >&2; exit 1; }
done
bin=target/release/agent-pages
loadgen=target/release/examples/loadgen
for f in "$bin" "$loadgen"; do
  [ -x "$f" ] || { echo "$f is missing: cargo build --release --bins --examples" >&2; exit 1; }
done

work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
# serve and stop (scripts/lib.sh): one server at a time, its pid and url.
. scripts/lib.sh
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
ms() { awk -v s="$1" 'BEGIN{printf "%.1f", s*1000}'; }
# pct P: the P-th percentile (nearest rank) of the numbers on stdin.
pct() { sort -g | awk -v p="$1" '{v[NR]=$1} END{i=int(NR*p/100+0.999999); if(i<1)i=1; if(i>NR)i=NR; print v[i]}'; }
rss_mb() { awk '/^VmRSS/ {printf "%.0f", $2/1024}' "/proc/$1/status"; }

# --- the corpus, and queries made from it -----------------------------------
jsonl="$work/corpus.jsonl"
case "$corpus" in
  *.gz) zcat "$corpus" >"$jsonl" ;;
  *) cp "$corpus" "$jsonl" ;;
esac
lines=$(wc -l <"$jsonl")
step=$(( lines / 6000 )); [ "$step" -ge 1 ] || step=1
awk -v s="$step" 'NR % s == 0' "$jsonl" | jq -r '.title' | awk '
  {
    t = tolower($0); gsub(/[^a-z]+/, " ", t); n = split(t, w, " "); k = 0
    for (i = 1; i <= n; i++) if (length(w[i]) >= 3) v[++k] = w[i]
    if (k < 2) next
    m = (NR % 2 == 0 && k >= 3) ? 3 : 2
    q = v[1]; long = 1
    for (i = 2; i <= m; i++) { q = q " " v[i]; if (length(v[i]) > length(v[long])) long = i }
    print q
    if (length(v[long]) >= 5) {           # the same words, two letters swapped
      x = v[long]; x = substr(x, 1, 1) substr(x, 3, 1) substr(x, 2, 1) substr(x, 4)
      q = ""; for (i = 1; i <= m; i++) q = q (i > 1 ? " " : "") (i == long ? x : v[i])
      print q
    }
  }' | awk '!seen[$0]++' >"$work/queries"
nq=$(wc -l <"$work/queries")
[ "$nq" -ge 400 ] || { echo "only $nq queries could be made from $corpus" >&2; exit 1; }
next_q=1
take() { sed -n "${next_q},$((next_q + $1 - 1))p" "$work/queries"; next_q=$((next_q + $1)); }

echo "# corpus $corpus: $lines lines; $nq queries made from it"

# --- import -----------------------------------------------------------------
db="$work/scale.sqlite3"
/usr/bin/time -f '%e %M' -o "$work/import.time" \
  env AGENT_PAGES_DATABASE="$db" "$bin" import "$jsonl" >"$work/import.out" 2>"$work/import.err"
read -r import_s import_kb <"$work/import.time"
echo "# $(cat "$work/import.out")"
pages=$(grep -o '[0-9]* new' "$work/import.out" | grep -o '[0-9]*')

# --- start ------------------------------------------------------------------
started=$(now_ms)
serve "$db" AGENT_PAGES_METRICS_BIND=127.0.0.1:0
ready=$(now_ms)
start_ms=$((ready - started))
rss_ready=$(rss_mb "$pid")
metrics=$(grep -o 'metrics on http://[0-9.:]*' "$work/serve.err" | head -1 | sed 's/metrics on //')

# search Q: prints curl's total time in seconds (a new connection each time).
search() {
  curl -s -o /dev/null -w '%{time_total}\n' -G --data-urlencode "q=$1" "$url/search"
}

# --- first search, and the hundredth ------------------------------------------
take 100 >"$work/q100"
first=$(search "$(head -1 "$work/q100")")
tail -n +2 "$work/q100" | while read -r q; do search "$q"; done >"$work/t99"
hundredth=$(tail -1 "$work/t99")
median99=$(pct 50 <"$work/t99")

# --- miss scoring time from the histogram -------------------------------------
scrape() {
  curl -s "$metrics/metrics" | awk '
    /^agent_pages_search_scoring_seconds_bucket/ {
      match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5); print le, $NF }'
}
scrape >"$work/h0"
take 40 | grep -E '^[^ ]+ [^ ]+( [^ ]+)?$' | while read -r q; do search "$q"; done >"$work/t40"
scrape >"$work/h1"
# `join` needs both files in the same (lexical) order.
sort -o "$work/h0" "$work/h0"; sort -o "$work/h1" "$work/h1"
# histogram_quantile over the difference of the two scrapes (numeric order,
# +Inf last).
hq_sorted() {
  join "$work/h0" "$work/h1" | sort -g | awk '$1 != "+Inf"' >"$work/hj"
  join "$work/h0" "$work/h1" | awk '$1 == "+Inf"' >>"$work/hj"
  awk -v q="$1" '
    { le[NR] = $1; c[NR] = $3 - $2 } END {
      total = c[NR]; rank = q * total; prev = 0; lo = 0
      for (i = 1; i <= NR; i++) {
        if (c[i] >= rank) {
          if (le[i] == "+Inf") { printf ">%.0f", lo * 1000; exit }
          inb = c[i] - prev; f = inb > 0 ? (rank - prev) / inb : 1
          printf "%.1f", (lo + (le[i] - lo) * f) * 1000; exit
        }
        prev = c[i]; lo = le[i]
      }
    }' "$work/hj"
}
miss_p50=$(hq_sorted 0.5)
miss_p99=$(hq_sorted 0.99)
misses=$(awk '$1 == "+Inf" {print $3 - $2}' "$work/hj")
client_p50=$(pct 50 <"$work/t40"); client_p99=$(pct 99 <"$work/t40")

# --- misses of common words and a non-word ------------------------------------------
awk -v s="$step" 'NR % s == 0' "$jsonl" | jq -r '.title' | tr 'A-Z' 'a-z' | tr -cs 'a-z' '\n' \
  | awk 'length($0) >= 3' | sort | uniq -c | sort -k1,1nr -k2 | awk 'NR <= 100' | awk '{print $2}' >"$work/common"
awk '{w[NR-1] = $1} END {for (i = 0; i < 40; i++) printf "%s %s z%dq\n", w[i % NR], w[(7 * i + 3) % NR], 10 + i}' \
  "$work/common" | awk '$1 != $2' >"$work/qn"
mv "$work/h1" "$work/h0"
while read -r q; do search "$q"; done <"$work/qn" >"$work/tn"
scrape >"$work/h1"
sort -o "$work/h0" "$work/h0"; sort -o "$work/h1" "$work/h1"
nonword_p50=$(hq_sorted 0.5)
nonword_p99=$(hq_sorted 0.99)
nonwords=$(awk '$1 == "+Inf" {print $3 - $2}' "$work/hj")
nonword_client_p99=$(pct 99 <"$work/tn")

# --- a write, then a search -------------------------------------------------------
take 40 >"$work/qw"
: >"$work/alone"; : >"$work/after"
n=0
while read -r q; do
  if [ $((n % 2)) = 0 ]; then
    search "$q" >>"$work/alone"
  else
    curl -s -o /dev/null -X POST "$url/api/pages" -H 'Content-Type: application/json' \
      -d "{\"title\": \"Scale probe page $n written before a search\"}"
    search "$q" >>"$work/after"
  fi
  n=$((n + 1))
done <"$work/qw"
alone_p50=$(pct 50 <"$work/alone"); alone_max=$(pct 100 <"$work/alone")
after_p50=$(pct 50 <"$work/after"); after_max=$(pct 100 <"$work/after")

# --- searching under a stream of creates ----------------------------------------
fixed=$(take 1)
search "$fixed" >/dev/null   # the fixed query is a hit from here on
take 100000 >"$work/qs" || true
"$loadgen" --url "$url" --mode mixed --concurrency 2 --clients 2 --duration "$stream_secs" \
  --write-rate "$write_rate" --writes create --query "$fixed" --queries "$work/qs" >"$work/stream"
rss_after=$(rss_mb "$pid")
# What the bounded search cache holds then (SEARCH_CACHE_MAX_BYTES caps it), to
# tell its share of the growth from the snapshot's.
cache_mb=$(curl -s "$metrics/metrics" | awk '/^agent_pages_search_cache_bytes / {printf "%.0f", $2/1048576}')
col() { awk -v c="$1" -v k="$2" '$1 == c {print $k}' "$work/stream"; }

stop

# --- the table --------------------------------------------------------------------
per_page=$(awk -v s="$import_s" -v n="$pages" 'BEGIN{printf "%.1f", n ? s*1e6/n : 0}')
printf '\n## %s: %s pages (commit %s, %s)\n\n' "$(basename "$corpus")" "$pages" \
  "$(git rev-parse --short HEAD 2>/dev/null || echo ?)" "$(date -u +%Y-%m-%dT%H:%MZ)"
echo "| measure | value |"
echo "|---|---|"
echo "| import (fresh database) | ${import_s} s ($per_page µs a page), peak RSS $((import_kb / 1024)) MB |"
echo "| \`serve\` to \`listening on\` | $(awk -v m="$start_ms" 'BEGIN{printf "%.2f", m/1000}') s |"
echo "| RSS once ready | $rss_ready MB |"
echo "| RSS after ${stream_secs} s of ${write_rate} creates/s | $rss_after MB ($(awk -v a="$rss_after" -v r="$rss_ready" 'BEGIN{printf "%.2f", a/r}')× ready; the search cache then holds ${cache_mb:-?} MB) |"
echo "| first search after \`listening on\` | $(ms "$first") ms (the hundredth $(ms "$hundredth") ms, median of 2–100 $(ms "$median99") ms) |"
echo "| miss, server scoring time ($misses distinct 2–3 word queries) | p50 $miss_p50 ms, p99 $miss_p99 ms (as curl saw them: p50 $(ms "$client_p50"), p99 $(ms "$client_p99") ms) |"
echo "| miss, server scoring time ($nonwords queries: two common words and a non-word, e.g. \`$(head -1 "$work/qn")\`) | p50 $nonword_p50 ms, p99 $nonword_p99 ms (curl p99 $(ms "$nonword_client_p99") ms) |"
echo "| one API create, then the next search | p50 $(ms "$after_p50") ms, max $(ms "$after_max") ms; without the write p50 $(ms "$alone_p50") ms, max $(ms "$alone_max") ms: +$(awk -v a="$after_p50" -v b="$alone_p50" 'BEGIN{printf "%.1f", (a-b)*1000}') ms at p50 |"
echo "| searching during ${write_rate} creates/s (2 clients, fixed + fresh queries) | misses p50 $(col 200-miss 4) ms, p99 $(col 200-miss 6) ms ($(col 200-miss 2) misses); hits p50 $(col 200-hit 4) ms, p99 $(col 200-hit 6) ms ($(col 200-hit 2) hits); creates p50 $(col write-201 4) ms, p99 $(col write-201 6) ms ($(col write-201 2)) |"
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)  (2 cores; other processes share them)"
echo
echo "loadgen's own table for the stream:"
sed 's/^/    /' "$work/stream"
