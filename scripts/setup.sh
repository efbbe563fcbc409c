#!/usr/bin/env bash
# Installs what ember needs to build, test and benchmark, on a fresh Debian 12 machine.
# Safe to run again: it only installs what is missing.
#   scripts/setup.sh          what the build and the tests need (the sanitizer builds use
#                             g++'s own ASan, UBSan and TSan runtimes: nothing more)
#   scripts/setup.sh --fuzz   also clang with libFuzzer and its OpenMP runtime
#                             (scripts/fuzz.sh); left out otherwise: CI and the normal
#                             build do not need a second compiler (about 150 MB)
set -euo pipefail

# python3-dev: the headers the Python module builds against; python3-venv: the wheel
# check (scripts/check_wheel.sh) installs into a fresh venv.
apt_packages=(cmake g++ ccache libdnnl-dev libonnx-dev libprotobuf-dev protobuf-compiler
              libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
              python3-dev python3-venv)
if [[ ${1:-} == --fuzz ]]; then
  # Debian 12: clang 14; libFuzzer and the sanitizer runtimes are in libclang-rt-dev.
  apt_packages+=(clang libclang-rt-dev libomp-dev)
fi

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

requirements="$(dirname "$0")/requirements.txt"
if ! python3 - "$requirements" <<'PY' 2>/dev/null; then
import sys
from importlib.metadata import version
pins = [l.split("==") for l in open(sys.argv[1]) if "==" in l and not l.startswith("#")]
# "ray[serve]" is the distribution "ray": the extra names what it brings, not a package.
sys.exit(any(version(n.split("[")[0].strip()) != v.strip() for n, v in pins))
PY
  echo "setup: installing the Python packages in $requirements"
  python3 -m pip install -q -r "$requirements"
fi
