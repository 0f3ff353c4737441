#!/usr/bin/env bash
# Read-back after a sync-always run (issue 38): each server in turn is started with
# `jetstream { sync_interval: always }` on a fresh store, N messages are published into a file stream (async
# publish, so the fsyncs are shared where a server can share them), then a durable pull consumer with explicit acks
# reads them all back (`nats bench js fetch`). Prints each server's publish and fetch rates; the ratio is ours
# against each reference in the same run.
# usage: bench/syncalways-readback.sh [msgs] [reps]   (nats CLI and servers from ../shared, /usr/sbin/nats-server)
set -euo pipefail
cd "$(dirname "$0")/.."
msgs=${1:-20000}
reps=${2:-3}
nats=${NATS_CLI:-../shared/tools/nats}
ours=core/bin/Release/net10.0/NatsBroker
declare -A bins=([ours]=$ours [go-2.14.5]=../shared/oracle/nats-server-2.14.5 [go-2.9.10]=/usr/sbin/nats-server)
port=4390
for rep in $(seq 1 "$reps"); do
  for name in ours go-2.14.5 go-2.9.10; do
    bin=${bins[$name]}
    [ -x "$bin" ] || { echo "$name: $bin missing, skipped"; continue; }
    dir=$(mktemp -d)
    printf 'port: %d\njetstream { store_dir: "%s", sync_interval: always }\n' "$port" "$dir" > "$dir/server.conf"
    "$bin" -c "$dir/server.conf" > "$dir/log" 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do "$nats" -s "nats://127.0.0.1:$port" rtt > /dev/null 2>&1 && break; sleep 0.1; done
    pub=$("$nats" -s "nats://127.0.0.1:$port" bench js pub async bench.s --create --storage file --msgs "$msgs" --size 128B --no-progress 2>&1 | grep -Eo '[0-9,]+ msgs/sec' | head -1)
    fetch=$("$nats" -s "nats://127.0.0.1:$port" bench js fetch --msgs "$msgs" --acks explicit --batch 500 --no-progress 2>&1 | grep -Eo '[0-9,]+ msgs/sec' | head -1)
    echo "rep $rep $name: publish $pub, fetch+ack $fetch"
    kill "$pid"; wait "$pid" 2>/dev/null || true
    rm -rf "$dir"
  done
done
