// Bundles app.jsx (React + @ai-sdk/react + ai, pinned in package-lock.json) into
// dist/app.js with esbuild: `npm ci && npm run build`. Deterministic: the same inputs give
// the same bytes (no timestamps, no absolute paths). Run by scripts/node-deps.sh and, when
// the bundle is missing or stale, by tests/test_web_usechat.py.
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const here = dirname(fileURLToPath(import.meta.url));
await build({
  entryPoints: [join(here, "app.jsx")],
  outfile: join(here, "dist", "app.js"),
  absWorkingDir: here,
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2020",
  jsx: "automatic",
  minify: true,
  legalComments: "none",
  define: { "process.env.NODE_ENV": '"production"' },
  logLevel: "warning",
});
