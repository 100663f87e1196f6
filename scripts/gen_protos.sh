#!/usr/bin/env bash
# Regenerates the committed protobuf/gRPC modules from broker_core/protocol/*.proto.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m grpc_tools.protoc -I . --python_out=. --pyi_out=. --grpc_python_out=. \
  broker_core/protocol/pulsar_api.proto broker_core/protocol/broker.proto \
  broker_core/protocol/pulsar_commands.proto
