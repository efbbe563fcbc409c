#!/usr/bin/env bash
# Configures and builds ember in build/ (Release by default; BUILD_TYPE=Debug to change,
# BUILD_DIR=build-x for another folder, EMBER_CMAKE_ARGS for more cmake options).
set -euo pipefail
cd "$(dirname "$0")/.."
build_type=${BUILD_TYPE:-Release}
build_dir=${BUILD_DIR:-build}
launcher=()
export CCACHE_BASEDIR="$PWD"  # cache hits across clones in other folders
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="$build_type" "${launcher[@]}" ${EMBER_CMAKE_ARGS:-} >/dev/null
cmake --build "$build_dir" -j "$(nproc)" "$@"
