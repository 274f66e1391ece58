#!/usr/bin/env bash
# Instructions per session of the fake server (rath-fake-llm), counted by callgrind:
# the server runs under callgrind while `fanout` (not under callgrind) drives N1 and then
# N2 sessions through it; (Ir(N2) - Ir(N1)) / (N2 - N1) is the server's cost of one
# session (two requests) without its setup. Repeats to within about 1 %.
#
#   bench/callgrind_server.sh [build-dir=build] [extra fanout args, e.g. --raw or --stream]
# Prints one JSON line. Needs valgrind (Debian package).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
n1=1000
n2=3000
total() {  # sessions -> instructions of the whole server run
  local out=/tmp/callgrind-server.$1
  valgrind --tool=callgrind --callgrind-out-file=$out.out "$build/bin/rath-fake-llm" --port 0 --latency-ms 50 \
    > $out.log 2>&1 &
  local pid=$!
  for _ in $(seq 200); do grep -q listening $out.log 2>/dev/null && break; sleep 0.05; done
  local url
  url="$(sed -n 's/^listening on //p' $out.log)/v1"
  "$build/bin/fanout" --no-park-probe --sessions "$1" --base-url "$url" --timeout-s 600 "${@:2}" > $out.json
  kill -INT "$pid"
  wait "$pid" || true
  grep -q '"errors":0' $out.json || { echo "fanout failed: $(cat $out.json)" >&2; exit 1; }
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' $out.log
}
a=$(total $n1 "$@")
b=$(total $n2 "$@")
mode=rath
for arg in "$@"; do [ "$arg" = --raw ] && mode=raw; done
echo "{\"bench\":\"server_instructions\",\"client\":\"$mode\",\"args\":\"$*\",\"instructions_per_session\":$(( (b - a) / (n2 - n1) ))}"
