# Shared by the bench scripts (bench-carry.sh, bench-history.sh, bench-scale.sh), which
# source it after setting `bin` (the agent-pages binary) and `work` (their temp
# folder). Not a script of its own.

# serve DB [NAME=VALUE ...]: starts `$bin serve` on the SQLite file DB on a free
# loopback port, trusting 127.0.0.1 as its proxy, with budgets that never refuse and
# the settings given; its output goes to $work/serve.out and $work/serve.err. Sets
# `pid` and `url` once it says where it listens; exits the script if it dies first
# or never says so (two minutes).
serve() {
  local db="$1"
  shift
  env AGENT_PAGES_DATABASE="$db" AGENT_PAGES_BIND=127.0.0.1:0 \
    TRUSTED_PROXY_CIDRS=127.0.0.1 SEARCH_RATE_PER_MINUTE=1000000 SEARCH_RATE_PER_HOUR=100000000 \
    PUBLISH_RATE_PER_MINUTE=1000000 PUBLISH_RATE_PER_HOUR=100000000 "$@" \
    "$bin" serve >"$work/serve.out" 2>"$work/serve.err" &
  pid=$!
  url=""
  for _ in $(seq 1 12000); do
    url=$(grep -o 'listening on http://[0-9.:]*' "$work/serve.out" | head -1 | sed 's/listening on //') || true
    [ -n "$url" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/serve.err" >&2; exit 1; }
    sleep 0.01
  done
  [ -n "$url" ] || { echo "the server did not start" >&2; exit 1; }
}

# stop: stops the server `serve` started and waits for it.
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }
