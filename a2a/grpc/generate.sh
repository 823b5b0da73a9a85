#!/usr/bin/env bash
# Regenerate a2a_pb2.py, a2a_pb2.pyi and a2a_pb2_grpc.py from a2a.proto (the A2A v1.1
# draft's, copied verbatim: v1.0's plus the task generation and timeline fields, so a v1.0 client's
# messages read the same) with grpcio-tools; the generated files are committed
# (as the official SDK does), so installing the `grpc` extra needs no compiler.
# google/api/*.proto come from googleapis-common-protos, google/protobuf/*.proto from
# grpcio-tools. The committed files were made with grpcio-tools 1.73.1 (protobuf 6.31
# gencode, so they run on protobuf 6.31+ and grpcio 1.73.1+: the `grpc` extra's bounds)
# from a2a.proto of the A2A v1.1 draft, dev-1.1 after pull request 2129 (the timeline)
# (sha256 6b4185659e832adc84dd334908122e4feba0a9df417e4aaad6db6748bc2d65af).
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
