#!/usr/bin/env bash
# Instructions per session of the fan-out client, counted by callgrind: the client runs
# N1 and then N2 sessions against its own rath-fake-llm, and the difference of the two
# totals divided by N2 - N1 is the per-session cost without setup (CA store, warm-up).
# Unlike CPU time it repeats to within about 1 % even on a busy machine, so it shows
# changes of a few percent that timing runs on this shared VM cannot.
#
#   bench/callgrind_fanout.sh [build-dir=build] [extra fanout args, e.g. --raw]
#   N1=2048 N2=6144 bench/callgrind_fanout.sh build --connections 1024   # connections reused
# By default every measured session opens its own connection (N2 < the 4,096 cap); with
# N1 and N2 above a smaller --connections each connection carries several sessions, as
# in the large fan-outs. Prints one JSON line. Needs valgrind (Debian package).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
n1=${N1:-1000}
n2=${N2:-3000}
"$build/bin/rath-fake-llm" --port 0 --latency-ms 50 --quiet > /tmp/callgrind-fanout-server.out &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q listening /tmp/callgrind-fanout-server.out 2>/dev/null && break; sleep 0.05; done
url="$(sed -n 's/^listening on //p' /tmp/callgrind-fanout-server.out)/v1"
total() {  # sessions -> instructions of the whole client run
  valgrind --tool=callgrind --callgrind-out-file=/tmp/callgrind-fanout.$1.out "$build/bin/fanout" \
    --no-park-probe --sessions "$1" --base-url "$url" --timeout-s 600 "${@:2}" > /tmp/callgrind-fanout.$1.json \
    2> /tmp/callgrind-fanout.$1.err
  grep -q '"errors":0' /tmp/callgrind-fanout.$1.json || { echo "fanout failed: $(cat /tmp/callgrind-fanout.$1.json)" >&2; exit 1; }
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' /tmp/callgrind-fanout.$1.err
}
a=$(total $n1 "$@")
b=$(total $n2 "$@")
mode=rath
for arg in "$@"; do [ "$arg" = --raw ] && mode=raw; done
echo "{\"bench\":\"fanout_instructions\",\"mode\":\"$mode\",\"args\":\"$*\",\"n1\":$n1,\"n2\":$n2,\"instructions_per_session\":$(( (b - a) / (n2 - n1) ))}"
