#!/usr/bin/env bash
# The Python package as users get it: `pip wheel .` from the source tree, the wheel
# installed into a fresh virtual environment, `import ember` run from outside the tree.
# Checks that the extension finds libember, libember_openmp_spin (and libember_cuda)
# inside the wheel through their RPATH ($ORIGIN), not in the build tree.
#   scripts/check_wheel.sh [WORK_DIR]      (default build/wheel-check; ctest -L wheel)
# Builds in build-wheel/ (pyproject.toml) without build isolation: the pinned
# scikit-build-core and nanobind of scripts/requirements.txt, no download. With ccache
# warm from scripts/build.sh it is mostly cache hits (16 s measured on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(realpath -m "${1:-build/wheel-check}")
rm -rf "$work"
mkdir -p "$work"
export CCACHE_BASEDIR="$PWD"
start=$SECONDS
python3 -m pip wheel . --no-build-isolation --no-deps -q -w "$work/dist"
echo "check_wheel: wheel built in $((SECONDS - start)) s: $(ls "$work"/dist)"

# numpy from the system's site-packages; ember only from the wheel.
python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install -q --no-deps --no-index "$work"/dist/ember-*.whl
cd "$work"
venv/bin/python - "$OLDPWD/models/default" <<'PY'
import os, subprocess, sys
import numpy as np
import ember

package = os.path.dirname(ember.__file__)
assert package.startswith(sys.prefix), f"ember imported from {package}, not the venv"
extension = next(f for f in os.listdir(package) if f.startswith("_ember") and f.endswith(".so"))
ldd = subprocess.run(["ldd", os.path.join(package, extension)], capture_output=True, text=True).stdout
libember = next(line for line in ldd.splitlines() if "libember.so" in line)
assert os.path.join(package, "libember.so") in libember, f"libember not from the wheel: {libember.strip()}"
spin = next(line for line in ldd.splitlines() if "libember_openmp_spin.so" in line)
assert os.path.join(package, "libember_openmp_spin.so") in spin, f"libember_openmp_spin not from the wheel: {spin.strip()}"
assert "not found" not in ldd, ldd

model, x = os.path.join(sys.argv[1], "model.onnx"), np.load(os.path.join(sys.argv[1], "input.npy"))
(logits,) = ember.Session(model).run(None, {"input": x})
assert logits.shape == (1, 10) and np.isfinite(logits).all()
cuda = os.path.exists(os.path.join(package, "libember_cuda.so"))
print(f"check_wheel: ok: ember {ember.__version__} from {package}, {libember.strip()}, "
      f"devices {ember.devices()}, libember_cuda {'in' if cuda else 'not in'} the wheel")
PY
