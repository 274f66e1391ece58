#!/usr/bin/env bash
# Runs every client scenario of @modelcontextprotocol/conformance (pinned in
# tests/integration/npm) for revision 2025-11-25, and the other scenarios rath
# supports (below), against rath's conformance client, one at a time; fails on any
# failure or warning (the suite counts a warning as a failure). The suite marks no
# client scenario pending in the pinned version, so there is no expected-failures
# baseline.
#
#   conformance_client.sh <client-binary> <source-dir> <work-dir>
#
# Needs Node 22 (scripts/install-deps.sh --test puts it in .deps/node22, or set
# RATH_NODE22) and the npm packages. Without them: a failure under RATH_CI, else a
# skip (exit 77) with the reason.
set -uo pipefail

client="$1"
src="$2"
work="$3"

node="${RATH_NODE22:-$src/.deps/node22/node_modules/node/bin/node}"
suite="$src/tests/integration/npm/node_modules/@modelcontextprotocol/conformance/dist/index.js"

missing=""
[[ -x "$node" ]] || missing="Node 22 ($node)"
[[ -f "$suite" ]] || missing="${missing:+$missing and }@modelcontextprotocol/conformance ($suite)"
if [[ -n "$missing" ]]; then
  echo "conformance_client: missing $missing; run scripts/install-deps.sh --test"
  [[ -n "${RATH_CI:-}" ]] && exit 1
  echo "SKIP"
  exit 77
fi

# Scenarios outside 2025-11-25 that rath implements too: client credentials with a
# client secret (an extension) and the 2025-03-26 fallbacks for servers without
# protected-resource metadata.
extensions=(auth/client-credentials-basic auth/2025-03-26-oauth-metadata-backcompat auth/2025-03-26-oauth-endpoint-fallback)

mapfile -t scenarios < <("$node" "$suite" list --client 2>/dev/null | sed -n 's/^  - \([^ ]*\) \[\(.*\)\]$/\1 \2/p' |
  awk '$2 ~ /2025-11-25/ {print $1}')
if ((${#scenarios[@]} == 0)); then
  echo "conformance_client: the suite listed no 2025-11-25 client scenarios"
  exit 1
fi
scenarios+=("${extensions[@]}")

rm -rf "$work" && mkdir -p "$work"
cd "$work" || exit 1
passed=0
failed=0
failures=()
for s in "${scenarios[@]}"; do
  log="$work/$(echo "$s" | tr '/' '_').log"
  if timeout 120 "$node" "$suite" client --command "$client" --scenario "$s" --timeout 60000 >"$log" 2>&1 &&
     grep -q "OVERALL: PASSED" "$log"; then
    passed=$((passed + 1))
    echo "PASS $s ($(grep -m1 '^Passed:' "$log"))"
  else
    failed=$((failed + 1))
    failures+=("$s")
    echo "FAIL $s ($(grep -m1 '^Passed:' "$log" || echo 'no result'))"
    grep -E '^  - |CLIENT EXITED|Error' "$log" | head -20 | sed 's/^/    /'
  fi
done
echo "conformance client scenarios (2025-11-25 and ${#extensions[@]} more): $passed passed, $failed failed"
((failed == 0))
