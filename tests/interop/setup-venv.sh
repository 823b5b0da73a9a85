#!/usr/bin/env bash
# Build .venv-interop: the virtualenv of the third-party A2A clients the interop tests
# run as subprocesses (the official a2a-sdk and toolnexus). Their top-level "a2a"
# package clashes with ours, so they never go into .venv.
#
# Idempotent: a venv built from the current tests/interop/requirements.txt is left
# as it is (a stamp holds the requirements' checksum); otherwise it is (re)installed.
# Usage: tests/interop/setup-venv.sh [VENV_DIR]   (default: <repo>/.venv-interop)
# PYTHON picks the interpreter (default: python3).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${1:-$root/.venv-interop}"
python="${PYTHON:-python3}"
requirements="$here/requirements.txt"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"

if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  touch "$stamp"  # up to date (for make, which compares the stamp's time)
  exit 0
fi

if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv"
fi
rm -f "$stamp"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
# The SDK and toolnexus must import from the venv (not from this repository).
(cd / && "$venv/bin/python" -c "import a2a.client, a2a.compat.v0_3.jsonrpc_transport, toolnexus.a2a")
echo "$want" > "$stamp"
echo "interop venv ready: $venv"
