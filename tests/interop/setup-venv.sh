#!/usr/bin/env bash
# Build .venv-interop: the virtualenv of the third-party A2A clients the interop tests
# run as subprocesses (the official a2a-sdk and toolnexus). Their top-level "a2a"
# package clashes with ours, so they never go into .venv. With a second argument,
# another requirements file: requirements-v03.txt (a2a-sdk 0.3) goes in .venv-interop03,
# requirements-mcp.txt (the MCP Python SDK, mcp 2.x; a2a-sdk pins mcp 1.x) in .venv-mcp.
#
# Idempotent: a venv built from the current requirements is left as it is (a stamp
# holds the requirements' checksum); otherwise it is (re)installed.
# Usage: tests/interop/setup-venv.sh [VENV_DIR [REQUIREMENTS]]
#   (default: <repo>/.venv-interop from tests/interop/requirements.txt)
# PYTHON picks the interpreter (default: python3).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${1:-$root/.venv-interop}"
python="${PYTHON:-python3}"
requirements="$(realpath "${2:-$here/requirements.txt}")"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"

# One builder at a time (pytest -n: each worker's session fixture runs this).
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9

if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  touch "$stamp"  # up to date (for make, which compares the stamp's time)
  exit 0
fi

if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv"
fi
rm -f "$stamp"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
# The clients must import from the venv (not from this repository).
if [[ "$(basename "$requirements")" == requirements-v03.txt ]]; then
  check="import a2a.client.transports.rest"  # a2a-sdk 0.3
elif [[ "$(basename "$requirements")" == requirements-mcp.txt ]]; then
  check="import mcp.client.streamable_http, mcp_types.version"  # the MCP Python SDK
else
  check="import a2a.client, a2a.compat.v0_3.jsonrpc_transport, a2a.client.transports.grpc, toolnexus.a2a, fasta2a.client"
fi
(cd / && "$venv/bin/python" -c "$check")
echo "$want" > "$stamp"
echo "interop venv ready: $venv"
