#!/usr/bin/env python3
"""ember on a GPU beside PyTorch (eager and torch.compile) on the same graph, same GPU, same run.

    bench_gpu.py [--infer build/infer] [--work build/models]
                 [--models resnet50,mobilenetv2,vit,bert,gpt2,...] [--batches 1,8,64]
                 [--precisions fp32,fp16[,bf16]] [--seq 128] [--repeat R] [--warmup W]
                 [--io host|device] [--no-compile] [--compile-mode MODE]
                 [--no-cuda-graph] [--markdown]
                 [--results FILE.jsonl] [--table-from FILE.jsonl ...] [--device cuda|cpu]
                 [--dry-run]

For each (model, batch, precision):
- ember: `infer --device cuda --precision P --cuda-graph --warmup W --repeat R
  --summary-json F model.onnx name=in.npy ...` (inputs as tools/bench.py makes them:
  the model's make_inputs(batch, seq, default_rng(4321 + batch)), saved as .npy). If
  infer refuses --cuda-graph, it is run again without it and the cell says so; any other
  refusal (e.g. --precision fp16) becomes an error cell and the run goes on.
- PyTorch eager: tools/onnx_torch.py's OnnxModule (the same ONNX graph, one torch op per
  node; half=True for fp16: float16 weights and activations, float32 outputs), under
  torch.no_grad(), TF32 off for matmul and cuDNN and float16 GEMMs reducing in float32
  (allow_fp16_reduced_precision_reduction off: ember's precision), cudnn.benchmark on
  (fixed shapes: cuDNN picks its fastest algorithms, as ember picks at plan time).
  The module reuses its shape arithmetic for repeated input shapes, so eager pays only
  the tensor ops' Python (about 450 of them for BERT and GPT-2), like a hand-written model.
- torch.compile(module, dynamic=False) (--compile-mode, default "default";
  torch._dynamo.reset() first, so every case compiles for its own static shapes). Any
  failure: a "compile failed [n]" cell, the reason in note n under the table.
Each timed run, by default (--io host), is what infer's timed run is: inputs from host
memory copied to the GPU, the model, outputs copied back to host memory (GPT-2's float32
logits at batch 64 are 1.6 GB, so that row is mostly the copy, on both sides).
--io device times the model alone on both sides: PyTorch's inputs are put on the GPU
once and each run is the forward plus a synchronize; infer runs with `--io device`
(inputs and outputs copied to the GPU once, Session::to_device).
Latency is the p50 of R timed runs after W warm-up runs (nearest-rank percentile, as
infer computes it); throughput = batch / p50; ratio = PyTorch p50 / ember p50, so > 1
means ember is faster. Without --repeat, R is what fits in ~3 s of PyTorch eager time
(10 to 200), and the same R is used for all three.

Long runs: --results FILE appends one JSON line per case as it finishes, and
--table-from FILE [FILE ...] prints the table from such lines without running anything,
so a benchmark can be run in pieces (e.g. one model per command) and printed once.
--dry-run prints what would run (commands, cases) without timing anything, and needs
neither a GPU nor PyTorch. --device cpu runs everything on the CPU (both ember and
PyTorch; no CUDA graph) to exercise this script without a GPU: those numbers mean
nothing. Benchmarks are not tests: nothing here asserts a time.
"""
import argparse
import importlib
import json
import os
import platform
import shlex
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [HERE, os.path.join(REPO, "models"), os.path.join(REPO, "tests", "models")]

from check_models import escape_name  # noqa: E402  (infer's file-name escaping)

# tools/bench.py imports onnxruntime at its top; the GPU machine has it, and the
# percentile must be the same function in both benchmarks.
from bench import SEED, build_type_of, percentile  # noqa: E402

# What a run times by default (scripts/gpu_check.sh's benchmark), and every builder it can.
DEFAULT_MODELS = ("resnet50", "mobilenetv2", "vit", "bert", "gpt2")
MODELS = DEFAULT_MODELS + ("mobilenetv3", "efficientnet", "convnext", "llama")
TEXT_MODELS = ("bert", "gpt2", "llama")
PRECISIONS = ("fp32", "fp16", "bf16")
DEFAULT_WARMUP = 10
TIME_BUDGET_S = 3.0
MIN_REPEAT, MAX_REPEAT = 10, 200
INFER_TIMEOUT_S = 900
ERROR_LINES = 3  # of a failure's message, in the notes under the table


# --- PyTorch side ----------------------------------------------------------------------

def import_torch():
    try:
        import torch
        return torch, None
    except ImportError as e:
        return None, str(e)


def sync(torch, device):
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def time_torch(torch, fn, host_inputs, device, io, warmup, repeat):
    """Times fn(*inputs); returns the per-run milliseconds.

    io "host": each run copies the host inputs to the device, runs, and copies every output
    back to host memory (.cpu(), which waits for the GPU). io "device": inputs are put on
    the device once; each run is the forward plus a synchronize."""
    resident = [x.to(device) for x in host_inputs]

    def once():
        if io == "host":
            outputs = fn(*[x.to(device, non_blocking=False) for x in host_inputs])
            for o in outputs:
                o.cpu()
        else:
            fn(*resident)
            sync(torch, device)

    ms = []
    with torch.no_grad():
        for _ in range(warmup):
            once()
        sync(torch, device)
        for _ in range(repeat):
            start = time.perf_counter()
            once()
            ms.append((time.perf_counter() - start) * 1000.0)
    return ms


def first_line(text, limit=160):
    line = next((s.strip() for s in str(text).splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[:limit - 3] + "..."


# --- ember side ------------------------------------------------------------------------

def infer_command(args, path, input_paths, precision, repeat, summary_path, cuda_graph):
    cmd = [args.infer, "--device", args.device, "--precision", precision]
    if cuda_graph:
        cmd.append("--cuda-graph")
    if args.io == "device" and args.device.startswith("cuda"):
        cmd += ["--io", "device"]
    cmd += ["--warmup", str(args.warmup), "--repeat", str(repeat), "--summary-json",
            summary_path, path] + [f"{n}={p}" for n, p in input_paths.items()]
    return cmd


def run_infer(cmd, summary_path):
    """Returns (summary dict or None, error text or None)."""
    if os.path.exists(summary_path):
        os.remove(summary_path)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=INFER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {INFER_TIMEOUT_S} s"
    except OSError as e:
        return None, f"cannot run {cmd[0]}: {e}"
    if proc.returncode != 0 or not os.path.exists(summary_path):
        message = proc.stderr.strip() or proc.stdout.strip()[-400:]
        return None, f"exit status {proc.returncode}: {message}"
    with open(summary_path) as f:
        return json.load(f), None


def time_ember(args, path, input_paths, precision, repeat, case_dir):
    """Returns a result dict: {"p50", "note"} or {"error"}."""
    summary_path = os.path.join(case_dir, f"ember_{precision}.json")
    use_graph = args.cuda_graph
    cmd = infer_command(args, path, input_paths, precision, repeat, summary_path, use_graph)
    summary, error = run_infer(cmd, summary_path)
    if summary is None and use_graph:
        graph_error = error
        cmd = infer_command(args, path, input_paths, precision, repeat, summary_path, False)
        summary, error = run_infer(cmd, summary_path)
        if summary is not None:
            return {"p50": summary["latency_ms"]["p50"],
                    "note": f"without --cuda-graph, which failed: {graph_error}"}
        if error != graph_error:
            error = f"{graph_error}; without --cuda-graph: {error}"
        else:
            error = graph_error
    if summary is None:
        return {"error": error}
    return {"p50": summary["latency_ms"]["p50"], "note": None}


# --- one case --------------------------------------------------------------------------

def case_inputs(args, name, batch):
    """(model path, {input name: array}, {input name: .npy path}, case folder)."""
    module = importlib.import_module(name)
    path = os.path.join(args.work, f"{name}.onnx")
    module.build(path)
    inputs = module.make_inputs(batch, args.seq, np.random.default_rng(SEED + batch))
    case_dir = os.path.join(args.work, "bench_gpu", f"{name}_b{batch}")
    os.makedirs(case_dir, exist_ok=True)
    input_paths = {}
    for input_name, array in inputs.items():
        input_paths[input_name] = os.path.join(case_dir, f"{escape_name(input_name)}.npy")
        np.save(input_paths[input_name], array)
    return path, inputs, input_paths, case_dir


def bench_case(args, torch, name, batch, precision):
    """Returns the case's result dict (one JSON line of --results)."""
    from onnx_torch import OnnxModule

    path, inputs, input_paths, case_dir = case_inputs(args, name, batch)
    result = {"model": name, "batch": batch, "precision": precision,
              "seq": args.seq if name in TEXT_MODELS else None, "io": args.io}
    module = None
    try:
        module = OnnxModule(path, half=precision == "fp16", bf16=precision == "bf16").to(args.device).eval()
        host_inputs = [torch.from_numpy(np.ascontiguousarray(inputs[n]))
                       for n in module.input_names]
    except Exception as e:  # noqa: BLE001  (reported in the table, the run goes on)
        result["eager"] = result["compile"] = {"error": f"onnx_torch: {first_line(e)}"}
        host_inputs = None

    repeat = args.repeat
    if host_inputs is not None:
        try:
            probe = time_torch(torch, module, host_inputs, args.device, args.io, args.warmup, 1)
            if repeat is None:
                repeat = int(min(max(TIME_BUDGET_S * 1000.0 / probe[0], MIN_REPEAT), MAX_REPEAT))
            ms = time_torch(torch, module, host_inputs, args.device, args.io, 0, repeat)
            result["eager"] = {"p50": percentile(ms, 50)}
        except Exception as e:  # noqa: BLE001
            result["eager"] = {"error": first_line(e)}
    if repeat is None:
        repeat = MIN_REPEAT
    result["repeat"] = repeat

    if host_inputs is not None:
        if not args.compile:
            result["compile"] = {"error": "not run (--no-compile)"}
        else:
            try:
                torch._dynamo.reset()
                compiled = torch.compile(module, dynamic=False, mode=args.compile_mode)
                start = time.perf_counter()
                with torch.no_grad():
                    compiled(*[x.to(args.device) for x in host_inputs])
                sync(torch, args.device)
                compile_s = time.perf_counter() - start
                ms = time_torch(torch, compiled, host_inputs, args.device, args.io,
                                args.warmup, repeat)
                result["compile"] = {"p50": percentile(ms, 50), "compile_s": compile_s}
            except Exception as e:  # noqa: BLE001
                result["compile"] = {"error": f"compile failed: {first_line(e)}"}
            finally:
                torch._dynamo.reset()
    del module
    if torch is not None and args.device.startswith("cuda"):
        torch.cuda.empty_cache()  # leave the GPU's memory to infer's process

    result["ember"] = time_ember(args, path, input_paths, precision, repeat, case_dir)
    return result


# --- the table -------------------------------------------------------------------------

COLUMNS = ["model", "batch", "prec", "io", "ember ms", "eager ms", "compile ms", "ember /s",
           "eager /s", "compile /s", "eager/ember", "compile/ember"]
ALIGN_RIGHT = [False, True, False, False] + [True] * 8


def table_rows(results):
    """(rows of cells, notes): a failure's cell is 'error [n]' / 'compile failed [n]'
    with its message as note n."""
    notes, rows = [], []

    def note(text):
        notes.append(text)
        return f"[{len(notes)}]"

    for r in results:
        cells = {}
        p50 = {}
        for engine in ("ember", "eager", "compile"):
            entry = r.get(engine) or {"error": "not run"}
            if "p50" in entry:
                p50[engine] = entry["p50"]
                mark = ""
                if entry.get("note"):
                    mark = " " + note(f"{r['model']} batch {r['batch']} {r['precision']} "
                                      f"{engine}: {entry['note']}")
                cells[engine + " ms"] = f"{entry['p50']:.3f}{mark}"
                cells[engine + " /s"] = f"{r['batch'] * 1000.0 / entry['p50']:.1f}"
            else:
                error = entry["error"]
                cells[engine + " /s"] = "-"
                if error.startswith("not run"):
                    cells[engine + " ms"] = "not run"
                    continue
                short = "compile failed" if error.startswith("compile failed") else "error"
                lines = [s for s in error.splitlines() if s.strip()][:ERROR_LINES]
                cells[engine + " ms"] = f"{short} " + note(
                    f"{r['model']} batch {r['batch']} {r['precision']} {engine}: "
                    + " / ".join(s.strip() for s in lines))
        for engine in ("eager", "compile"):
            ok = engine in p50 and "ember" in p50 and p50["ember"] > 0
            cells[f"{engine}/ember"] = f"{p50[engine] / p50['ember']:.2f}" if ok else "-"
        label = r["model"] + (f" (seq {r['seq']})" if r.get("seq") else "")
        rows.append([label, str(r["batch"]), r["precision"], r.get("io", "host"), cells["ember ms"],
                     cells["eager ms"], cells["compile ms"], cells["ember /s"],
                     cells["eager /s"], cells["compile /s"], cells["eager/ember"],
                     cells["compile/ember"]])
    return rows, notes


def format_table(results, markdown):
    rows, notes = table_rows(results)
    lines = []
    if markdown:
        lines.append("| " + " | ".join(COLUMNS) + " |")
        lines.append("| " + " | ".join("---:" if a else "---" for a in ALIGN_RIGHT) + " |")
        lines += ["| " + " | ".join(row) + " |" for row in rows]
    else:
        widths = [max(len(c), *(len(row[i]) for row in rows)) if rows else len(c)
                  for i, c in enumerate(COLUMNS)]

        def fmt(cells):
            return "  ".join(c.rjust(w) if a else c.ljust(w)
                             for c, w, a in zip(cells, widths, ALIGN_RIGHT)).rstrip()
        lines.append(fmt(COLUMNS))
        lines += [fmt(row) for row in rows]
    if notes:
        lines.append("")
        lines += [f"[{i}] {text}" + ("  " if markdown else "") for i, text in enumerate(notes, 1)]
    return "\n".join(lines)


# --- header ----------------------------------------------------------------------------

def ember_commit(infer):
    """HEAD of the checkout holding `infer` (else of this script's), '+ changes' if dirty."""
    for folder in (os.path.dirname(infer), REPO):
        try:
            rev = subprocess.run(["git", "-C", folder, "rev-parse", "--short=12", "HEAD"],
                                 capture_output=True, text=True, timeout=10)
            if rev.returncode != 0:
                continue
            dirty = subprocess.run(["git", "-C", folder, "status", "--porcelain",
                                    "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=60)
            return rev.stdout.strip() + (" + uncommitted changes" if dirty.stdout.strip() else "")
        except (OSError, subprocess.SubprocessError):
            continue
    return "unknown (no git checkout here; pass --ember-commit)"


def header_lines(args, torch, torch_error):
    lines = []
    if torch is None:
        lines.append(f"machine: {platform.node()}, PyTorch not installed ({torch_error})")
    elif args.device.startswith("cuda") and torch.cuda.is_available():
        index = torch.device(args.device).index or 0
        props = torch.cuda.get_device_properties(index)
        lines.append(f"GPU: {torch.cuda.get_device_name(index)} ({props.total_memory / 2**30:.0f} "
                     f"GiB, compute capability {props.major}.{props.minor}); host "
                     f"{platform.node()}, {os.cpu_count()} logical CPUs")
    elif args.device.startswith("cuda"):
        lines.append("GPU: none visible to PyTorch (torch.cuda.is_available() is False)")
    else:
        lines.append(f"device: cpu ({platform.processor() or platform.machine()}, "
                     f"{os.cpu_count()} logical CPUs) — a control-flow check, not a benchmark")
    if torch is not None:
        cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        lines.append(f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}, cuDNN {cudnn}); "
                     f"TF32 off, fp16 GEMMs reduce in fp32; cudnn.benchmark on; eager under "
                     f"no_grad; torch.compile mode {args.compile_mode}, dynamic=False"
                     + ("" if args.compile else " (not run)"))
    build = build_type_of(args.infer) if os.path.exists(args.infer) else "infer not found"
    commit = args.ember_commit or ember_commit(args.infer)
    lines.append(f"ember commit {commit}, build {build}; infer --device {args.device}"
                 + (" --cuda-graph" if args.cuda_graph else ""))
    timed = "host inputs -> device, model, outputs -> host" if args.io == "host" else \
        "the model alone, inputs and outputs resident on the device (infer --io device)"
    lines.append(f"timed run = {timed}; {args.warmup} warm-up runs, then "
                 + (f"{args.repeat} timed runs" if args.repeat else
                    f"~{TIME_BUDGET_S:g} s of eager time ({MIN_REPEAT}..{MAX_REPEAT}) timed runs")
                 + f"; p50 latency; throughput = batch / p50; ratio = PyTorch p50 / ember p50 "
                 f"(> 1: ember faster); BERT and GPT-2 at sequence {args.seq}")
    return lines


# --- main ------------------------------------------------------------------------------

def parse_list(text, known, what, parser):
    items = [s for s in text.split(",") if s]
    unknown = [s for s in items if known is not None and s not in known]
    if unknown:
        parser.error(f"unknown {what} {', '.join(unknown)}; known: {', '.join(known)}")
    return items


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--infer", default=os.path.join(REPO, "build", "infer"))
    parser.add_argument("--work", default=os.path.join(REPO, "build", "models"),
                        help="folder of the built models (built if absent) and inputs")
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help=f"comma-separated, of {','.join(MODELS)}")
    parser.add_argument("--batches", default="1,8,64")
    parser.add_argument("--precisions", default="fp32,fp16")
    parser.add_argument("--seq", type=int, default=128, help="sequence length for bert, gpt2")
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP)
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu (a dry check)")
    parser.add_argument("--io", choices=["host", "device"], default="host")
    parser.add_argument("--no-compile", dest="compile", action="store_false")
    parser.add_argument("--compile-mode", default="default",
                        choices=["default", "reduce-overhead", "max-autotune",
                                 "max-autotune-no-cudagraphs"],
                        help="torch.compile mode (default: default; reduce-overhead adds CUDA "
                             "graphs, as ember's --cuda-graph does)")
    parser.add_argument("--cuda-graph", dest="cuda_graph", action="store_true", default=None,
                        help="pass --cuda-graph to infer (default on a cuda device)")
    parser.add_argument("--no-cuda-graph", dest="cuda_graph", action="store_false")
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    parser.add_argument("--results", help="append each case's result to this JSON-lines file")
    parser.add_argument("--table-from", nargs="+", metavar="FILE",
                        help="print the table from --results files and exit")
    parser.add_argument("--ember-commit", help="for the header, when this is no git checkout")
    parser.add_argument("--dry-run", action="store_true",
                        help="print what would run; time nothing (no GPU or PyTorch needed)")
    args = parser.parse_args()

    if args.table_from:
        results = []
        for path in args.table_from:
            with open(path) as f:
                results += [json.loads(line) for line in f if line.strip()]
        print(format_table(results, args.markdown))
        return 0

    models = parse_list(args.models, MODELS, "model(s)", parser)
    precisions = parse_list(args.precisions, PRECISIONS, "precision(s)", parser)
    try:
        batches = [int(b) for b in parse_list(args.batches, None, "batch", parser)]
    except ValueError:
        parser.error(f"--batches {args.batches}: expected comma-separated integers")
    if any(b < 1 for b in batches):
        parser.error("batches must be at least 1")
    if args.repeat is not None and args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.warmup < 0:
        parser.error("--warmup must be at least 0")
    if args.cuda_graph is None:
        args.cuda_graph = args.device.startswith("cuda")
    args.infer = os.path.abspath(args.infer)
    args.work = os.path.abspath(args.work)
    if not args.dry_run and not os.access(args.infer, os.X_OK):
        parser.error(f"--infer {args.infer}: not an executable file (build it, or pass --infer)")

    torch, torch_error = import_torch()
    if torch is None and not args.dry_run:
        print(f"error: PyTorch is needed for the PyTorch columns: {torch_error}", file=sys.stderr)
        return 1
    if torch is not None:
        # ember's precision: no TF32, and float16 GEMMs accumulate in float32.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        torch.backends.cudnn.benchmark = True
        if args.device.startswith("cuda") and not args.dry_run and not torch.cuda.is_available():
            print("error: torch.cuda.is_available() is False (use --device cpu or --dry-run "
                  "to check this script without a GPU)", file=sys.stderr)
            return 1

    for line in header_lines(args, torch, torch_error):
        print(line + ("  " if args.markdown else ""))
    print(flush=True)

    cases = [(m, b, p) for m in models for b in batches for p in precisions]
    if args.dry_run:
        repeat = args.repeat or MIN_REPEAT
        for name, batch, precision in cases:
            path, _, input_paths, case_dir = case_inputs(args, name, batch)
            cmd = infer_command(args, path, input_paths, precision, repeat,
                                os.path.join(case_dir, f"ember_{precision}.json"), args.cuda_graph)
            print(f"{name} batch {batch} {precision}:\n  ember: {shlex.join(cmd)}\n"
                  f"  PyTorch: OnnxModule({os.path.basename(path)}, half={precision == 'fp16'}, "
                  f"bf16={precision == 'bf16'})"
                  f" on {args.device}, eager" + (" and torch.compile" if args.compile else ""))
        results = [{"model": m, "batch": b, "precision": p,
                    "seq": args.seq if m in TEXT_MODELS else None, "io": args.io,
                    "ember": {"error": "not run (--dry-run)"},
                    "eager": {"error": "not run (--dry-run)"},
                    "compile": {"error": "not run (--dry-run)"}} for m, b, p in cases]
        print()
        print(format_table(results, args.markdown))
        return 0

    results = []
    for name, batch, precision in cases:
        start = time.perf_counter()
        result = bench_case(args, torch, name, batch, precision)
        result["seconds"] = round(time.perf_counter() - start, 1)
        results.append(result)
        if args.results:
            with open(args.results, "a") as f:
                f.write(json.dumps(result) + "\n")
        done = ", ".join(f"{e} {result[e]['p50']:.3f} ms" if "p50" in result[e] else
                         f"{e} {first_line(result[e]['error'], 80)}"
                         for e in ("ember", "eager", "compile"))
        print(f"# {name} batch {batch} {precision}: {done} ({result['seconds']} s)",
              file=sys.stderr, flush=True)
    print(format_table(results, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
