#!/usr/bin/env python3
"""The ONNX backend test cases run the way a user runs a model: through `infer` with
.npy files. Each case's inputs (TensorProto, SequenceProto, OptionalProto .pb files)
are saved as numpy saves them (ml_dtypes arrays for bfloat16, float8 and 4-bit types;
a sequence as a folder of 0.npy, 1.npy, ...; an empty optional left out), `infer -o`
writes the outputs, and they are compared with the expected ones as the conformance
runner compares (atol 1e-7 + rtol 1e-3 for floats, 2^-6 for bfloat16, exact otherwise).

    python3 tests/conformance/run_cli.py --infer build/infer --data build/conformance-data [--sets node simple]

Cases of random ops (Bernoulli and the RandomUniformLike of its function body) are
checked as the C++ runner checks them: dtype, shape, values 0 or 1, and with a seed the
same output from a second run; their drawn values are not compared.

The C++ runner (conformance_runner, through the API) is what CI checks and what
docs/conformance.md reports; this one counts what the command line adds or loses.
"""
import argparse
import collections
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper


def escape(name):
    """infer's file name for an output (tools/infer_io.cc escape_file_name)."""
    out = "".join(c if c.isalnum() and c.isascii() or c in "_-" or (c == "." and i > 0) else
                  "".join(f"%{b:02X}" for b in c.encode()) for i, c in enumerate(name))
    return out or "%00"


def read_value(path, type_proto):
    """A .pb test file as a numpy array, a list (sequence) or None (empty optional)."""
    data = open(path, "rb").read()
    if type_proto.HasField("sequence_type"):
        p = onnx.SequenceProto()
        p.ParseFromString(data)
        return numpy_helper.to_list(p)
    if type_proto.HasField("optional_type"):
        p = onnx.OptionalProto()
        p.ParseFromString(data)
        return numpy_helper.to_optional(p)
    p = onnx.TensorProto()
    p.ParseFromString(data)
    return numpy_helper.to_array(p)


def save_value(path, value):
    """What a user hands infer: a .npy file, or a folder of them for a sequence."""
    if isinstance(value, list):
        os.makedirs(path)
        for i, v in enumerate(value):
            save_value(os.path.join(path, str(i)), v)
        return path
    if value.dtype == object:  # strings: onnx reads them as objects, infer takes numpy str arrays
        value = value.astype(str)
    np.save(path + ".npy", value)
    return path + ".npy"


def load_output(path, expected):
    if isinstance(expected, list):
        return [load_output(os.path.join(path, str(i)), e) for i, e in enumerate(expected)]
    if expected is None:
        return None if not os.path.exists(path + ".npy") else np.load(path + ".npy")
    got = np.load(path + ".npy")
    if got.dtype.kind == "V" or (got.dtype != expected.dtype and got.dtype.itemsize == expected.dtype.itemsize
                                 and expected.dtype.kind not in "biufcMO"):
        got = got.view(expected.dtype)  # raw bytes: as np.save wrote ml_dtypes arrays
    return got


def differs(got, want):
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return "sequence length"
        return next((d for d in map(differs, got, want) if d), "")
    if want is None or got is None:
        return "" if got is None and want is None else "optional presence"
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if want.dtype == object:  # strings, which infer writes as a numpy str array
        if got.dtype.kind != "U":
            return f"dtype {got.dtype}, expected strings"
        return "" if np.array_equal(got, want.astype(str)) else "strings differ"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if want.dtype.kind in "fc" or want.dtype.name.startswith(("float8", "bfloat16", "float4")):
        g, w = got.astype(np.float64), want.astype(np.float64)
        rtol = 2.0 ** -6 if want.dtype.name == "bfloat16" else 1e-3  # the ONNX runner allows bfloat16 2 ulp
        with np.errstate(invalid="ignore"):
            ok = (g == w) | (np.isnan(g) & np.isnan(w)) | (np.abs(g - w) <= 1e-7 + rtol * np.abs(w))
        return "" if ok.all() else f"{(~ok).sum()} of {ok.size} values differ"
    as_bytes = lambda x: np.ascontiguousarray(x).reshape(-1).view(np.uint8)
    return "" if np.array_equal(as_bytes(got), as_bytes(want)) else "values differ"


RANDOM_OPS = {"Bernoulli", "RandomUniformLike"}


def draw_differs(got, want):
    """What a random draw must satisfy: the expected shape and dtype, only 0 and 1."""
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    values = got.astype(np.float64)
    return "" if ((values == 0) | (values == 1)).all() else "values other than 0 and 1"


def run_case(infer, case_dir):
    model = onnx.load(os.path.join(case_dir, "model.onnx"), load_external_data=False)
    random_nodes = [n for n in model.graph.node if n.op_type in RANDOM_OPS]
    seeded = all(any(a.name == "seed" for a in n.attribute) for n in random_nodes)
    inputs = [v for v in model.graph.input if v.name not in {i.name for i in model.graph.initializer}]
    sets = sorted(d for d in os.listdir(case_dir) if d.startswith("test_data_set_"))
    if not sets:
        return "failed", "no data set"
    for s in sets:
        data = os.path.join(case_dir, s)
        with tempfile.TemporaryDirectory() as tmp:
            args = []
            for k, v in enumerate(inputs):
                pb = os.path.join(data, f"input_{k}.pb")
                if not os.path.exists(pb):
                    continue
                try:
                    value = read_value(pb, v.type)
                except Exception as e:  # data numpy cannot hold (strings, maps)
                    return "unsupported", f"input data: {e}"
                if value is None:
                    continue
                args.append(f"{v.name}={save_value(os.path.join(tmp, f'in{k}'), value)}")
            runs = 2 if random_nodes and seeded else 1
            first = {}
            for run in range(runs):
                out_dir = os.path.join(tmp, f"out{run}")
                r = subprocess.run([infer, os.path.join(case_dir, "model.onnx"), *args, "--threads", "1", "-o", out_dir],
                                   capture_output=True, text=True, timeout=120)
                if r.returncode != 0:
                    msg = " ".join(r.stderr.split()) or f"exit {r.returncode}"
                    return ("unsupported" if re.search(r"not support|no kernel|no CPU kernel|no numpy dtype", msg)
                            else "failed"), msg[:200]
                for k, v in enumerate(model.graph.output):
                    pb = os.path.join(data, f"output_{k}.pb")
                    want = read_value(pb, v.type)
                    try:
                        got = load_output(os.path.join(out_dir, escape(v.name)), want)
                    except Exception as e:
                        return "failed", f"output {v.name}: {e}"
                    d = draw_differs(got, want) if random_nodes else differs(got, want)
                    if not d and run == 1 and not np.array_equal(got, first[k]):
                        d = "a second run with the same seed drew other values"
                    if d:
                        return "failed", f"output {v.name}: {d}"
                    first[k] = got
    return "passed", ""


def checked(infer, case_dir):
    try:
        return run_case(infer, case_dir)
    except Exception as e:  # a case this script cannot prepare or read is reported, not fatal
        return "failed", f"{type(e).__name__}: {e}"[:200]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--infer", default="build/infer")
    ap.add_argument("--data", default="build/conformance-data")
    ap.add_argument("--sets", nargs="+", default=["node", "simple", "pytorch-converted", "pytorch-operator"])
    ap.add_argument("--filter", default="")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count())
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    for name in a.sets:
        root = os.path.join(a.data, name)
        cases = sorted(c for c in os.listdir(root) if a.filter in c)
        counts = collections.Counter()
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            results = pool.map(lambda c: (c, checked(a.infer, os.path.join(root, c))), cases)
            for case, (status, detail) in results:
                counts[status] += 1
                if a.verbose or status == "failed":
                    print(f"{status:12} {name}/{case} {detail}")
        total = sum(counts.values())
        print(f"{name:18} passed {counts['passed']} / {total}, failed {counts['failed']}, "
              f"unsupported {counts['unsupported']}")


if __name__ == "__main__":
    sys.exit(main())
