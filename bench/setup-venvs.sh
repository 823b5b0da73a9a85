#!/usr/bin/env bash
# Build the competitors' virtualenvs for the benchmark suite (bench/README.md):
#   .venv-bench-sdk        the official a2a-sdk server (bench/requirements-sdk.txt)
#   .venv-bench-toolnexus  toolnexus serve (bench/requirements-toolnexus.txt)
# Each is separate from .venv (and from each other): the SDK installs a top-level
# "a2a" package that clashes with ours.
#
# Idempotent: a venv built from its current requirements file is left as it is (a
# stamp holds the file's checksum); otherwise it is (re)installed.
# Usage: bench/setup-venvs.sh [sdk|toolnexus ...]   (default: both)
# PYTHON picks the interpreter (default: python3).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
python="${PYTHON:-python3}"

build() {
  local name="$1" check="$2"
  local venv="$root/.venv-bench-$name" requirements="$here/requirements-$name.txt"
  local stamp="$venv/.requirements.sha256" want
  want="$(sha256sum "$requirements" | cut -d' ' -f1)"
  if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  [[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv"
  rm -f "$stamp"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
  # The package must import from the venv (not from this repository).
  (cd / && "$venv/bin/python" -c "$check")
  echo "$want" > "$stamp"
  echo "bench venv ready: $venv"
}

targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(sdk toolnexus)
for target in "${targets[@]}"; do
  case "$target" in
    sdk) build sdk "import a2a.server.routes, a2a.server.tasks.database_task_store, sqlalchemy.ext.asyncio, aiosqlite, uvicorn, uvloop" ;;
    toolnexus) build toolnexus "import toolnexus.serve" ;;
    *) echo "unknown target: $target (expected sdk or toolnexus)" >&2; exit 2 ;;
  esac
done
