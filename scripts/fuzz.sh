#!/usr/bin/env bash
# Builds one libFuzzer target with clang (ASan + UBSan, in build-fuzz/) and runs it.
#   scripts/fuzz.sh TARGET SECONDS [libFuzzer options...]
#   TARGET: npy (the .npy reader), loader (ONNX bytes -> Graph), session (load,
#   optimize, plan and run a mutated model)
# The corpus grows in build-fuzz/corpus/TARGET (seeded from the ONNX backend test
# models, the default model and a few .npy files); crashes, leaks and timeouts land in
# build-fuzz/findings/TARGET/. Replay one with build-fuzz/tests/fuzz/fuzz_TARGET FILE.
# A finding, once fixed, goes to tests/fuzz/regressions/TARGET/, where ctest replays it.
# One process (libFuzzer's plain mode, which is -jobs=1 -workers=1 without the log file):
# CI machines and laptops here have 2 cores, shared.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: scripts/fuzz.sh npy|loader|session SECONDS [libFuzzer options]"
target=${1:?$usage}
seconds=${2:?$usage}
shift 2
case $target in npy | loader | session) ;; *) echo "$usage" >&2; exit 2 ;; esac

./scripts/setup.sh --fuzz
# clang, not g++: libFuzzer is clang's. Sanitize: -O1 -g1, assertions on (CMakeLists.txt).
CXX=clang++ BUILD_DIR=build-fuzz BUILD_TYPE=Sanitize \
  EMBER_CMAKE_ARGS="-DEMBER_FUZZ=ON -DEMBER_TESTS=OFF -DEMBER_CUDA=OFF -DEMBER_PYTHON=OFF -DEMBER_SANITIZE=address,undefined ${EMBER_CMAKE_ARGS:-}" \
  ./scripts/build.sh --target "fuzz_$target"

seeds=build-fuzz/seeds/$target
corpus=build-fuzz/corpus/$target
findings=build-fuzz/findings/$target
mkdir -p "$seeds" "$corpus" "$findings"
if [[ -z $(ls -A "$seeds") ]]; then
  if [[ $target == npy ]]; then
    cp models/default/input.npy "$seeds/default_input.npy"
    python3 - "$seeds" <<'PY'
import sys, numpy as np
d = sys.argv[1]
np.save(f"{d}/f4.npy", np.arange(6, dtype="<f4").reshape(2, 3))
np.save(f"{d}/f8_big_endian.npy", np.arange(4, dtype=">f8"))
np.save(f"{d}/i8_fortran.npy", np.asfortranarray(np.arange(12, dtype="<i8").reshape(3, 4)))
np.save(f"{d}/bool.npy", np.array([True, False, True]))
np.save(f"{d}/f2_scalar.npy", np.array(1.5, dtype="<f2"))
np.save(f"{d}/u1_empty.npy", np.zeros((0, 3), dtype="u1"))
np.save(f"{d}/c8.npy", np.array([1 + 2j], dtype="<c8"))
np.lib.format.write_array(open(f"{d}/v2.npy", "wb"), np.ones((2, 2), dtype="<i4"), version=(2, 0))
PY
  else
    # The ONNX backend test models: about 1,900 small models of every operator.
    tests/conformance/conformance_data.sh build-fuzz/conformance-data >/dev/null
    for m in build-fuzz/conformance-data/*/*/model.onnx; do
      name=${m#build-fuzz/conformance-data/}
      cp "$m" "$seeds/${name//\//_}"
    done
    cp models/default/model.onnx "$seeds/default.onnx"
  fi
fi

source tests/sanitizers/env.sh
# A model may ask for more memory than there is: new then throws (the session target
# accepts std::bad_alloc) instead of ASan aborting.
export ASAN_OPTIONS="$ASAN_OPTIONS:allocator_may_return_null=1"
timeout=10
[[ $target == session ]] && timeout=30
max_len=16384
[[ $target == npy ]] && max_len=4096
exec "build-fuzz/tests/fuzz/fuzz_$target" "$corpus" "$seeds" \
  -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=4096 \
  -max_len="$max_len" -artifact_prefix="$findings/" -print_final_stats=1 "$@"
