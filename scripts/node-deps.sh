#!/bin/sh
# Installs the pinned Node packages of examples/usechat (`ai`, `@ai-sdk/react`, React and
# esbuild from npm) when missing or stale, then bundles the useChat page
# (examples/usechat/dist/app.js, about a second, deterministic) when it is missing or
# older than its sources. The tests drive that page and examples/usechat/chat.mjs.
# Without node/npm: fails under CI=true, else the Node tests skip.
set -e
cd "$(dirname "$0")/../examples/usechat"
if ! command -v npm >/dev/null 2>&1; then
  if [ "$CI" = "true" ]; then echo "node/npm are required on CI" >&2; exit 1; fi
  echo "npm not found: the Node client tests will skip"; exit 0
fi
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --silent
fi
bundle=dist/app.js
if [ ! -f "$bundle" ] || [ app.jsx -nt "$bundle" ] || [ build.mjs -nt "$bundle" ] \
    || [ node_modules/.package-lock.json -nt "$bundle" ]; then
  node build.mjs
fi
