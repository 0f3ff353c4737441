#!/usr/bin/env bash
# Memory under JetStream load (issue 44): peak and steady RSS of ours against nats-server in the same run.
# Each scenario starts each server in turn (ours, reference, ours, reference ...) on a fresh store, runs the load,
# reads VmHWM (peak RSS) from /proc/PID/status right after it, waits IDLE seconds without traffic and reads VmRSS
# (steady RSS). A background sampler also keeps the highest VmRSS seen, as a cross-check of VmHWM.
#
# Scenarios (first argument, comma separated; default all):
#   asyncpub-file   nats bench js pub async, 300,000 x 128 B into a file stream
#   asyncpub-mem    the same into a memory stream
#   backlog1m       1,000,000 x 128 B into a file stream, one durable pull consumer with all of them pending, idle
#   streams1k       1,000 file streams with 10 durable pull consumers each, no messages, idle
#   kv1m            a KV bucket (file) with 1,000,000 distinct keys of 128 B (nats bench kv put, 4 clients)
#
# usage: bench/js-memory.sh [scenarios] [reps]   env: IDLE=10 (s), OURS=core/bin/Release/net10.0/NatsBroker,
#        REF=../shared/oracle/nats-server-2.14.5, BASE=(a second build of ours, for an A/B), NATS_CLI=../shared/tools/nats,
#        PORT=17100, OUT=file.tsv
# Prints one line per run and appends tab-separated rows (scenario, server, rep, rate, peak MB, steady MB) to OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
scenarios=${1:-asyncpub-file,asyncpub-mem,backlog1m,streams1k,kv1m}
reps=${2:-1}
idle=${IDLE:-10}
nats=${NATS_CLI:-../shared/tools/nats}
ours=${OURS:-core/bin/Release/net10.0/NatsBroker}
ref=${REF:-../shared/oracle/nats-server-2.14.5}
port=${PORT:-17100}
out=${OUT:-/dev/null}
url="nats://127.0.0.1:$port"

kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
mb() { awk -v v="$1" 'BEGIN { printf "%.1f", v / 1024 }'; }

# One connection over bash's /dev/tcp: pipelines JetStream API requests (subject + JSON per line on stdin) and
# waits until every one got its reply (nats CLI per request would cost a process start each: 11,000 of them).
js_pipeline() {
  local n=0 got=0 line subj body
  exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
  read -r -t 10 line <&3 # INFO
  printf 'CONNECT {"verbose":false,"pedantic":false,"protocol":1}\r\nSUB _mem.r.* 1\r\n' >&3
  while IFS=' ' read -r subj body; do
    n=$((n + 1))
    printf 'PUB %s _mem.r.%d %d\r\n%s\r\n' "$subj" "$n" "${#body}" "$body" >&3
  done
  printf 'PING\r\n' >&3
  while [ "$got" -lt "$n" ] && read -r -t 60 line <&3; do
    case $line in
      MSG*) got=$((got + 1)); read -r -t 60 line <&3
            case $line in *'"error"'*) echo "api error: $line" >&2 ;; esac ;;
      PING*) printf 'PONG\r\n' >&3 ;;
    esac
  done
  exec 3>&-
  [ "$got" -eq "$n" ] || { echo "only $got of $n API replies" >&2; return 1; }
}

load() { # scenario -> prints the rate (msgs/sec or ops) on stdout
  case $1 in
    asyncpub-file|asyncpub-mem)
      local st=file; [ "$1" = asyncpub-mem ] && st=memory
      "$nats" -s "$url" bench js pub async bench.mem --create --storage "$st" --msgs 300000 --size 128B --no-progress 2>&1 \
        | grep -Eo '[0-9,]+ msgs/sec' | head -1 ;;
    backlog1m)
      "$nats" -s "$url" bench js pub async bench.mem --create --storage file --msgs 1000000 --size 128B --no-progress 2>&1 \
        | grep -Eo '[0-9,]+ msgs/sec' | head -1
      echo '$JS.API.CONSUMER.DURABLE.CREATE.benchstream.backlog {"stream_name":"benchstream","config":{"durable_name":"backlog","ack_policy":"explicit","deliver_policy":"all"}}' \
        | js_pipeline ;;
    streams1k)
      local t0=$SECONDS
      for s in $(seq 1 1000); do
        printf '$JS.API.STREAM.CREATE.s%d {"name":"s%d","subjects":["s%d.>"],"storage":"file"}\n' "$s" "$s" "$s"
      done | js_pipeline
      for s in $(seq 1 1000); do for c in $(seq 1 10); do
        printf '$JS.API.CONSUMER.DURABLE.CREATE.s%d.c%d {"stream_name":"s%d","config":{"durable_name":"c%d","ack_policy":"explicit"}}\n' "$s" "$c" "$s" "$c"
      done; done | js_pipeline
      echo "11000 API calls in $((SECONDS - t0)) s" ;;
    kv1m)
      "$nats" -s "$url" bench kv put --clients 4 --msgs 1000000 --size 128B --no-progress 2>&1 \
        | grep -Eo '[0-9,]+ msgs/sec' | tail -1 ;;
    *) echo "unknown scenario $1" >&2; return 2 ;;
  esac
}

run_one() { # scenario server-label binary rep
  local scen=$1 name=$2 bin=$3 rep=$4 dir pid rate peak steady seen=0 cur sampler
  dir=$(mktemp -d)
  # The previous server must be gone from the port, and this one must answer JetStream requests, before the load.
  for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2> /dev/null || break; sleep 0.2; done
  "$bin" -a 127.0.0.1 -p "$port" -js -sd "$dir/store" > "$dir/log" 2>&1 &
  pid=$!
  local ready=0
  for _ in $(seq 1 150); do
    kill -0 "$pid" 2> /dev/null || break
    "$nats" -s "$url" account info > /dev/null 2>&1 && { ready=1; break; }
    sleep 0.2
  done
  [ "$ready" = 1 ] || { echo "$scen $name rep $rep: server did not become ready: $(tail -3 "$dir/log")"; kill "$pid" 2> /dev/null; wait "$pid" 2> /dev/null; rm -rf "$dir"; return 0; }
  ( m=0; while kill -0 "$pid" 2>/dev/null; do cur=$(kb "$pid" VmRSS); [ "${cur:-0}" -gt "$m" ] && m=$cur && echo "$m" > "$dir/maxrss"; sleep 0.2; done ) &
  sampler=$!
  local start; start=$(kb "$pid" VmRSS)
  rate=$(load "$scen" | tr '\n' ' ' || echo "FAILED")
  peak=$(kb "$pid" VmHWM)
  sleep "$idle"
  steady=$(kb "$pid" VmRSS)
  [ -f "$dir/maxrss" ] && seen=$(cat "$dir/maxrss")
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null || true
  printf '%-14s %-10s rep %d: start %6s MB  peak (VmHWM) %7s MB  steady after %ss %7s MB  (max sampled %s MB)  %s\n' \
    "$scen" "$name" "$rep" "$(mb "$start")" "$(mb "$peak")" "$idle" "$(mb "$steady")" "$(mb "$seen")" "$rate"
  printf '%s\t%s\t%d\t%s\t%s\t%s\n' "$scen" "$name" "$rep" "$rate" "$(mb "$peak")" "$(mb "$steady")" >> "$out"
  rm -rf "$dir"
}

base=${BASE:-} # another build of ours (an A/B in the same run): its rows are labelled ours-base
for bin in "$ours" "$ref" ${base:+"$base"}; do [ -x "$bin" ] || { echo "$bin missing (build ours: dotnet build core -c Release)"; exit 2; }; done
refname="go-$("$ref" --version 2>&1 | grep -Eo '[0-9]+\.[0-9]+\.[0-9]+')"
echo "# $(date -u '+%F %T') UTC, load average $(cut -d' ' -f1-3 /proc/loadavg), ours=$ours ${base:+base=$base }ref=$ref ($refname)"
for scen in ${scenarios//,/ }; do
  for rep in $(seq 1 "$reps"); do
    [ -n "$base" ] && run_one "$scen" ours-base "$base" "$rep"
    run_one "$scen" ours "$ours" "$rep"
    run_one "$scen" "$refname" "$ref" "$rep"
  done
done
