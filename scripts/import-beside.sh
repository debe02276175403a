#!/usr/bin/env bash
# Searches and publishes while `agent-pages import` writes a large corpus into the
# served database from another process (issue 20 item 5). Needs a release build
# (cargo build --release --bins --examples). Never run in CI.
#
#   scripts/import-beside.sh CORPUS.jsonl [demo|small]
#
#   demo   the server serves the bundled demo corpus (63,672 pages) and the import
#          re-imports CORPUS into it: with the demo corpus itself every page is
#          unchanged, so the import holds the write lock for its whole transaction
#          and moves no generation (the case of issue 20 item 5)
#   small  the server serves 8 pages and the import adds every page of CORPUS:
#          one generation per page, applied to the snapshot after the commit
# Prints the import's summary and the latency of every request sent while it ran.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:?usage: scripts/import-beside.sh CORPUS.jsonl [demo|small]}
mode=${2:-demo}
# BIN and PROBE choose other builds (e.g. of main, for a reference run).
bin=${BIN:-target/release/agent-pages}
probe=${PROBE:-target/release/examples/import_beside}
for f in "$bin" "$probe"; do
  [ -x "$f" ] || { echo "$f is missing: cargo build --release --bins --examples" >&2; exit 1; }
done

work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
db=$work/pages.sqlite3
args=()
case "$mode" in
  demo) args=(--demo) ;;
  small)
    for t in "Kubernetes container orchestration" "Go programming language compiler" \
             "object-relational SQL database" "Vi IMproved text editor" \
             "small, powerful web server" "network tool for URLs" "Python library" "fonts"; do
      printf '{"title": "%s"}\n' "$t"
    done | AGENT_PAGES_DATABASE=$db RUST_LOG=warn "$bin" import - >/dev/null ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac

AGENT_PAGES_DATABASE=$db AGENT_PAGES_BIND=127.0.0.1:0 TRUSTED_PROXY_CIDRS=127.0.0.1 \
  PUBLISH_RATE_PER_MINUTE=100000 PUBLISH_RATE_PER_HOUR=1000000 RUST_LOG=warn \
  "$bin" serve "${args[@]}" >"$work/serve.log" 2>&1 &
pid=$!
url=""
for _ in $(seq 1 1200); do
  url=$(grep -o 'listening on http://[0-9.:]*' "$work/serve.log" | head -1 | sed 's/listening on //') || true
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "the server did not start:" >&2; cat "$work/serve.log" >&2; exit 1; }
"$probe" --url "$url" --bin "$bin" --database "$db" --corpus "$corpus"
grep -E 'WARN|ERROR' "$work/serve.log" | sort | uniq -c | sort -rn | head -5 || true
