#!/usr/bin/env bash
# The README's first command: install what is missing, build, run the default model.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh --target infer
./build/infer models/default/model.onnx models/default/input.npy -o build/default-out "$@"
