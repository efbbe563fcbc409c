#!/usr/bin/env bash
# The README's second command (and CI's): install what is missing, build, run every test.
#   scripts/test.sh [ctest options]
#   scripts/test.sh --sanitize address,undefined [ctest options]   (in build-asan/)
#   scripts/test.sh --sanitize thread [ctest options]              (in build-tsan/)
# A sanitizer build has its own folder, so it never disturbs build/. It leaves out the
# CUDA backend (nvcc takes no -fsanitize) and the Python module (an instrumented
# extension cannot load into an uninstrumented python3), and keeps assertions on (-O1 -g1, no NDEBUG):
# a sanitizer run is a hunt for bugs, and a failed assertion is one.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=""
if [[ ${1:-} == --sanitize ]]; then
  sanitize=${2:?usage: scripts/test.sh --sanitize address,undefined|thread [ctest options]}
  shift 2
fi
# --browser: the headless Chromium that renders infer --report's page in a test (it
# would skip without it; CI runs it).
./scripts/setup.sh --browser
if [[ -z $sanitize ]]; then
  ./scripts/build.sh
  cd build
  exec ctest --output-on-failure -j "$(nproc)" "$@"
fi

case $sanitize in
  address,undefined | undefined,address | address) build_dir=build-asan ;;
  thread) build_dir=build-tsan ;;
  *) build_dir=build-san-${sanitize//,/-} ;;
esac
BUILD_DIR=$build_dir BUILD_TYPE=Sanitize \
  EMBER_CMAKE_ARGS="-DEMBER_SANITIZE=$sanitize -DEMBER_CUDA=OFF -DEMBER_PYTHON=OFF ${EMBER_CMAKE_ARGS:-}" \
  ./scripts/build.sh
# shellcheck source=tests/sanitizers/env.sh
source tests/sanitizers/env.sh
cd "$build_dir"
exec ctest --output-on-failure -j "$(nproc)" "$@"
