#!/bin/sh
# Installs the pinned Node test clients (tests/node, `ai` from npm) when missing or stale.
# Without node/npm: fails under CI=true, else the Node tests skip.
set -e
cd "$(dirname "$0")/../tests/node"
if ! command -v npm >/dev/null 2>&1; then
  if [ "$CI" = "true" ]; then echo "node/npm are required on CI" >&2; exit 1; fi
  echo "npm not found: the Node client tests will skip"; exit 0
fi
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --silent
fi
