#!/usr/bin/env bash
# Drives a running agent-pages (directly, or through its reverse proxy) with wrk and
# prints how many searches got 200, 429 and 503 next to what the search budget
# predicts. Starts nothing itself; see docs/deploy.md for the setup it was run with.
#
# Two phases:
#   single  every search from one client address
#   many    searches spread round-robin over --clients addresses
# Client addresses are sent as X-Forwarded-For, so the server must trust the address
# wrk connects from (run it behind a proxy that appends to X-Forwarded-For, such as
# nginx with $proxy_add_x_forwarded_for, and TRUSTED_PROXY_CIDRS=127.0.0.1). Each run
# picks fresh addresses, so earlier runs have spent none of their budget.
#
# Prints the status split per phase, and exits non-zero only when wrk fails or not
# every search was answered: a difference from the prediction is for a person to read
# (a run can cross a minute boundary; see the note it prints).
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: scripts/loadtest.sh [options] BASE_URL

  -n, --requests N       searches per phase (default 60)
  -k, --clients K        client addresses in the many phase (default 20)
  -c, --connections C    concurrent connections (default 8)
  -q, --query TEXT       the query (default "kubernetes")
      --distinct         a different query per request: every search is a cache
                         miss and needs a scorer slot (shows 503s under load)
      --phase P          single, many or both (default both)
      --no-forwarded-for send no X-Forwarded-For: every search counts against the
                         one address the server sees (e.g. through Traefik, which
                         drops client headers); only the single phase then
      --per-minute M     the server's SEARCH_RATE_PER_MINUTE (default: that
                         variable, else 20)
      --per-hour H       the server's SEARCH_RATE_PER_HOUR (default: that
                         variable, else 200)
      --concurrency S    the server's SEARCH_CONCURRENCY, shown for reference
                         (default: that variable, else 2)
  -d, --duration SECS    time limit per phase (default 60); searches still
                         unanswered then make the run fail
      --report FILE.svg  also draw the status split per second of each phase
                         next to what the budget predicts for those seconds
                         (scripts/loadtest-report.py, needs python3)
  -h, --help             this text

BASE_URL is where the server (or its proxy) answers, e.g. http://127.0.0.1:8081.
Send traffic only to a server you run yourself.
USAGE
}

requests=60
clients=20
connections=8
query="kubernetes"
distinct=0
phase="both"
forwarded=1
per_minute="${SEARCH_RATE_PER_MINUTE:-20}"
per_hour="${SEARCH_RATE_PER_HOUR:-200}"
concurrency="${SEARCH_CONCURRENCY:-2}"
duration=60
report=""
base_url=""

while [ $# -gt 0 ]; do
  case "$1" in
    -n | --requests) requests="$2"; shift 2 ;;
    -k | --clients) clients="$2"; shift 2 ;;
    -c | --connections) connections="$2"; shift 2 ;;
    -q | --query) query="$2"; shift 2 ;;
    --distinct) distinct=1; shift ;;
    --phase) phase="$2"; shift 2 ;;
    --no-forwarded-for) forwarded=0; shift ;;
    --per-minute) per_minute="$2"; shift 2 ;;
    --per-hour) per_hour="$2"; shift 2 ;;
    --concurrency) concurrency="$2"; shift 2 ;;
    -d | --duration) duration="$2"; shift 2 ;;
    --report) report="$2"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "loadtest: unknown option $1" >&2; usage >&2; exit 2 ;;
    *)
      [ -z "$base_url" ] || { echo "loadtest: one BASE_URL only" >&2; exit 2; }
      base_url="$1"; shift ;;
  esac
done

die() { echo "loadtest: $*" >&2; exit 2; }
[ -n "$base_url" ] || { usage >&2; exit 2; }
for n in requests clients connections per_minute per_hour concurrency duration; do
  [[ "${!n}" =~ ^[1-9][0-9]*$ ]] || die "--${n//_/-} must be a whole number above 0, got '${!n}'"
done
case "$phase" in single | many | both) ;; *) die "--phase must be single, many or both" ;; esac
if [ "$forwarded" = 0 ] && [ "$phase" != single ]; then
  die "--no-forwarded-for makes every search one client: use --phase single"
fi
[ "$clients" -le 65536 ] || die "--clients must be at most 65536"
command -v wrk >/dev/null || die "wrk is not installed (apt-get install -y wrk)"
script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lua="$script_dir/loadtest.lua"
[ -f "$lua" ] || die "missing $lua"
timeline=""
if [ -n "$report" ]; then
  command -v python3 >/dev/null || die "--report needs python3"
  [ -f "$script_dir/loadtest-report.py" ] || die "missing $script_dir/loadtest-report.py"
  timeline="$(mktemp)"
  trap 'rm -f "$timeline"' EXIT
fi

min() { if [ "$1" -lt "$2" ]; then echo "$1"; else echo "$2"; fi; }

# Searches the budget admits for one client sending `sent` searches within
# `minutes` minute windows and `hours` hour windows.
admitted_for() {
  local sent="$1" minutes="$2" hours="$3"
  min "$sent" "$(min $((per_minute * minutes)) $((per_hour * hours)))"
}

# run_phase TITLE CLIENTS: one wrk run, then the status split and the prediction.
run_phase() {
  local title="$1" phase_clients="$2"
  # Fresh addresses for every phase: 198.18.0.0/15 has 131,072.
  local base=$(((RANDOM * 32768 + RANDOM) % (131072 - phase_clients)))
  local out
  out="$(mktemp)"
  local wrk_status=0
  LOADTEST_REQUESTS="$requests" LOADTEST_CLIENTS="$phase_clients" \
    LOADTEST_CLIENT_BASE="$base" LOADTEST_FORWARDED="$forwarded" \
    LOADTEST_QUERY="$query" LOADTEST_DISTINCT="$distinct" \
    wrk -t1 -c"$connections" -d"${duration}s" --timeout 10s -s "$lua" "$base_url" \
    >"$out" 2>&1 || wrk_status=$?
  local line
  line="$(grep '^LOADTEST ' "$out" | tail -n1 || true)"
  if [ -z "$line" ]; then
    cat "$out" >&2
    rm -f "$out"
    die "wrk printed no result (exit $wrk_status)"
  fi
  if [ -n "$timeline" ]; then
    echo "PHASE $title|$phase_clients|$(date +%s)" >>"$timeline"
    grep '^LOADSEC ' "$out" >>"$timeline" || true
  fi
  rm -f "$out"
  local sent answered s200 s429 s503 s500 other first last complete
  for field in $line; do
    case "$field" in
      sent=*) sent="${field#*=}" ;;
      answered=*) answered="${field#*=}" ;;
      s200=*) s200="${field#*=}" ;;
      s429=*) s429="${field#*=}" ;;
      s503=*) s503="${field#*=}" ;;
      s500=*) s500="${field#*=}" ;;
      other=*) other="${field#*=}" ;;
      first=*) first="${field#*=}" ;;
      last=*) last="${field#*=}" ;;
      complete=*) complete="${field#*=}" ;;
    esac
  done
  # Windows are aligned to the Unix epoch (SPEC §5): count the ones the run touched.
  local minutes=$((last / 60 - first / 60 + 1)) hours=$((last / 3600 - first / 3600 + 1))
  # Round-robin: the first (sent % clients) addresses sent one search more.
  local low=0 high=0 i each extra
  each=$((sent / phase_clients))
  extra=$((sent % phase_clients))
  for ((i = 0; i < phase_clients; i++)); do
    local n=$each
    [ "$i" -lt "$extra" ] && n=$((n + 1))
    low=$((low + $(admitted_for "$n" 1 1)))
    high=$((high + $(admitted_for "$n" "$minutes" "$hours")))
  done
  local admitted=$((s200 + s503 + s500))
  local predicted_admitted="$low" predicted_refused=$((sent - low))
  if [ "$high" != "$low" ]; then
    predicted_admitted="$low-$high"
    predicted_refused="$((sent - high))-$((sent - low))"
  fi
  local who
  if [ "$forwarded" = 1 ]; then
    local first_ip last_ip
    first_ip="198.$((18 + base / 65536)).$((base / 256 % 256)).$((base % 256))"
    local last_n=$((base + phase_clients - 1))
    last_ip="198.$((18 + last_n / 65536)).$((last_n / 256 % 256)).$((last_n % 256))"
    if [ "$phase_clients" = 1 ]; then who="X-Forwarded-For $first_ip"; else who="X-Forwarded-For $first_ip … $last_ip"; fi
  else
    who="no X-Forwarded-For: the address the server sees"
  fi
  local q_text="\"$query\""
  [ "$distinct" = 1 ] && q_text="\"$query N\" (a new query each time)"

  echo "== $title: $sent searches for $q_text from $phase_clients client address(es), $connections connections"
  echo "   clients: $who"
  echo "   budget: $per_minute/minute, $per_hour/hour per client; $concurrency scorer slot(s); windows touched: $minutes minute, $hours hour"
  printf '   %-34s %8s %12s\n' "status" "seen" "predicted"
  printf '   %-34s %8s %12s\n' "200 answered" "$s200" "-"
  printf '   %-34s %8s %12s\n' "503 no free scorer (budget spent)" "$s503" "-"
  printf '   %-34s %8s %12s\n' "500 scoring failed (budget spent)" "$s500" "-"
  printf '   %-34s %8s %12s\n' "admitted = 200 + 503 + 500" "$admitted" "$predicted_admitted"
  printf '   %-34s %8s %12s\n' "429 over budget" "$s429" "$predicted_refused"
  printf '   %-34s %8s %12s\n' "other" "$other" "0"
  if [ "$complete" != 1 ]; then
    echo "   INCOMPLETE: only $answered of $sent searches were answered within ${duration}s"
    return 1
  fi
  if [ "$minutes" -gt 1 ]; then
    echo "   note: the run crossed a minute boundary, so the prediction is a range"
  fi
  [ "$forwarded" = 1 ] || echo "   note: assumes the address the server sees has spent nothing in these windows"
  if [ "$admitted" -ge "$low" ] && [ "$admitted" -le "$high" ] && [ "$other" = 0 ]; then
    echo "   matches the prediction"
  else
    echo "   DIFFERS from the prediction"
  fi
  echo
}

echo "loadtest: $base_url with wrk $(wrk --version 2>&1 | head -n1 | awk '{print $2}'), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo
failed=0
if [ "$phase" = single ] || [ "$phase" = both ]; then
  run_phase "one client" 1 || failed=1
fi
if [ "$phase" = many ] || [ "$phase" = both ]; then
  run_phase "many clients" "$clients" || failed=1
fi
if [ -n "$report" ]; then
  python3 "$script_dir/loadtest-report.py" "$timeline" "$report" "$per_minute" "$per_hour"
  echo "loadtest: drew $report"
fi
exit "$failed"
