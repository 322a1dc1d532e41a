#!/bin/sh
# Builds the vendor's reference MCP server into benchmarks/.reference/ (gitignored) for
# benchmarks.production_path: a copy of the snapshot `fetch github:InvoiceBox/invoicebox-mcp-server`
# leaves under /work/.mirror, with one line patched so its account cap (100 requests per 30 s)
# no longer bounds a benchmark, as the gateway's own budget is lifted for the run.
#   sh benchmarks/reference_setup.sh [/path/to/mirror/repo]
set -eu
MIRROR=${1:-/work/.mirror/InvoiceBox+invoicebox-mcp-server/repo}
DEST=$(cd "$(dirname "$0")" && pwd)/.reference
rm -rf "$DEST" && mkdir -p "$DEST"
git --git-dir="$MIRROR" archive HEAD 2>/dev/null | tar -x -C "$DEST" \
  || git -C "$MIRROR" archive HEAD | tar -x -C "$DEST"
# The one-line patch: the account limit the server caps INVOICEBOX_RATE_LIMIT to.
sed -i 's/^export const ACCOUNT_LIMIT: RateLimit = { requests: 100, windowSeconds: 30 };$/export const ACCOUNT_LIMIT: RateLimit = { requests: 1_000_000_000, windowSeconds: 30 };/' \
  "$DEST/src/core/rateLimiter.ts"
grep -q "requests: 1_000_000_000" "$DEST/src/core/rateLimiter.ts" || { echo "patch did not apply" >&2; exit 1; }
cd "$DEST"
npm ci --no-audit --no-fund || npm install --no-audit --no-fund
npm run build
test -f dist/index.js && echo "reference built: $DEST/dist/index.js"
