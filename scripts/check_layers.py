#!/usr/bin/env python3
"""Fails when an #include runs back up the layers (shared/DESIGN.md, "Layers").

    core <- graph <- loader
    core <- graph <- ops (ops/ common; ops/cpu and ops/cuda apart from each other)
    everything above <- engine <- tools (the public API only, and tools/ itself)
                               <- python (the public API only)

Each source file belongs to the layer of its folder; each ember include names the
layer it reaches. Usage: check_layers.py [REPO_ROOT] (one line per back edge), or --self-test.
"""
import pathlib
import re
import sys

# The layers a folder may include, by folder prefix (longest match wins).
ALLOWED = {
    "core": {"core"},
    "graph": {"core", "graph"},
    "loader": {"core", "graph", "loader"},
    "ops": {"core", "graph", "ops"},
    "ops/cpu": {"core", "graph", "ops", "ops/cpu"},
    "ops/cuda": {"core", "graph", "ops", "ops/cuda"},
    "engine/src": {"core", "graph", "loader", "ops", "ops/cpu", "ops/cuda", "engine/src", "api"},
    "engine/include": {"core", "api"},
    "tools": {"core", "api", "tools"},  # the public API, and the tools' own helpers
    "python": {"core", "api"},  # the Python module's bindings: the public API only
}
SOURCE_SUFFIXES = {".h", ".cc", ".cu", ".cuh"}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of_file(rel: str):
    best = None
    for prefix in ALLOWED:
        if rel == prefix or rel.startswith(prefix + "/"):
            if best is None or len(prefix) > len(best):
                best = prefix
    return best


def layer_of_include(bracket: str, target: str):
    """The layer an include reaches, or None when it is not ember's own."""
    if bracket == "<":
        if target.startswith("ember/core/"):
            return "core"
        if target.startswith("ember/"):
            return "api"
        return None
    parts = target.split("/")
    if parts[0] == "ops" and len(parts) > 2 and parts[1] in ("cpu", "cuda"):
        return "ops/" + parts[1]
    if parts[0] == "engine" and len(parts) > 1:
        return "engine/" + parts[1]
    if parts[0] in ("core", "graph", "loader", "ops", "tools"):
        return parts[0]
    return None  # a sibling header by relative name, or a generated one


def back_edges(root: pathlib.Path):
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.suffix not in SOURCE_SUFFIXES or rel.startswith(("build", "tests/")):
            continue
        layer = layer_of_file(rel)
        if layer is None:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            reached = layer_of_include(m.group(1), m.group(2))
            if reached is not None and reached not in ALLOWED[layer]:
                yield f"{rel}:{number}: {layer} includes {m.group(2)} ({reached}): not below it"


def self_test() -> int:
    """The check must catch a back edge and pass a downward one."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        (root / "graph").mkdir()
        (root / "ops" / "cuda").mkdir(parents=True)
        (root / "graph" / "pass.cc").write_text('#include "ops/kernel.h"\n#include "graph/graph.h"\n')
        (root / "ops" / "cuda" / "k.cc").write_text('#include "ops/cpu/x.h"\n#include <ember/core/tensor.h>\n')
        found = [e.split(":")[0] for e in back_edges(root)]
        ok = found == ["graph/pass.cc", "ops/cuda/k.cc"]
    print("layers self-test:", "ok" if ok else f"wrong edges {found}")
    return 0 if ok else 1


def main() -> int:
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    edges = list(back_edges(root))
    for edge in edges:
        print(edge)
    print(f"layers: {len(edges)} include(s) run back up" if edges else "layers: every include points down")
    return 1 if edges else 0


if __name__ == "__main__":
    sys.exit(main())
