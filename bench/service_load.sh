#!/usr/bin/env bash
# Open-loop load on the agent service at fixed arrival rates, rath beside the same
# service on Node 22 + OpenAI Agents JS (bench/service_js/server.mjs), both against
# rath-fake-llm with LATENCY_MS per model call (two calls per run). JSON lines on stdout.
#
#   bench/service_load.sh [DURATION_S=60] [RATES="500 2000 5000"] [LATENCY_MS=50]
#
# Needs build/bin/{service_load,13_agent_service,rath-fake-llm}; the JS side needs
# `npm ci` in bench/service_js (it brings Node 22 as the npm package `node`).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${BIN:-$here/../build/bin}"
duration="${1:-60}"
rates="${2:-500 2000 5000}"
latency="${3:-50}"

for rate in $rates; do
  "$bin/service_load" --rate "$rate" --duration "$duration" --latency-ms "$latency" --label rath
done

node="$here/service_js/node_modules/.bin/node"
if [[ ! -x "$node" ]]; then
  echo "service_load.sh: $node is missing (npm ci in bench/service_js); skipping the JS service" >&2
  exit 0
fi
# The first line a background program prints ("listening on URL"), from its output file.
first_line() {
  for _ in $(seq 1 200); do
    if [[ -s "$1" ]]; then head -n1 "$1"; return; fi
    sleep 0.05
  done
  echo "service_load.sh: no output in $1" >&2
  exit 1
}
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for rate in $rates; do
  "$bin/rath-fake-llm" --port 0 --latency-ms "$latency" --quiet >"$tmp/llm.out" &
  llm_pid=$!
  llm_url="$(first_line "$tmp/llm.out")"
  llm_url="${llm_url#listening on }/v1"
  # The same limits as the rath service's defaults (512 running, 512 queued).
  FAKE_LLM_URL="$llm_url" PORT=0 MAX_CONCURRENT=512 MAX_QUEUED=512 "$node" "$here/service_js/server.mjs" >"$tmp/js.out" &
  js_pid=$!
  js_url="$(first_line "$tmp/js.out")"
  js_url="${js_url#listening on }"
  "$bin/service_load" --url "$js_url" --pid "$js_pid" --rate "$rate" --duration "$duration" \
    --latency-ms "$latency" --label openai-agents-js
  kill "$js_pid" "$llm_pid" 2>/dev/null || true
  wait "$js_pid" "$llm_pid" 2>/dev/null || true
  rm -f "$tmp/llm.out" "$tmp/js.out"
done
