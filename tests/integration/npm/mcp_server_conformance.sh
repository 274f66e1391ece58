#!/usr/bin/env bash
# Runs every server scenario of the official MCP conformance suite (pinned in
# package-lock.json) for revision 2025-11-25, pending ones included, against the rath
# conformance server: mcp_server_conformance.sh PATH/TO/rath-mcp-conformance-server.
# Fails when any check fails or when a scenario the suite lists did not run. Missing
# Node 22 or npm packages: exit 77 (ctest: skipped) on a developer machine, a failure
# under RATH_CI.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
bin="${1:?usage: mcp_server_conformance.sh PATH/TO/rath-mcp-conformance-server}"
node="$root/.deps/node22/node_modules/node/bin/node"
suite="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
missing() {
  if [[ -n "${RATH_CI:-}" ]]; then echo "FAIL: $1"; exit 1; fi
  echo "SKIP: $1"; exit 77
}
[[ -x "$node" ]] || missing "Node 22 is not installed in .deps/node22 (scripts/install-deps.sh --test)"
[[ -f "$suite" ]] || missing "$here/node_modules is missing the conformance suite (scripts/install-deps.sh --test)"
[[ -x "$bin" ]] || { echo "FAIL: $bin is not an executable"; exit 1; }

work="$(mktemp -d)"
cleanup() { [[ -n "${pid:-}" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
"$bin" >"$work/server.out" 2>"$work/server.err" &
pid=$!
url=""
for _ in $(seq 100); do
  url="$(sed -n 's/^listening on //p' "$work/server.out")"
  [[ -n "$url" ]] && break
  sleep 0.1
done
[[ -n "$url" ]] || { echo "FAIL: the conformance server did not start"; cat "$work/server.err"; exit 1; }

cd "$here"
expected="$("$node" "$suite" list --server --spec-version 2025-11-25 | grep -c '^  - ')"
"$node" "$suite" server --url "$url" --suite all --spec-version 2025-11-25 >"$work/run.txt" 2>&1
rc=$?
sed -n '/=== SUMMARY ===/,$p' "$work/run.txt"
ran="$(sed -n '/=== SUMMARY ===/,$p' "$work/run.txt" | grep -cE '^(✓|✗) ')"
failed_lines="$(sed -n '/=== SUMMARY ===/,$p' "$work/run.txt" | grep -c '^✗ ')"
if ((rc != 0 || failed_lines != 0)); then
  echo "FAIL: the conformance suite reported failures (exit $rc)"
  sed -n '/=== Failed Checks ===/,/=== SUMMARY ===/p' "$work/run.txt" | head -200
  exit 1
fi
if ((ran != expected)); then
  echo "FAIL: $ran scenarios ran, the suite lists $expected for 2025-11-25"
  exit 1
fi
echo "$ran scenarios of 2025-11-25 passed"
