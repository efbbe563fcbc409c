#!/usr/bin/env bash
# Configures and builds ember in build/ (Release by default; BUILD_TYPE=Debug to change).
set -euo pipefail
cd "$(dirname "$0")/.."
build_type=${BUILD_TYPE:-Release}
launcher=()
export CCACHE_BASEDIR="$PWD"  # cache hits across clones in other folders
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S . -B build -DCMAKE_BUILD_TYPE="$build_type" "${launcher[@]}" ${EMBER_CMAKE_ARGS:-} >/dev/null
cmake --build build -j "$(nproc)" "$@"
