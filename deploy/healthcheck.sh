#!/usr/bin/env bash
# Container health check: GET /healthz (or the path given as the first argument, such
# as /readyz for replicas behind a load balancer) on the port the server listens on,
# with nothing but bash (the slim runtime image has no curl or wget, and adding one
# would only be for this). Exit 0 when the answer is 200, 1 otherwise.
set -euo pipefail

bind="${AGENT_PAGES_BIND:-127.0.0.1:8080}"
port="${bind##*:}"
path="${1:-/healthz}"
case "$path" in
  /*) ;;
  *)
    echo "unhealthy: the path to check must start with /, got ${path}" >&2
    exit 1
    ;;
esac

# bash's /dev/tcp: connect to the server on loopback, which also reaches a server
# bound to 0.0.0.0.
if ! exec 3<>"/dev/tcp/127.0.0.1/${port}"; then
  echo "unhealthy: nothing listens on 127.0.0.1:${port}" >&2
  exit 1
fi
# A server that closes early must give a message, not a silent death by SIGPIPE.
trap '' PIPE
if ! printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$path" >&3 2>/dev/null; then
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
