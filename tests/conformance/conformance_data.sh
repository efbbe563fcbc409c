#!/usr/bin/env bash
# Usage: conformance_data.sh OUTDIR
# Puts the ONNX backend test data where conformance_runner reads it: OUTDIR/node is
# generated from the installed onnx package (once per onnx version: OUTDIR/node.stamp),
# OUTDIR/{simple,pytorch-converted,pytorch-operator} link to the sets onnx ships.
set -euo pipefail
out=${1:?usage: conformance_data.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"

version=$(python3 -c 'import onnx; print(onnx.__version__)')
if [[ ! -d $out/node || ! -f $out/node.stamp || $(cat "$out/node.stamp") != "$version" ]]; then
  echo "conformance_data: generating the node cases of onnx $version into $out/node"
  rm -rf "$out/node" "$out/node.stamp" "$out/.node-tmp"
  python3 "$here/generate_node_data.py" "$out/.node-tmp"
  mv "$out/.node-tmp/node" "$out/node"
  rm -rf "$out/.node-tmp"
  echo "$version" > "$out/node.stamp"
fi

shipped=$(python3 -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "backend/test/data"))')
for set in simple pytorch-converted pytorch-operator; do
  ln -sfn "$shipped/$set" "$out/$set"
done
