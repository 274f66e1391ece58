#!/usr/bin/env bash
# Runs the official MCP TypeScript SDK client (pinned in package-lock.json) against
# rath-mcp-serve: mcp_sdk_interop.sh PATH/TO/rath-mcp-serve PATH/TO/rath-fake-llm.
# Missing Node or npm packages: exit 77 (ctest: skipped) on a developer machine, a
# failure under RATH_CI.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
serve="${1:?usage: mcp_sdk_interop.sh PATH/TO/rath-mcp-serve PATH/TO/rath-fake-llm}"
llm="${2:?usage: mcp_sdk_interop.sh PATH/TO/rath-mcp-serve PATH/TO/rath-fake-llm}"
missing() {
  if [[ -n "${RATH_CI:-}" ]]; then echo "FAIL: $1"; exit 1; fi
  echo "SKIP: $1"; exit 77
}
node="$root/.deps/node22/node_modules/node/bin/node"
[[ -x "$node" ]] || node="$(command -v node || true)"
[[ -n "$node" ]] || missing "node is not installed (scripts/install-deps.sh --test)"
[[ -d "$here/node_modules/@modelcontextprotocol/sdk" ]] || missing "$here/node_modules lacks @modelcontextprotocol/sdk (scripts/install-deps.sh --test)"
[[ "$serve" = /* ]] || serve="$PWD/$serve"
[[ "$llm" = /* ]] || llm="$PWD/$llm"
for b in "$serve" "$llm"; do [[ -x "$b" ]] || { echo "FAIL: $b is not an executable"; exit 1; }; done
cd "$here"
RATH_MCP_SERVE="$serve" RATH_FAKE_LLM="$llm" exec "$node" --test --test-reporter=spec --test-concurrency=1 mcp_sdk_interop.test.mjs
