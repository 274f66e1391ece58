#!/usr/bin/env bash
# Reproduces the fan-out profiles of bench/README.md: a frame-pointer build, a
# rath-fake-llm on its own port, `perf record` of the client (software cpu-clock: this VM
# has no hardware counters), the client io thread's self-time by symbol, and heaptrack of
# the parked-memory probe.
#
#   bench/profile_fanout.sh [sessions=10000] [latency-ms=50]
# Needs linux-perf and heaptrack (Debian packages). Writes into build-prof/ and /tmp.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
latency=${2:-50}
cmake -S . -B build-prof -G Ninja -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_CXX_FLAGS=-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer" >/dev/null
cmake --build build-prof --target fanout rath-fake-llm >/dev/null
set +o pipefail  # the report pipelines end in head/cut

server_pid=
url=
start_server() {  # latency -> sets $url and $server_pid
  build-prof/bin/rath-fake-llm --port 0 --latency-ms "$1" --quiet > /tmp/fanout-server.out &
  server_pid=$!
  for _ in $(seq 100); do grep -q listening /tmp/fanout-server.out 2>/dev/null && break; sleep 0.05; done
  url="$(sed -n 's/^listening on //p' /tmp/fanout-server.out)/v1"
}

start_server "$latency"
perf record -e cpu-clock -F 4000 --call-graph fp -o /tmp/fanout.perf \
  build-prof/bin/fanout --sessions "$n" --no-park-probe --base-url "$url"
kill "$server_pid"
echo "== client io thread, self time"
perf report -i /tmp/fanout.perf --comm rath-io-0 --no-children -g none --sort symbol --stdio 2>/dev/null |
  grep '%' | sed 's/  *-  *-  *$//; s/ *$//' | cut -c1-160 | head -40
echo "== by thread"
perf report -i /tmp/fanout.perf --no-children -g none --sort comm --stdio 2>/dev/null | grep '%' | sed 's/ *$//'

start_server 0
heaptrack -o /tmp/fanout-park build-prof/bin/fanout --park-probe --sessions "$n" --base-url "$url" >/dev/null || true  # the probe exits with its sessions still parked
kill "$server_pid"
echo "== parked memory by allocation site"
heaptrack_print -f /tmp/fanout-park.zst --print-peaks 1 --print-allocators 0 --print-temporary 0 \
  --print-leaks 0 --peak-limit 25 --sub-peak-limit 0 2>/dev/null |
  grep -A1 'peak memory consumed' | grep -v '^--' | paste - - | sed 's/  in .*//' | cut -c1-160
