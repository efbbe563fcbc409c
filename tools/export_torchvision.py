#!/usr/bin/env python3
"""Exports torchvision's CNN families to ONNX, untrained, for tools/bench.py to time.

    export_torchvision.py [--out DIR] [--opset 17] [NAME ...]

The models in models/ are ember's own builders; users run what exporters write, and
families there are none of (DenseNet's concatenations, GoogLeNet/Inception's branches,
ResNeXt/RegNet's grouped convolutions, ShuffleNet's channel shuffle, Swin's windows)
are where a planner or kernel gap shows. Weights are random (weights=None: nothing is
downloaded, and speed does not depend on them); the batch dim is symbolic, "batch".
Then, for example:

    python3 tools/bench.py --infer build/infer --threads 2 --dims batch=1 DIR/*.onnx

Needs torch and torchvision, which ember does not otherwise depend on: from PyPI,
`pip install torch torchvision onnxscript` (about 5 GB with CUDA's libraries, in a
virtual environment of its own if you like; the export runs on the CPU).
"""
import argparse
import os

# One or two of each family, small enough to time in seconds on 2 cores.
DEFAULT_MODELS = [
    "resnet18", "resnext50_32x4d", "wide_resnet50_2", "regnet_y_800mf", "regnet_x_1_6gf",
    "shufflenet_v2_x1_0", "densenet121", "squeezenet1_1", "googlenet", "inception_v3",
    "mnasnet1_0", "efficientnet_v2_s", "swin_t",
]


def export(name, out_dir, opset):
    import torch
    import torchvision.models as tvm

    torch.manual_seed(0)
    extra = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
    model = getattr(tvm, name)(weights=None, **extra).eval()
    size = 299 if name == "inception_v3" else 224
    path = os.path.join(out_dir, name + ".onnx")
    torch.onnx.export(model, torch.randn(1, 3, size, size), path, opset_version=opset, input_names=["input"],
                      output_names=["output"], dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", default=DEFAULT_MODELS, help="torchvision.models names")
    parser.add_argument("--out", default=os.path.join("build", "torchvision"))
    parser.add_argument("--opset", type=int, default=17)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.names:
        print(export(name, args.out, args.opset), flush=True)


if __name__ == "__main__":
    main()
