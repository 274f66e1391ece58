#!/usr/bin/env bash
# Runs the official OpenAI and Anthropic SDKs (pinned in package-lock.json) against
# a rath-fake-llm binary: run.sh PATH/TO/rath-fake-llm. Exits 77 (ctest: skipped)
# with the reason when node or the installed packages are missing.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${1:?usage: run.sh PATH/TO/rath-fake-llm}"
[[ "$bin" = /* ]] || bin="$PWD/$bin"
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node is not installed, cannot run the official SDK tests"
  exit 77
fi
if [[ ! -d "$here/node_modules/openai" || ! -d "$here/node_modules/@anthropic-ai/sdk" ]]; then
  echo "SKIP: $here/node_modules is missing (scripts/install-deps.sh runs npm ci there)"
  exit 77
fi
if [[ ! -x "$bin" ]]; then
  echo "FAIL: $bin is not an executable"
  exit 1
fi
cd "$here"
RATH_FAKE_LLM="$bin" exec node --test --test-reporter=spec --test-concurrency=1 sdk.test.mjs
