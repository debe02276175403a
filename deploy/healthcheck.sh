#!/usr/bin/env bash
# Container health check: GET /readyz on the port the server listens on, with
# nothing but bash (the slim runtime image has no curl or wget, and adding one would
# only be for this). Exit 0 when the answer is 200, 1 otherwise. /readyz, not the
# liveness /healthz: it fails when the database file is gone, replaced or not
# writable, or the search snapshot is not built, so an orchestrator stops sending
# traffic (and restarts the container) instead of losing acknowledged writes.
set -euo pipefail

bind="${AGENT_PAGES_BIND:-127.0.0.1:8080}"
port="${bind##*:}"

# bash's /dev/tcp: connect to the server on loopback, which also reaches a server
# bound to 0.0.0.0.
if ! exec 3<>"/dev/tcp/127.0.0.1/${port}"; then
  echo "unhealthy: nothing listens on 127.0.0.1:${port}" >&2
  exit 1
fi
# A server that closes early must give a message, not a silent death by SIGPIPE.
trap '' PIPE
if ! printf 'GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3 2>/dev/null; then
  echo "unhealthy: the connection to 127.0.0.1:${port} closed before the request was sent" >&2
  exit 1
fi
status_line=""
IFS= read -r -t 5 status_line <&3 || true
exec 3<&-
case "$status_line" in
  "HTTP/1.1 200 "*) exit 0 ;;
  *)
    echo "unhealthy: ${status_line:-no answer}" >&2
    exit 1
    ;;
esac
