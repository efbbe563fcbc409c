#!/usr/bin/env bash
# Packs ember built here for Hopper (sm_90) into gpu-bundle.tar.xz: the programs, the
# CUDA test binaries, libember and its CUDA module (libember_cuda.so, which libember
# loads from its own folder), and the libraries a GPU machine without Debian's
# packages lacks (oneDNN, protobuf). Carry it to such a machine and run
#   scripts/gpu_check.sh --bundle gpu-bundle.tar.xz
set -euo pipefail
cd "$(dirname "$0")/.."
EMBER_CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=90 ${EMBER_CMAKE_ARGS:-}" scripts/build.sh
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
cp build/infer build/tests/test_ops_cuda build/tests/test_engine_cuda "$stage/bin/"
# libember under its soname (what the programs ask for), the module beside it, and the
# OpenMP wait-policy shim the programs link.
cp -L build/libember.so.0 build/libember_cuda.so build/libember_openmp_spin.so "$stage/lib/"
# Every library ember needs that is neither the C/C++ runtime nor part of CUDA.
for lib in $(ldd build/infer build/libember.so.0 build/libember_cuda.so | awk '/=> \//{print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libstdc++*|libgcc_s*|libember*) ;;
    libcuda*|libcublas*|libcudnn*|libcudart*|libnvrtc*) ;;
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
strip --strip-unneeded "$stage"/lib/*.so* "$stage"/bin/* 2>/dev/null || true
tar -C "$stage" -cJf gpu-bundle.tar.xz bin lib
ls -la gpu-bundle.tar.xz
