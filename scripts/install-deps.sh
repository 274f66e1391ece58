#!/usr/bin/env bash
# Installs whatever rath needs that is missing on a Debian 12 machine (run as root).
# Idempotent and quiet when everything is already present.
#
#   scripts/install-deps.sh          what building the library and running the demo needs
#   scripts/install-deps.sh --test   also what the test suites need: doctest, bubblewrap, CLI11 (the rath command),
#                                    iproute2 (network namespaces for the run-queue scale test),
#                                    wrk, chromium (the lineage viewer's browser test), PostgreSQL 15 and
#                                    libpq (rath::pg; the tests start a private server), the pinned npm
#                                    packages (official SDKs, MCP servers,
#                                    conformance suites) and Node 22 in .deps/node22
set -euo pipefail

with_tests=0
for arg in "$@"; do
  case "$arg" in
    --test) with_tests=1 ;;
    *) echo "install-deps: unknown argument '$arg' (expected --test)" >&2; exit 2 ;;
  esac
done

packages=(
  g++ cmake ninja-build pkg-config
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libsimdjson-dev libssl-dev zlib1g-dev libsqlite3-dev openssl ca-certificates graphviz
)
if ((with_tests)); then
  # chromium: the lineage viewer's browser test. PostgreSQL 15 server and libpq: rath::pg
  # and its suites (the tests start a private server).
  packages+=(doctest-dev bubblewrap wrk libcli11-dev chromium postgresql-15 libpq-dev iproute2)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

((with_tests)) || exit 0

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! command -v npm >/dev/null 2>&1; then
  echo "install-deps: npm is missing; the tests against the official SDKs need Node.js and npm" >&2
  exit 1
fi

# npm packages for the integration tests (official SDKs, MCP servers, conformance suites),
# pinned in the lockfile. Re-run when package.json changed since the last install.
npm_dir="$here/tests/integration/npm"
if [[ -f "$npm_dir/package.json" ]]; then
  stamp="$npm_dir/node_modules/.rath-installed"
  if [[ ! -f "$stamp" || "$npm_dir/package-lock.json" -nt "$stamp" || "$npm_dir/package.json" -nt "$stamp" ]]; then
    echo "install-deps: npm ci in tests/integration/npm"
    (cd "$npm_dir" && npm ci --silent --no-audit --no-fund >/dev/null)
    touch "$stamp"
  fi
fi

# Node 22 for suites that need it (the MCP conformance suite): the npm package `node`
# ships the binary; it goes into a project-local folder, never onto PATH.
node22_version=22.23.3
node22="$here/.deps/node22/node_modules/node/bin/node"
if [[ ! -x "$node22" || "$("$node22" --version 2>/dev/null)" != "v$node22_version" ]]; then
  echo "install-deps: node@$node22_version into .deps/node22"
  mkdir -p "$here/.deps/node22"
  npm install --prefix "$here/.deps/node22" --silent --no-audit --no-fund --no-save "node@$node22_version" >/dev/null
  "$node22" --version >/dev/null
fi
