#!/usr/bin/env bash
# Installs the build tree to a fresh prefix and uses it the way a service would:
# the installed files and sonames, the installed infer (finds libember through its
# RPATH alone), a CMake project with find_package(ember 0.4) (tests/install/consumer),
# and the same main.cc compiled with pkg-config's flags.
# Usage: consumer_uses_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
cxx=${CXX:-c++}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
model=$source/models/default/model.onnx
input=$source/models/default/input.npy
expected="logits [1, 10]"
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
unset LD_LIBRARY_PATH  # everything below must find libember by itself

echo "== installed files"
for f in bin/infer lib/libember.so lib/libember.so.0 lib/cmake/ember/emberConfig.cmake \
         lib/cmake/ember/emberConfigVersion.cmake lib/cmake/ember/emberTargets.cmake \
         lib/pkgconfig/ember.pc include/ember/ember.h include/ember/core/tensor.h; do
  [ -e "$prefix/$f" ] || fail "$f is not installed"
done
real=$(readlink -f "$prefix/lib/libember.so")
[[ "$(basename "$real")" =~ ^libember\.so\.0\.[0-9]+\.[0-9]+$ ]] || fail "libember.so points to $real, expected libember.so.0.MINOR.PATCH"
readelf -d "$real" | grep -q 'SONAME.*\[libember\.so\.0\]' || fail "libember's soname is not libember.so.0: $(readelf -d "$real" | grep SONAME)"
echo "$(basename "$real"), soname libember.so.0"

echo "== libember needs no CUDA library; the CUDA module is installed beside it"
if readelf -d "$real" | grep NEEDED | grep -Ei 'cuda|cublas|cudnn'; then
  fail "libember has a DT_NEEDED on a CUDA library (above): a CPU-only machine could not load it"
fi
with_cuda=0
[ -e "$build/libember_cuda.so" ] && with_cuda=1  # a build with the CUDA backend
if [ $with_cuda = 1 ]; then
  [ -e "$prefix/lib/libember_cuda.so" ] || fail "lib/libember_cuda.so is not installed"
  readelf -d "$prefix/lib/libember_cuda.so" | grep -q 'NEEDED.*\[libember\.so\.0\]' || fail "libember_cuda.so does not link libember.so.0"
  echo "libember_cuda.so: $(readelf -d "$prefix/lib/libember_cuda.so" | grep NEEDED | grep -Eo 'lib(ember|cudart|cublas|cudnn)[^]]*' | tr '\n' ' ')"
fi

echo "== the package's interface names no private dependency"
if grep -En 'protobuf|dnnl|nlohmann|OpenMP|ember_onnx_proto|EMBER_WITH_CUDA|cuda|cudnn|cublas' \
     "$prefix"/lib/cmake/ember/*.cmake "$prefix/lib/pkgconfig/ember.pc" | grep -Ev '^[^:]+:[0-9]+:[[:space:]]*#'; then
  fail "a private dependency leaks into the installed interface (above)"
fi

echo "== installed infer (RUNPATH \$ORIGIN/../lib)"
readelf -d "$prefix/bin/infer" | grep -Eq '(RUNPATH|RPATH).*\$ORIGIN/\.\./lib' || fail "infer has no \$ORIGIN/../lib RUNPATH"
loaded=$(ldd "$prefix/bin/infer" | awk '$1 == "libember.so.0" {print $3}')
[ -n "$loaded" ] && [ "$(readlink -f "$loaded")" = "$real" ] ||
  fail "installed infer does not load the installed libember: $(ldd "$prefix/bin/infer" | grep ember)"
"$prefix/bin/infer" "$model" "$input" >"$work/infer.log" 2>&1 || { cat "$work/infer.log"; fail "installed infer failed"; }
if [ $with_cuda = 1 ]; then
  # The installed libember finds the installed module (a GPU may still be missing).
  devices=$("$prefix/bin/infer" --devices)
  echo "$devices"
  case "$devices" in *"could not be loaded"*) fail "the installed libember did not load the installed module" ;; esac
fi

echo "== without the CUDA module (a machine without CUDA): the CPU runs, CUDA says why"
mkdir "$work/no-cuda" && cp -a "$prefix/bin" "$prefix/lib" "$work/no-cuda/"
rm -f "$work/no-cuda/lib/libember_cuda.so"
"$work/no-cuda/bin/infer" "$model" "$input" >"$work/infer.log" 2>&1 || { cat "$work/infer.log"; fail "infer without the module failed on the CPU"; }
set +e
"$work/no-cuda/bin/infer" --device cuda "$model" "$input" >"$work/cuda.out" 2>"$work/cuda.err"
status=$?
set -e
cat "$work/cuda.err"
[ $status = 1 ] || fail "infer --device cuda without the module exited $status, expected 1"
[ "$(wc -l <"$work/cuda.err")" = 1 ] || fail "expected one line on stderr"
if [ $with_cuda = 1 ]; then
  grep -q "libember_cuda.so: cannot open shared object file" "$work/cuda.err" || fail "the error does not name the missing module"
fi

echo "== CMake consumer: find_package(ember 0.4), ember::ember"
cmake -S "$source/tests/install/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configuring the consumer"; }
cmake --build "$work/consumer" >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "building the consumer"; }
out=$("$work/consumer/app" "$model" "$input") || fail "the CMake consumer failed: $out"
echo "$out"
[ "$out" = "$expected" ] || fail "the CMake consumer printed '$out', expected '$expected'"

echo "== pkg-config consumer"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
[ "$(pkg-config --modversion ember)" = "$(basename "$real" | sed 's/^libember\.so\.//')" ] || fail "pkg-config version $(pkg-config --modversion ember)"
# shellcheck disable=SC2046  # pkg-config's flags are meant to split
"$cxx" -std=c++20 "$source/tests/install/consumer/main.cc" -o "$work/app_pc" $(pkg-config --cflags --libs ember) ||
  fail "compiling with pkg-config's flags"
out=$(LD_LIBRARY_PATH=$prefix/lib "$work/app_pc" "$model" "$input") || fail "the pkg-config consumer failed: $out"
echo "$out"
[ "$out" = "$expected" ] || fail "the pkg-config consumer printed '$out', expected '$expected'"
echo "PASS"
