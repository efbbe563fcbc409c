#!/usr/bin/env bash
# Usage: run_conformance.sh DATA_DIR RUNNER [runner options...]
# What ctest runs: makes sure the test data is there, then runs the conformance runner.
set -euo pipefail
data=${1:?usage: run_conformance.sh DATA_DIR RUNNER [options]}
runner=${2:?usage: run_conformance.sh DATA_DIR RUNNER [options]}
shift 2
"$(dirname "$0")/conformance_data.sh" "$data"
exec "$runner" --data "$data" "$@"
