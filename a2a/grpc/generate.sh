#!/usr/bin/env bash
# Regenerate a2a_pb2.py, a2a_pb2.pyi and a2a_pb2_grpc.py from a2a.proto (the A2A v1.0
# specification's, copied verbatim) with grpcio-tools; the generated files are committed
# (as the official SDK does), so installing the `grpc` extra needs no compiler.
# google/api/*.proto come from googleapis-common-protos, google/protobuf/*.proto from
# grpcio-tools. The committed files were made with grpcio-tools 1.73.1 (protobuf 6.31
# gencode, so they run on protobuf 6.31+ and grpcio 1.73.1+: the `grpc` extra's bounds)
# from a2a.proto of A2A v1.0 (sha256 e195bf96ab630c69797851970203e1b2b6b19528f2e9803b7d904b91a5104016).
# A newer grpcio-tools raises both bounds: change the extra with it.
# Usage: a2a/grpc/generate.sh [PYTHON] (default: .venv/bin/python; one with grpcio-tools)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${1:-.venv/bin/python}"
site="$("$python" -c 'import google.api, os; print(os.path.dirname(os.path.dirname(google.api.__path__[0])))')"
tools="$("$python" -c 'import grpc_tools, os; print(os.path.join(grpc_tools.__path__[0], "_proto"))')"
cd "$here"
"$python" -m grpc_tools.protoc -I. -I"$site" -I"$tools" \
  --python_out=. --pyi_out=. --grpc_python_out=. a2a.proto
# The service module imports the messages as a top-level module: make it relative.
sed -i 's/^import a2a_pb2 as a2a__pb2$/from . import a2a_pb2 as a2a__pb2/' a2a_pb2_grpc.py
