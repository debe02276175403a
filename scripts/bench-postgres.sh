#!/usr/bin/env bash
# scripts/bench.sh twice in one invocation: pages and budgets in SQLite files, then
# in a PostgreSQL server on loopback that this script starts in a temp folder and
# stops again (issue 21's "measured"). Needs Debian's postgresql package (initdb,
# pg_ctl, createdb), wrk and a release build. Never run in CI.
#
#   scripts/bench-postgres.sh [bench.sh options: --corpus FILE --duration SECS ...]
set -euo pipefail
cd "$(dirname "$0")/.."
pgbin=${POSTGRES_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$pgbin/initdb" ] || { echo "no PostgreSQL: apt-get install postgresql (or set POSTGRES_BIN)" >&2; exit 1; }
run_as=()
[ "$(id -u)" = 0 ] && run_as=(runuser -u postgres --)   # initdb refuses root

work=$(mktemp -d)
chmod 777 "$work"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cleanup() { "${run_as[@]}" "$pgbin/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
"${run_as[@]}" "$pgbin/initdb" -D "$work/data" -A trust -U bench >/dev/null
"${run_as[@]}" "$pgbin/pg_ctl" -D "$work/data" -l "$work/log" -w \
  -o "-p $port -k $work -c listen_addresses=127.0.0.1 -c fsync=on" start >/dev/null
for db in demo big; do "$pgbin/createdb" -h 127.0.0.1 -p "$port" -U bench "$db"; done

echo "## SQLite"
scripts/bench.sh "$@"
echo
echo "## PostgreSQL $("$pgbin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
scripts/bench.sh --postgres "postgres://bench@127.0.0.1:$port" "$@"
