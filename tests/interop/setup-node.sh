#!/usr/bin/env bash
# Install the interop tests' JavaScript client (tests/interop/js: the official A2A
# JavaScript SDK, @a2a-js/sdk, and the official MCP TypeScript SDK,
# @modelcontextprotocol/sdk, pinned in package-lock.json) with `npm ci`, from the npm
# registry only. Idempotent: node_modules installed from the current lock file is left
# as it is (a stamp holds the lock file's checksum).
# Without node or npm it says so and does nothing (the tests then skip, saying why).
# Usage: tests/interop/setup-node.sh
set -euo pipefail

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "setup-node.sh: no node/npm on this machine: the JavaScript SDK's interop tests will skip" >&2
  exit 0
fi

js="$(cd "$(dirname "$0")/js" && pwd)"
stamp="$js/node_modules/.package-lock.sha256"
want="$(sha256sum "$js/package-lock.json" | cut -d' ' -f1)"

# One installer at a time (pytest -n: each worker's session fixture runs this).
exec 9>"$js/.npm.lock"
flock 9

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  touch "$stamp"  # up to date (for make, which compares the stamp's time)
  exit 0
fi
(cd "$js" && npm ci --no-audit --no-fund --loglevel=error)
(cd "$js" && node --input-type=module -e 'await import("@a2a-js/sdk/client"); await import("@modelcontextprotocol/sdk/client/index.js")')
echo "$want" > "$stamp"
echo "interop JavaScript client ready: $js/node_modules"
