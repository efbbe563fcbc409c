#!/usr/bin/env python3
"""Rewrites a CUDA source (.cu or .cuh) into C++ that the CUDA emulator runs on the CPU.

Only the two constructs that no macro can express change:
  kernel<T><<<grid, block, shared, stream>>>(args)
      -> kernel<T> | ::ember::emu::launch_config("kernel", grid, block, shared, stream)(args)
  extern __shared__ [__align__(n)] T name[];
      -> T* name = ::ember::emu::dynamic_shared<T>();
Everything else (__global__, __shared__, threadIdx, __syncthreads, shuffles) is handled
by cuda_emulator.h, which the build force-includes. Line numbers are kept, so compiler
messages point at the original lines.

usage: emulate_cuda_source.py <input> <output>
"""
import os
import re
import sys

DYNAMIC_SHARED = re.compile(
    r"extern\s+__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?([A-Za-z_][\w:<>, ]*?)\s+(\w+)\s*\[\s*\]\s*;")


def kernel_name(text, launch_at):
    """The identifier naming the kernel launched at text[launch_at:] == '<<<'."""
    i = launch_at
    while i > 0 and text[i - 1].isspace():
        i -= 1
    if i > 0 and text[i - 1] == ">":  # skip the template arguments, nested <> included
        depth = 0
        while i > 0:
            i -= 1
            depth += {">": 1, "<": -1}.get(text[i], 0)
            if depth == 0:
                break
    end = i
    while i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_:"):
        i -= 1
    name = text[i:end]
    if not name:
        raise SystemExit(f"cannot find the kernel launched at offset {launch_at}")
    return name


def rewrite_launches(text):
    out, pos = [], 0
    while (at := text.find("<<<", pos)) >= 0:
        close = text.find(">>>", at)
        if close < 0:
            raise SystemExit(f"unterminated <<< at offset {at}")
        name = kernel_name(text, at)
        out.append(text[pos:at])
        out.append(f' | ::ember::emu::launch_config("{name}", ')
        out.append(text[at + 3:close])
        out.append(")")
        pos = close + 3
    out.append(text[pos:])
    return "".join(out)


def main():
    source, target = sys.argv[1], sys.argv[2]
    with open(source, encoding="utf-8") as f:
        text = f.read()
    text = DYNAMIC_SHARED.sub(r"\1* \2 = ::ember::emu::dynamic_shared<\1>();", text)
    text = rewrite_launches(text)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w", encoding="utf-8") as f:
        f.write(f'#line 1 "{source}"\n')
        f.write(text)


if __name__ == "__main__":
    main()
