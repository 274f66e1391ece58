#!/usr/bin/env bash
# Runs the official OpenSandbox SDK (pinned in package-lock.json) against a
# rath-sandbox-server binary: run_opensandbox.sh PATH/TO/rath-sandbox-server.
# Needs root (bubblewrap sandboxes with cgroups). Exits 77 (ctest: skipped) with the
# reason when a tool is missing on a developer machine; under RATH_CI a missing tool fails.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
bin="${1:?usage: run_opensandbox.sh PATH/TO/rath-sandbox-server}"
[[ "$bin" = /* ]] || bin="$PWD/$bin"
missing() {
  if [[ -n "${RATH_CI:-}" ]]; then echo "FAIL: $1"; exit 1; fi
  echo "SKIP: $1"; exit 77
}
node="$repo/.deps/node22/node_modules/node/bin/node"
[[ -x "$node" ]] || node="$(command -v node || true)"
[[ -n "$node" ]] || missing "node is not installed (scripts/install-deps.sh --test installs Node 22)"
[[ -d "$here/node_modules/@alibaba-group/opensandbox" ]] || missing "$here/node_modules is missing (scripts/install-deps.sh --test runs npm ci there)"
command -v bwrap >/dev/null 2>&1 || missing "bwrap is not installed"
[[ "$(id -u)" = 0 ]] || missing "rath-sandbox-server's SDK test needs root (cgroups, setpriv)"
[[ -x "$bin" ]] || { echo "FAIL: $bin is not an executable"; exit 1; }
cd "$here"
RATH_SANDBOX_SERVER="$bin" exec "$node" --test --test-reporter=spec --test-concurrency=1 opensandbox.test.mjs
