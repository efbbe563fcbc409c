#!/usr/bin/env bash
# Installs what ember needs to build, test and benchmark, on a fresh Debian 12 machine.
# Safe to run again: it only installs what is missing.
#   scripts/setup.sh          what the build and the tests need (the sanitizer builds use
#                             g++'s own ASan, UBSan and TSan runtimes: nothing more)
#   scripts/setup.sh --fuzz   also clang with libFuzzer and its OpenMP runtime
#                             (scripts/fuzz.sh); left out otherwise: CI and the normal
#                             build do not need a second compiler (about 150 MB)
#   scripts/setup.sh --browser  also Debian's headless Chromium (chromium-headless-shell,
#                             without recommends: about 310 MB), in which a test renders
#                             infer --report's page (scripts/test.sh, and so CI, asks for
#                             it); without it that test skips, saying so
# The flags combine: scripts/setup.sh --fuzz --browser.
set -euo pipefail

# python3-dev: the headers the Python module builds against; python3-venv: the wheel
# check (scripts/check_wheel.sh) installs into a fresh venv. The image libraries are
# ImageDecoder's codecs (libjpeg-turbo, libpng, libtiff, libwebp, OpenJPEG; stb_image
# for BMP and PNM, which none of those reads); without one, that format is refused.
# libre2-dev: RegexFullMatch and Tokenizer (the spec names RE2's syntax).
apt_packages=(cmake g++ ccache libdnnl-dev libonnx-dev libprotobuf-dev protobuf-compiler
              libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
              python3-dev python3-venv libre2-dev
              libjpeg62-turbo-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev libstb-dev)
lean_packages=()  # installed without their recommended packages
for flag in "$@"; do
  case $flag in
    # Debian 12: clang 14; libFuzzer and the sanitizer runtimes are in libclang-rt-dev.
    --fuzz) apt_packages+=(clang libclang-rt-dev libomp-dev) ;;
    # The headless build alone: the full chromium package is about 480 MB with its desktop parts.
    --browser) lean_packages+=(chromium-headless-shell) ;;
    *) echo "usage: scripts/setup.sh [--fuzz] [--browser]" >&2; exit 2 ;;
  esac
done

# Installs those of the packages named that are missing; "$1" is more apt-get options.
install_missing() {
  local options=$1 missing=() p
  shift
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  # shellcheck disable=SC2086  # $options: zero or more words
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $options "${missing[@]}" >/dev/null
}
install_missing "" "${apt_packages[@]}"
((${#lean_packages[@]} == 0)) || install_missing --no-install-recommends "${lean_packages[@]}"

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
