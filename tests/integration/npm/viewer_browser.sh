#!/usr/bin/env bash
# The lineage viewer in headless Chromium (Debian's chromium, driven by playwright-core
# pinned in package-lock.json): viewer_browser.sh BIN_DIR WORK_DIR. BIN_DIR holds rath,
# 00_demo, 02_session_lineage and lineage_viewer_fixture; the pages, and the screenshots
# the test saves, go to WORK_DIR. Missing chromium, node or npm packages: exit 77
# (ctest: skipped) on a developer machine, a failure under RATH_CI.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
bin="${1:?usage: viewer_browser.sh BIN_DIR WORK_DIR}"
work="${2:?usage: viewer_browser.sh BIN_DIR WORK_DIR}"
missing() {
  if [[ -n "${RATH_CI:-}" ]]; then echo "FAIL: $1"; exit 1; fi
  echo "SKIP: $1"; exit 77
}
chromium="${RATH_CHROMIUM:-/usr/bin/chromium}"
[[ -x "$chromium" ]] || missing "$chromium is not installed (scripts/install-deps.sh --test installs Debian's chromium)"
node="$root/.deps/node22/node_modules/node/bin/node"
[[ -x "$node" ]] || node="$(command -v node || true)"
[[ -n "$node" ]] || missing "node is not installed (scripts/install-deps.sh --test)"
[[ -d "$here/node_modules/playwright-core" ]] || missing "$here/node_modules lacks playwright-core (scripts/install-deps.sh --test)"
[[ "$bin" = /* ]] || bin="$PWD/$bin"
[[ "$work" = /* ]] || work="$PWD/$work"
for b in rath 00_demo 02_session_lineage lineage_viewer_fixture; do
  [[ -x "$bin/$b" ]] || { echo "FAIL: $bin/$b is not built"; exit 1; }
done

rm -rf "$work" && mkdir -p "$work" || exit 1
set -e
# A persisted session (with a tool call) from example 02, exported by the rath command.
"$bin/02_session_lineage" "$work/example02" >"$work/example02.log"
id="$("$bin/rath" --dir "$work/example02" --json sessions list 2>/dev/null | "$node" -e \
  'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(JSON.parse(s)[0].id))')"
"$bin/rath" --dir "$work/example02" graph export --format html -o "$work/example02.html" 2>/dev/null
# The demo's own page: 30 agent sessions on the fake LLM, their user sessions and the agent's.
"$bin/00_demo" 30 "$work/demo" >"$work/demo.log"
# 10,000 sessions built through the library's graph operators.
"$bin/lineage_viewer_fixture" "$work/big.html" 10000 >"$work/fixture.log"
set +e

cd "$here"
RATH_CHROMIUM="$chromium" RATH_VIEWER_WORK="$work" RATH_VIEWER_EXAMPLE02_ID="$id" \
  exec "$node" --test --test-reporter=spec --test-concurrency=1 viewer_browser.test.mjs
