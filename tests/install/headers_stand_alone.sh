#!/usr/bin/env bash
# Every installed public header compiles on its own with only the install prefix's
# include directory, and includes nothing but <ember/...> and the C++/C standard
# library: a leaked internal header ("ops/kernel.h") fails to compile, a leaked
# dependency (<oneapi/dnnl/...>, <google/protobuf/...>, <cuda_runtime.h>) is found in
# the compiler's dependency list.
# Usage: headers_stand_alone.sh BUILD_DIR
set -euo pipefail
build=$1
cxx=${CXX:-c++}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null

failures=0
count=0
while IFS= read -r header; do
  name=${header#"$prefix/include/"}
  count=$((count + 1))
  echo "#include <$name>" >"$work/one.cc"
  if ! "$cxx" -std=c++20 -fsyntax-only -I "$prefix/include" "$work/one.cc" 2>"$work/err"; then
    echo "FAIL: <$name> does not compile alone with -I $prefix/include:"; cat "$work/err"
    failures=$((failures + 1))
    continue
  fi
  # What it pulled in: each file is the prefix's, or the compiler's and C library's.
  "$cxx" -std=c++20 -M -I "$prefix/include" "$work/one.cc" | tr ' \\' '\n\n' | sed '/^$/d;/:$/d' |
    while IFS= read -r dep; do
      case "$dep" in
        "$work/one.cc" | "$prefix"/include/ember/*) ;;
        /usr/include/c++/* | /usr/lib/gcc/* | /usr/include/x86_64-linux-gnu/* | /usr/include/linux/* | /usr/include/asm*) ;;
        /usr/include/*/*) echo "$dep" ;;  # a library's folder (oneapi/, google/, ...)
        /usr/include/*) ;;                # the C library's own headers
        *) echo "$dep" ;;
      esac
    done >"$work/leaks"
  if [ -s "$work/leaks" ]; then
    echo "FAIL: <$name> includes headers from outside ember and the standard library:"; cat "$work/leaks"
    failures=$((failures + 1))
  fi
done < <(find "$prefix/include" -name '*.h' | sort)

[ "$count" -gt 0 ] || { echo "FAIL: no headers installed under $prefix/include"; exit 1; }
echo "$count installed headers checked, $failures failing"
[ "$failures" -eq 0 ]
