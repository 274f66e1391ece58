#!/usr/bin/env bash
# Installs whatever rath needs that is missing on a Debian 12 machine (run as root).
# Idempotent and quiet when everything is already present.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libsimdjson-dev libssl-dev zlib1g-dev libsqlite3-dev openssl ca-certificates doctest-dev
  bubblewrap graphviz wrk
)

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

# npm packages for the integration tests against the official SDKs (pinned in the lockfile).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -f "$here/tests/integration/npm/package.json" ]] && command -v npm >/dev/null 2>&1; then
  if [[ ! -d "$here/tests/integration/npm/node_modules" ]]; then
    echo "install-deps: npm ci in tests/integration/npm"
    (cd "$here/tests/integration/npm" && npm ci --silent --no-audit --no-fund >/dev/null)
  fi
fi
