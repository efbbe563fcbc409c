#!/usr/bin/env bash
# The whole GPU check, in one call, on a machine with an NVIDIA GPU:
#   1. build ember for Hopper (sm_90) — or take a bundle built elsewhere (--bundle)
#   2. the CUDA tests: every CUDA kernel against its CPU kernel, GPU sessions
#   3. the models/ builders on the GPU against ONNX Runtime, float32, float16 and bfloat16,
#      and (where torch, torchvision and transformers are installed) their exporters' output
#   4. the GPU benchmark beside PyTorch (eager and torch.compile); its table comes last.
# Usage: scripts/gpu_check.sh [--bundle gpu-bundle.tar.xz] [--quick]
#   --quick: benchmark batch 1 and 8 only, fewer repeats.
#   --profile-models M,N: after the benchmark, `infer --profile` (per-node GPU time from
#   CUDA events) on each of these models at the benchmark's largest batch and inputs.
#   EMBER_BENCH_ARGS: more tools/bench_gpu.py options (e.g. "--models bert --results F"
#   to run the benchmark in pieces where one command may only run for minutes).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bundle="" quick=0 profile_models=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) bundle=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --profile-models) profile_models=$2; shift 2 ;;
    *) echo "usage: $0 [--bundle FILE] [--quick] [--profile-models M,N]" >&2; exit 2 ;;
  esac
done

# cuDNN/cuBLAS may come from Python's nvidia-* wheels rather than the toolkit.
for dir in /usr/local/cuda/lib64 $(python3 - <<'PY' 2>/dev/null
import glob, os, nvidia
for base in nvidia.__path__:
    for lib in glob.glob(os.path.join(base, "*", "lib")):
        print(lib)
PY
); do
  LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$dir"
done

if [ -n "$bundle" ]; then
  prefix=$(mktemp -d)
  tar -C "$prefix" -xJf "$bundle" || { echo "cannot unpack $bundle" >&2; exit 1; }
  bin=$prefix/bin
  LD_LIBRARY_PATH="$prefix/lib:$LD_LIBRARY_PATH"
  tests=$bin
else
  EMBER_CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=90 ${EMBER_CMAKE_ARGS:-}" scripts/build.sh || exit 1
  bin=$root/build
  tests=$root/build/tests
fi
export LD_LIBRARY_PATH EMBER_SOURCE_DIR=$root NVIDIA_TF32_OVERRIDE=0
work=${EMBER_GPU_WORK:-$root/build-gpu}
mkdir -p "$work"

declare -a summary
step() {  # step NAME COMMAND...: runs it, tees its log, records PASS/FAIL
  local name=$1; shift
  echo; echo "=== $name: $*"
  if "$@" 2>&1 | tee "$work/$name.log"; then summary+=("PASS  $name"); else summary+=("FAIL  $name (log: $work/$name.log)"); fi
}

nvidia-smi -L || true
step devices "$bin/infer" --devices
if grep -q "no GPU available" "$work/devices.log"; then
  echo "no usable GPU here (see above): nothing more to check" >&2
  exit 1
fi
step cuda_kernels "$tests/test_ops_cuda" --gtest_brief=1
step cuda_sessions "$tests/test_engine_cuda" --gtest_brief=1
# Every builder but silero_vad's, which fetches its ONNX file from PyPI (GPU machines
# may have no network).
models=default,resnet50,mobilenetv2,mobilenetv3,efficientnet,convnext,vit,bert,gpt2,llama,llama_kv
step models_fp32 python3 tests/models/check_models.py --infer "$bin/infer" --work "$work/models" --device cuda --models $models
step models_fp16 python3 tests/models/check_models.py --infer "$bin/infer" --work "$work/models" --device cuda --precision fp16 --models $models
step models_bf16 python3 tests/models/check_models.py --infer "$bin/infer" --work "$work/models" --device cuda --precision bf16 --models $models
# Exporter output (torchvision's CNN families, transformers' architectures; random
# weights, exported there, nothing downloaded) where torch, torchvision and
# transformers are installed, as on the GPU machines' images.
if python3 -c "import torch, torchvision, transformers" 2>/dev/null; then
  exports=$work/exports
  step export_torchvision python3 tools/export_torchvision.py --out "$exports"
  step export_transformers python3 tools/export_transformers.py --out "$exports"
  for precision in fp32 fp16 bf16; do
    step exports_$precision python3 tests/models/check_onnx_files.py --infer "$bin/infer" --device cuda \
      --precision $precision --dims batch=2,sequence=128 --work "$work/exports-check" "$exports"/*.onnx
  done
else
  echo "torch, torchvision or transformers missing: exporter output not checked"
fi
batches=1,8,64 repeat=50
[ $quick = 1 ] && batches=1,8 repeat=20
step benchmark python3 tools/bench_gpu.py --infer "$bin/infer" --work "$work/models" --batches $batches \
  --repeat $repeat --markdown ${EMBER_BENCH_ARGS:-}

# Where each model's time goes, per node, at the benchmark's inputs (largest batch, fp16).
for model in ${profile_models//,/ }; do
  case_dir=$(ls -d "$work/models/bench_gpu/${model}_b"* 2>/dev/null | sort -V | tail -1)
  [ -n "$case_dir" ] || { summary+=("FAIL  profile_$model (no benchmark inputs)"); continue; }
  inputs=()
  for f in "$case_dir"/*.npy; do inputs+=("$(basename "$f" .npy)=$f"); done
  step "profile_$model" "$bin/infer" --device cuda --precision fp16 --profile --warmup 5 --repeat 20 \
    --trace "$work/profile_$model.json" "$work/models/$model.onnx" "${inputs[@]}"
done

echo; echo "=== summary"
printf '%s\n' "${summary[@]}"
echo; echo "=== GPU benchmark (tools/bench_gpu.py)"
grep '^|' "$work/benchmark.log" || echo "(no table: see $work/benchmark.log)"
for line in "${summary[@]}"; do case "$line" in FAIL*) exit 1 ;; esac; done
