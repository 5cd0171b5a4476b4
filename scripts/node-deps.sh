#!/bin/sh
# Installs the pinned Node test clients (tests/node: `ai`, `@ai-sdk/react`, React and
# esbuild from npm) when missing or stale, then bundles the useChat test page
# (tests/node/usechat/dist/app.js, about a second, deterministic) when it is missing or
# older than its sources. Without node/npm: fails under CI=true, else the Node tests skip.
set -e
cd "$(dirname "$0")/../tests/node"
if ! command -v npm >/dev/null 2>&1; then
  if [ "$CI" = "true" ]; then echo "node/npm are required on CI" >&2; exit 1; fi
  echo "npm not found: the Node client tests will skip"; exit 0
fi
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --silent
fi
bundle=usechat/dist/app.js
if [ ! -f "$bundle" ] || [ usechat/app.jsx -nt "$bundle" ] || [ usechat/build.mjs -nt "$bundle" ] \
    || [ node_modules/.package-lock.json -nt "$bundle" ]; then
  node usechat/build.mjs
fi
