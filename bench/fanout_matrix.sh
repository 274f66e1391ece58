#!/usr/bin/env bash
# The fan-out results matrix of bench/README.md: N x latency x stream, rath and raw,
# each run against its own rath-fake-llm process; then N = 10,000 against the peers'
# fake_llm.mjs (needs node). Writes JSON lines to $OUT (default fanout-results.jsonl)
# and prints a markdown table (needs python3).
#
#   bench/fanout_matrix.sh [build-dir]        # env: SIZES="1 100 1000 10000 100000"
set -euo pipefail
build=${1:-build}
bin="$build/bin/fanout"
out=${OUT:-fanout-results.jsonl}
sizes=${SIZES:-"1 100 1000 10000 100000"}
peers=${PEERS_DIR:-"$(dirname "$0")/../../shared/peers"}
: > "$out"

run() {  # label, fanout args...
  local label=$1
  shift
  local line
  if line=$("$bin" "$@" 2>/tmp/fanout-stderr); then :; else echo "FAILED: $* ($(tail -1 /tmp/fanout-stderr))" >&2; fi
  [ -n "$line" ] && echo "{\"server\":\"$label\",${line#\{}" >> "$out"
  echo "$label $*: ${line:-<no result>}" >&2
}

for n in $sizes; do
  for latency in 0 50; do
    for stream in "" "--stream"; do
      for mode in "" "--raw"; do
        run rath-fake-llm --sessions "$n" --latency-ms "$latency" $stream $mode
      done
    done
  done
done

if [ -f "$peers/fake_llm.mjs" ] && command -v node >/dev/null; then
  for latency in 0 50; do
    port=$((18900 + latency))
    PORT=$port FAKE_LATENCY_MS=$latency node "$peers/fake_llm.mjs" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    for stream in "" "--stream"; do
      for mode in "" "--raw"; do
        run fake_llm.mjs --base-url "http://127.0.0.1:$port/v1" --sessions 10000 $stream $mode
      done
    done
    kill $pid
    wait $pid 2>/dev/null || true
  done
fi

python3 - "$out" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| server | N | latency ms | stream | mode | errors | sessions/s | LLM req/s | CPU ms/session | peak RSS MB | RSS KB/session | parked KB/session | p50 ms | p99 ms | max fds |")
print("| --- | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for r in rows:
    print("| {server} | {sessions:,} | {latency_ms} | {s} | {mode} | {errors} | {sps:,.0f} | {rps:,.0f} | {cpu:.3f} | {rss:.0f} | {rkb:.1f} | {pkb} | {p50:.0f} | {p99:.0f} | {fds} |".format(
        s="on" if r["stream"] else "off", sps=r["sessions_per_s"], rps=r["llm_requests_per_s"],
        cpu=r["cpu_ms_per_session"], rss=r["peak_rss_mb"], rkb=r["rss_kb_per_session"],
        pkb=("%.1f" % r["parked_kb_per_session"]) if r["parked_kb_per_session"] >= 0 else "-",
        p50=r["p50_session_ms"], p99=r["p99_session_ms"], fds=r["max_open_fds"], **r))
EOF
