#!/usr/bin/env python3
"""Runs an ONNX model with PyTorch: the graph becomes a torch.nn.Module.

    from onnx_torch import OnnxModule
    module = OnnxModule("bert.onnx", half=False).to("cuda").eval()
    outputs = module(input_ids, attention_mask, token_type_ids)   # a tuple, graph order

    python3 tools/onnx_torch.py model.onnx name=in.npy ... [--half] [--device cuda]
                                [--compile] [-o DIR]

What it is for: tools/bench_gpu.py times PyTorch on exactly the graph ember runs. It is a
small interpreter, not a converter: forward() walks the nodes in order and calls one torch
op per node, so PyTorch eager runs the same operators the ONNX file names, and
torch.compile traces the same walk into one graph.

How values are held:
- Initializers (and Constant nodes that are not small rank-0/1 values) are buffers, so
  `.to("cuda")` moves them and `.half()` converts the float ones.
- Shape arithmetic runs in Python on ints ("host" values: a Python scalar for rank 0, a
  tuple for rank 1): Shape, and Gather/Unsqueeze/Squeeze/Concat/Slice/Cast/Add/Sub/Mul/Div
  when every input is a host value. Small Constant nodes are host values too. So Reshape,
  Slice, Split, Unsqueeze get plain ints and torch.compile sees static shapes; a host
  value used as data becomes a Python scalar (binary ops, Where, Pow, Clip) or, if it is
  a tuple, a small tensor on the inputs' device.
- Host nodes whose inputs are all constants are evaluated once here, at construction
  (the only constant folding done).
- Host values depend on the input shapes only (no op here has a data-dependent output
  shape), so in eager mode the module keeps those of the last input shapes and a call
  with the same shapes runs only the tensor steps: PyTorch eager then pays no Python shape
  arithmetic per run, as a hand-written model would not (about 650 steps of GPT-2's 1272).

half=True: float initializers and float inputs become float16, Cast to float32 casts to
float16 (the whole graph computes in half, as ember's --precision fp16 does), and float
outputs are returned as float32.

Covered: the ops (and attribute values) of ember's four benchmark models at opset 17 —
Add BatchNormalization Cast Clip Concat Constant Conv Div Erf Flatten Gather Gemm
GlobalAveragePool LayerNormalization MatMul MaxPool Mul Pow Range Relu Reshape Shape Slice
Softmax Split Sub Tanh Transpose Unsqueeze Where, and ViT's ConstantOfShape, Equal, Expand
(class-token expand as torch.onnx writes it) — plus Squeeze, Identity, Sigmoid, Sqrt,
Neg, Exp, ReduceMean (trivial neighbours). Anything else raises NotImplementedError
naming the op(s) and a node, at construction, before anything runs.
Limits (checked, with an error saying so): inference only (BatchNormalization
training_mode=0, LayerNormalization's Mean/InvStdDev outputs absent), no auto_pad other
than NOTSET/VALID, Slice steps > 0, Reshape/Slice/Split/Unsqueeze/Squeeze/Range
parameters must be host values (computable from shapes and constants). Host integers are
Python ints: int32 and int64 shape values are not told apart (Range on host ints yields
int64).
"""
import math
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

# Constant nodes with at most this many elements, rank 0 or 1, int or float, are held in
# Python (host values); larger ones are buffers.
HOST_CONSTANT_MAX = 64

_ONNX_TO_TORCH = {
    onnx.TensorProto.FLOAT: torch.float32,
    onnx.TensorProto.FLOAT16: torch.float16,
    onnx.TensorProto.BFLOAT16: torch.bfloat16,
    onnx.TensorProto.DOUBLE: torch.float64,
    onnx.TensorProto.INT64: torch.int64,
    onnx.TensorProto.INT32: torch.int32,
    onnx.TensorProto.INT16: torch.int16,
    onnx.TensorProto.INT8: torch.int8,
    onnx.TensorProto.UINT8: torch.uint8,
    onnx.TensorProto.BOOL: torch.bool,
}
_INTEGER_TYPES = {onnx.TensorProto.INT64, onnx.TensorProto.INT32, onnx.TensorProto.INT16,
                  onnx.TensorProto.INT8, onnx.TensorProto.UINT8}
_FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
                onnx.TensorProto.BFLOAT16}


def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _is_host(value):
    return isinstance(value, (int, float, bool, tuple))


def _host_from_array(array):
    """numpy array (rank 0 or 1) -> Python scalar or tuple."""
    if array.ndim == 0:
        return array.item()
    return tuple(x.item() for x in array)


def _host_rank(value):
    return 1 if isinstance(value, tuple) else 0


def _broadcast_host(fn, a, b):
    if isinstance(a, tuple) or isinstance(b, tuple):
        a_t = a if isinstance(a, tuple) else (a,)
        b_t = b if isinstance(b, tuple) else (b,)
        n = max(len(a_t), len(b_t))
        if len(a_t) not in (1, n) or len(b_t) not in (1, n):
            raise ValueError(f"host values of lengths {len(a_t)} and {len(b_t)} do not broadcast")
        a_t = a_t * n if len(a_t) == 1 else a_t
        b_t = b_t * n if len(b_t) == 1 else b_t
        return tuple(fn(x, y) for x, y in zip(a_t, b_t))
    return fn(a, b)


def _host_div(x, y):
    if isinstance(x, int) and isinstance(y, int):
        q = abs(x) // abs(y)  # ONNX integer Div truncates toward zero
        return q if (x >= 0) == (y >= 0) else -q
    return x / y


def _norm_axis(axis, rank):
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


class _Ctx:
    """What a step needs besides its inputs: the device of this run, the float dtype."""
    __slots__ = ("device", "float_dtype")

    def __init__(self, device, float_dtype):
        self.device = device
        self.float_dtype = float_dtype

    def tensor(self, value, like=None):
        """A host value as a tensor (for data inputs that are host tuples)."""
        if isinstance(value, torch.Tensor):
            return value
        sample = value[0] if isinstance(value, tuple) and value else value
        if isinstance(sample, bool):
            dtype = torch.bool
        elif isinstance(sample, float):
            floating = like is not None and like.is_floating_point()
            dtype = like.dtype if floating else self.float_dtype
        else:
            dtype = torch.int64
        return torch.tensor(value, dtype=dtype, device=self.device)

    def cast_type(self, to):
        if to == onnx.TensorProto.FLOAT:
            return self.float_dtype
        if to not in _ONNX_TO_TORCH:
            raise NotImplementedError(f"Cast to ONNX type {to}")
        return _ONNX_TO_TORCH[to]


# --- ops ------------------------------------------------------------------------------
# Each builder takes (node, attrs, opset) and returns step(ctx, *inputs) -> output or tuple.
# Builders check attributes once; steps do only the work. A step may receive host values
# for any input; `host` builders return None when they cannot run on host values.

def _need_host(op, what, value):
    if not _is_host(value):
        raise NotImplementedError(
            f"{op}: {what} must be computable from shapes and constants (it is a tensor)")
    return value


def _as_list(value):
    return list(value) if isinstance(value, tuple) else [value]


def _binary(torch_fn, host_fn, int_div=False):
    def build(node, attrs, opset):
        def step(ctx, a, b):
            if _is_host(a) and _is_host(b):
                return _broadcast_host(host_fn, a, b)
            if isinstance(a, tuple):
                a = ctx.tensor(a, b)
            if isinstance(b, tuple):
                b = ctx.tensor(b, a)
            if int_div:
                t = a if isinstance(a, torch.Tensor) else b
                if not t.is_floating_point():
                    return torch.div(a, b, rounding_mode="trunc")
            return torch_fn(a, b)
        return step
    return build


def _unary(torch_fn):
    def build(node, attrs, opset):
        return lambda ctx, x: torch_fn(ctx.tensor(x))
    return build


def _identity(node, attrs, opset):
    return lambda ctx, x: x


def _constant(node, attrs, opset):
    if "value" not in attrs:
        raise NotImplementedError(f"Constant with attribute(s) {sorted(attrs)} (only 'value')")
    return None  # handled at construction


def _shape(node, attrs, opset):
    start = attrs.get("start", 0)
    end = attrs.get("end", None)

    def step(ctx, x):
        dims = tuple(int(d) for d in x.shape) if isinstance(x, torch.Tensor) else \
            ((len(x),) if isinstance(x, tuple) else ())
        return dims[start:end] if end is not None else dims[start:]
    return step


def _gather(node, attrs, opset):
    axis = attrs.get("axis", 0)

    def step(ctx, data, indices):
        if _is_host(data) and _is_host(indices):
            if not isinstance(data, tuple):
                raise ValueError("Gather on a rank-0 host value")
            if isinstance(indices, tuple):
                return tuple(data[i] for i in indices)  # Python indexing wraps negatives
            return data[indices]
        data = ctx.tensor(data)
        ax = _norm_axis(axis, data.dim())
        if isinstance(indices, int):
            return data.select(ax, indices)
        indices = ctx.tensor(indices)
        if ax == 0:
            return data[indices]  # advanced indexing wraps negative indices as ONNX does
        return data[(slice(None),) * ax + (indices,)]
    return step


def _unsqueeze(node, attrs, opset):
    attr_axes = attrs.get("axes")

    def step(ctx, x, axes=None):
        axes = _as_list(_need_host("Unsqueeze", "axes", axes)) if opset >= 13 else list(attr_axes)
        rank = _host_rank(x) if _is_host(x) else x.dim()
        out_rank = rank + len(axes)
        axes = sorted(_norm_axis(a, out_rank) for a in axes)
        if _is_host(x):
            if axes == [0] and not isinstance(x, tuple):
                return (x,)
            x = ctx.tensor(x)  # past rank 1 a host value becomes a tensor (Llama's positions)
        for a in axes:
            x = x.unsqueeze(a)
        return x
    return step


def _squeeze(node, attrs, opset):
    attr_axes = attrs.get("axes")

    def step(ctx, x, axes=None):
        axes = (_as_list(_need_host("Squeeze", "axes", axes)) if axes is not None else None) \
            if opset >= 13 else attr_axes
        if _is_host(x):
            if isinstance(x, tuple) and len(x) == 1 and (axes is None or list(axes) in ([0], [-1])):
                return x[0]
            raise NotImplementedError("Squeeze of this host value")
        if axes is None:
            return x.squeeze()
        axes = sorted({_norm_axis(a, x.dim()) for a in axes}, reverse=True)
        for a in axes:
            x = x.squeeze(a)
        return x
    return step


def _concat(node, attrs, opset):
    axis = attrs["axis"]

    def step(ctx, *xs):
        if all(_is_host(x) for x in xs):
            if any(not isinstance(x, tuple) for x in xs):
                raise ValueError("Concat of rank-0 values")
            return tuple(v for x in xs for v in x)
        like = next(x for x in xs if isinstance(x, torch.Tensor))
        return torch.cat([ctx.tensor(x, like) for x in xs], dim=axis)
    return step


def _cast(node, attrs, opset):
    to = attrs["to"]
    if to in _INTEGER_TYPES:
        host_fn = int
    elif to in _FLOAT_TYPES:
        host_fn = float
    elif to == onnx.TensorProto.BOOL:
        host_fn = bool
    else:
        host_fn = None

    def step(ctx, x):
        if _is_host(x):
            if host_fn is None:
                raise NotImplementedError(f"Cast of a host value to ONNX type {to}")
            return tuple(host_fn(v) for v in x) if isinstance(x, tuple) else host_fn(x)
        return x.to(ctx.cast_type(to))
    return step


def _slice(node, attrs, opset):
    if opset < 10:
        raise NotImplementedError("Slice before opset 10 (attributes)")

    def step(ctx, data, starts, ends, axes=None, steps=None):
        starts = _as_list(_need_host("Slice", "starts", starts))
        ends = _as_list(_need_host("Slice", "ends", ends))
        axes = _as_list(_need_host("Slice", "axes", axes)) if axes is not None \
            else list(range(len(starts)))
        steps = _as_list(_need_host("Slice", "steps", steps)) if steps is not None \
            else [1] * len(starts)
        if any(s <= 0 for s in steps):
            raise NotImplementedError("Slice with steps <= 0")
        rank = _host_rank(data) if _is_host(data) else data.dim()
        index = [slice(None)] * rank
        for s, e, a, st in zip(starts, ends, axes, steps):
            # For positive steps Python's slice clamps exactly as ONNX does.
            index[_norm_axis(a, rank)] = slice(s, e, st)
        if _is_host(data):
            if not isinstance(data, tuple):
                raise ValueError("Slice of a rank-0 value")
            return data[index[0]]
        return data[tuple(index)]
    return step


def _reshape(node, attrs, opset):
    allowzero = attrs.get("allowzero", 0)

    def step(ctx, data, shape):
        shape = list(_need_host("Reshape", "shape", shape))
        if _is_host(data) and len(shape) == 1:  # shape arithmetic: a rank-1 value stays one
            values = data if isinstance(data, tuple) else (data,)
            if shape[0] not in (-1, len(values)):
                raise ValueError(f"Reshape of {len(values)} host values to {shape}")
            return values
        data = ctx.tensor(data)
        if not allowzero:
            shape = [data.shape[i] if d == 0 else d for i, d in enumerate(shape)]
        return data.reshape(shape)
    return step


def _transpose(node, attrs, opset):
    perm = attrs.get("perm")

    def step(ctx, x):
        return x.permute(*(perm if perm is not None else reversed(range(x.dim()))))
    return step


def _split(node, attrs, opset):
    axis = attrs.get("axis", 0)
    n_out = len(node.output)
    attr_split = attrs.get("split")
    num_outputs = attrs.get("num_outputs")

    def step(ctx, x, split=None):
        if opset < 13:
            split = attr_split
        elif split is not None:
            split = _as_list(_need_host("Split", "split", split))
        ax = _norm_axis(axis, x.dim())
        if split is None:
            dim = x.shape[ax]
            if num_outputs is not None:  # opset 18: last chunk may be smaller
                chunk = -(-dim // num_outputs)
                split = [chunk] * (dim // chunk) + ([dim % chunk] if dim % chunk else [])
            else:
                if dim % n_out:
                    raise ValueError(f"Split: dim {dim} is not divisible into {n_out} outputs")
                split = [dim // n_out] * n_out
        return tuple(torch.split(x, list(split), dim=ax))
    return step


def _matmul(node, attrs, opset):
    return lambda ctx, a, b: torch.matmul(a, b)


def _gemm(node, attrs, opset):
    alpha = attrs.get("alpha", 1.0)
    beta = attrs.get("beta", 1.0)
    trans_a = attrs.get("transA", 0)
    trans_b = attrs.get("transB", 0)

    def step(ctx, a, b, c=None):
        if trans_a:
            a = a.t()
        if c is not None and not isinstance(c, torch.Tensor):
            c = ctx.tensor(c, a)
        if alpha == 1.0 and (c is None or (beta == 1.0 and c.dim() <= 1)):
            # F.linear takes the weight as [N, K]: B itself when transB, else B^T.
            return F.linear(a, b if trans_b else b.t(), c)
        bb = b.t() if trans_b else b
        if c is None or beta == 0.0:
            out = torch.mm(a, bb)
            return out if alpha == 1.0 else out * alpha
        return torch.addmm(c, a, bb, beta=beta, alpha=alpha)
    return step


def _pads_for(op, attrs, spatial):
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if auto_pad not in ("NOTSET", "VALID"):
        raise NotImplementedError(f"{op}: auto_pad={auto_pad}")
    pads = list(attrs.get("pads", [0] * 2 * spatial)) if auto_pad == "NOTSET" else [0] * 2 * spatial
    begin, end = pads[:spatial], pads[spatial:]
    return begin, end


def _conv(node, attrs, opset):
    kernel = attrs.get("kernel_shape")
    spatial = len(kernel) if kernel is not None else None
    group = attrs.get("group", 1)

    def step(ctx, x, w, b=None):
        n = x.dim() - 2
        begin, end = _pads_for("Conv", attrs, n)
        strides = attrs.get("strides", [1] * n)
        dilations = attrs.get("dilations", [1] * n)
        if begin != end:
            # F.pad takes (last dim begin, last dim end, previous dim begin, ...).
            x = F.pad(x, [p for i in reversed(range(n)) for p in (begin[i], end[i])])
            begin = [0] * n
        fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}.get(n)
        if fn is None:
            raise NotImplementedError(f"Conv with {n} spatial dims")
        return fn(x, w, b, stride=strides, padding=begin, dilation=dilations, groups=group)
    if spatial is not None and spatial not in (1, 2, 3):
        raise NotImplementedError(f"Conv with {spatial} spatial dims")
    return step


def _max_pool(node, attrs, opset):
    if len(node.output) > 1 and node.output[1]:
        raise NotImplementedError("MaxPool's Indices output")
    if attrs.get("storage_order", 0):
        raise NotImplementedError("MaxPool storage_order=1")
    kernel = list(attrs["kernel_shape"])
    n = len(kernel)
    begin, end = _pads_for("MaxPool", attrs, n)
    strides = list(attrs.get("strides", [1] * n))
    dilations = list(attrs.get("dilations", [1] * n))
    ceil_mode = bool(attrs.get("ceil_mode", 0))
    fn = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}.get(n)
    if fn is None:
        raise NotImplementedError(f"MaxPool with {n} spatial dims")
    if begin != end and ceil_mode:
        raise NotImplementedError("MaxPool with asymmetric pads and ceil_mode")

    def step(ctx, x):
        padding = begin
        if begin != end:
            x = F.pad(x, [p for i in reversed(range(n)) for p in (begin[i], end[i])],
                      value=float("-inf"))
            padding = [0] * n
        return fn(x, kernel, strides, padding, dilations, ceil_mode=ceil_mode)
    return step


def _global_average_pool(node, attrs, opset):
    def step(ctx, x):
        if x.dim() == 4:
            return F.adaptive_avg_pool2d(x, 1)
        return x.mean(dim=tuple(range(2, x.dim())), keepdim=True)
    return step


def _batch_norm(node, attrs, opset):
    if attrs.get("training_mode", 0):
        raise NotImplementedError("BatchNormalization training_mode=1")
    if len([o for o in node.output if o]) > 1:
        raise NotImplementedError("BatchNormalization with running-statistics outputs")
    eps = attrs.get("epsilon", 1e-5)
    return lambda ctx, x, scale, bias, mean, var: F.batch_norm(
        x, mean, var, scale, bias, False, 0.0, eps)


def _layer_norm(node, attrs, opset):
    if len([o for o in node.output if o]) > 1:
        raise NotImplementedError("LayerNormalization's Mean/InvStdDev outputs")
    axis = attrs.get("axis", -1)
    eps = attrs.get("epsilon", 1e-5)

    def step(ctx, x, scale, bias=None):
        ax = _norm_axis(axis, x.dim())
        return F.layer_norm(x, tuple(x.shape[ax:]), scale, bias, eps)
    return step


def _softmax(node, attrs, opset):
    if opset < 13:
        raise NotImplementedError("Softmax before opset 13 (2-D coercion)")
    axis = attrs.get("axis", -1)
    return lambda ctx, x: torch.softmax(x, dim=axis)


def _flatten(node, attrs, opset):
    axis = attrs.get("axis", 1)

    def step(ctx, x):
        ax = axis + x.dim() if axis < 0 else axis
        return x.reshape(math.prod(x.shape[:ax]), math.prod(x.shape[ax:]))
    return step


def _clip(node, attrs, opset):
    if opset < 11:
        lo_attr, hi_attr = attrs.get("min"), attrs.get("max")

    def step(ctx, x, lo=None, hi=None):
        if opset < 11:
            lo, hi = lo_attr, hi_attr
        if isinstance(lo, tuple) or isinstance(hi, tuple):
            raise ValueError("Clip min/max must be scalars")
        if lo is None and hi is None:
            return x
        return torch.clamp(x, lo, hi)
    return step


def _host_where(cond, x, y):
    values = (cond, x, y)
    if not any(isinstance(v, tuple) for v in values):
        return x if cond else y
    n = max(len(v) for v in values if isinstance(v, tuple))
    if any(isinstance(v, tuple) and len(v) not in (1, n) for v in values):
        raise ValueError("Where: host values do not broadcast")

    def at(v, i):
        return (v[i] if len(v) > 1 else v[0]) if isinstance(v, tuple) else v
    return tuple(at(x, i) if at(cond, i) else at(y, i) for i in range(n))


def _where(node, attrs, opset):
    def step(ctx, cond, x, y):
        if _is_host(cond) and _is_host(x) and _is_host(y):  # shape arithmetic
            return _host_where(cond, x, y)
        cond = ctx.tensor(cond)
        like = x if isinstance(x, torch.Tensor) else y if isinstance(y, torch.Tensor) else None
        if isinstance(x, tuple):
            x = ctx.tensor(x, like)
        if isinstance(y, tuple):
            y = ctx.tensor(y, like)
        return torch.where(cond, x, y)
    return step


def _constant_of_shape(node, attrs, opset):
    value = numpy_helper.to_array(attrs["value"]) if "value" in attrs else np.zeros(1, np.float32)
    fill = value.reshape(-1)[0].item()

    def step(ctx, shape):
        shape = _as_list(_need_host("ConstantOfShape", "shape", shape))
        if len(shape) == 1 and shape[0] <= HOST_CONSTANT_MAX:  # stays shape arithmetic
            return (fill,) * shape[0]
        dtype = ctx.float_dtype if value.dtype.kind == "f" else torch.from_numpy(value).dtype
        filled = fill
        if dtype.is_floating_point:  # a -FLT_MAX mask saturates in 16 bits, as ember's does
            info = torch.finfo(dtype)
            filled = min(max(fill, info.min), info.max)
        return torch.full(shape, filled, dtype=dtype, device=ctx.device)
    return step


def _expand(node, attrs, opset):
    def step(ctx, x, shape):
        shape = _as_list(_need_host("Expand", "shape", shape))
        x = ctx.tensor(x)
        return x.expand(torch.broadcast_shapes(tuple(x.shape), tuple(shape)))
    return step


def _pow(node, attrs, opset):
    def step(ctx, x, y):
        if isinstance(y, tuple):
            y = ctx.tensor(y, x)
        return torch.pow(ctx.tensor(x), y)
    return step


def _range(node, attrs, opset):
    def step(ctx, start, limit, delta):
        for v, what in ((start, "start"), (limit, "limit"), (delta, "delta")):
            _need_host("Range", what, v)
        dtype = torch.int64 if all(isinstance(v, int) for v in (start, limit, delta)) \
            else ctx.float_dtype
        return torch.arange(start, limit, delta, dtype=dtype, device=ctx.device)
    return step


def _hard_sigmoid(node, attrs, opset):
    alpha, beta = attrs.get("alpha", 0.2), attrs.get("beta", 0.5)
    return lambda ctx, x: torch.clamp(ctx.tensor(x) * alpha + beta, 0.0, 1.0)


def _trilu(node, attrs, opset):
    upper = bool(attrs.get("upper", 1))

    def step(ctx, x, k=None):
        k = 0 if k is None else int(_as_list(_need_host("Trilu", "k", k))[0])
        x = ctx.tensor(x)
        return torch.triu(x, k) if upper else torch.tril(x, k)
    return step


def _reduce_mean(node, attrs, opset):
    keepdims = bool(attrs.get("keepdims", 1))
    attr_axes = attrs.get("axes")

    def step(ctx, x, axes=None):
        axes = attr_axes if opset < 18 else (
            _as_list(_need_host("ReduceMean", "axes", axes)) if axes is not None else None)
        if axes is None or len(axes) == 0:
            axes = list(range(x.dim()))
        return x.mean(dim=tuple(axes), keepdim=keepdims)
    return step


OPS = {
    "Add": _binary(torch.add, lambda a, b: a + b),
    "Sub": _binary(torch.sub, lambda a, b: a - b),
    "Mul": _binary(torch.mul, lambda a, b: a * b),
    "Div": _binary(torch.div, _host_div, int_div=True),
    "Equal": _binary(torch.eq, lambda a, b: a == b),
    "Relu": _unary(torch.relu),
    "Erf": _unary(torch.erf),
    "Tanh": _unary(torch.tanh),
    "Sigmoid": _unary(torch.sigmoid),
    "Sqrt": _unary(torch.sqrt),
    "Exp": _unary(torch.exp),
    "Neg": _unary(torch.neg),
    "Reciprocal": _unary(torch.reciprocal),
    "Sin": _unary(torch.sin),
    "Cos": _unary(torch.cos),
    "HardSwish": _unary(torch.nn.functional.hardswish),
    "HardSigmoid": _hard_sigmoid,
    "Trilu": _trilu,
    "Identity": _identity,
    "Constant": _constant,
    "Shape": _shape,
    "Gather": _gather,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Concat": _concat,
    "Cast": _cast,
    "Slice": _slice,
    "Reshape": _reshape,
    "Transpose": _transpose,
    "Split": _split,
    "MatMul": _matmul,
    "Gemm": _gemm,
    "Conv": _conv,
    "MaxPool": _max_pool,
    "GlobalAveragePool": _global_average_pool,
    "BatchNormalization": _batch_norm,
    "LayerNormalization": _layer_norm,
    "Softmax": _softmax,
    "Flatten": _flatten,
    "Clip": _clip,
    "Where": _where,
    "ConstantOfShape": _constant_of_shape,
    "Expand": _expand,
    "Pow": _pow,
    "Range": _range,
    "ReduceMean": _reduce_mean,
}
# Ops that run in Python when every input is a host value (shape arithmetic).
HOST_OPS = {"Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Cast", "Slice", "Add", "Sub",
            "Mul", "Div", "Identity", "ConstantOfShape", "Equal", "Where", "Reshape"}


def _is_compiling():
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "is_compiling"):
        return compiler.is_compiling()
    return False


def unsupported_ops(model):
    """{op_type: first node name} for the nodes this interpreter cannot run."""
    missing = {}
    for node in model.graph.node:
        key = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        if key not in OPS and key not in missing:
            missing[key] = node.name or node.output[0]
    return missing


class OnnxModule(torch.nn.Module):
    """An ONNX model as a torch.nn.Module; forward(*inputs) in graph input order returns a
    tuple of the graph outputs."""

    def __init__(self, model, half=False, bf16=False):
        super().__init__()
        if isinstance(model, (str, os.PathLike)):
            model = onnx.load(os.fspath(model))
        graph = model.graph
        opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
        if opset is None:
            raise NotImplementedError("the model imports no ai.onnx opset")
        missing = unsupported_ops(model)
        if missing:
            raise NotImplementedError(
                "onnx_torch: unsupported op(s): " +
                ", ".join(f"{op} (e.g. node '{name}')" for op, name in missing.items()))
        if any(node.op_type in ("If", "Loop", "Scan") for node in graph.node):
            raise NotImplementedError("onnx_torch: control flow")
        # bf16=True: as half=True, in bfloat16 (ember's --precision bf16 on CUDA).
        self.half = half or bf16
        self._half_dtype = torch.bfloat16 if bf16 else torch.float16
        self._float_dtype = self._half_dtype if self.half else torch.float32

        init_names = {t.name for t in graph.initializer}
        self.input_names = [i.name for i in graph.input if i.name not in init_names]
        self._float_inputs = [i.type.tensor_type.elem_type in _FLOAT_TYPES
                              for i in graph.input if i.name not in init_names]
        self.output_names = [o.name for o in graph.output]

        arrays = {}  # onnx name -> numpy array: candidates for buffers
        host = {}    # onnx name -> host value known at construction
        for t in graph.initializer:
            arrays[t.name] = numpy_helper.to_array(t)

        # Walk the graph once: fold host-only nodes with constant inputs, classify the
        # rest as host (shape arithmetic, evaluated each forward) or device steps.
        host_names = set()  # values that are host values at run time
        ctx = _Ctx(torch.device("cpu"), self._float_dtype)
        steps = []
        for node in graph.node:
            attrs = _attrs(node)
            if node.op_type == "Constant":
                OPS["Constant"](node, attrs, opset)
                value = numpy_helper.to_array(attrs["value"])
                if value.ndim <= 1 and value.size <= HOST_CONSTANT_MAX and \
                        value.dtype.kind in "iuf":
                    host[node.output[0]] = _host_from_array(value)
                    host_names.add(node.output[0])
                else:
                    arrays[node.output[0]] = value
                continue
            fn = OPS[node.op_type](node, attrs, opset)
            ins = list(node.input)
            while ins and not ins[-1]:
                ins.pop()
            all_host = all(not i or i in host_names for i in ins)
            if node.op_type == "Shape" or (node.op_type in HOST_OPS and all_host and ins):
                if all(not i or i in host for i in ins) and node.op_type != "Shape":
                    outs = fn(ctx, *[host[i] if i else None for i in ins])
                    outs = outs if isinstance(outs, tuple) and len(node.output) > 1 else (outs,)
                    for name, value in zip(node.output, outs):
                        host[name] = value
                        host_names.add(name)
                    continue
                host_names.update(node.output)
            steps.append((fn, tuple(ins), tuple(node.output), node.op_type))
        # A step is "host" when it makes host values (shape arithmetic): their values are a
        # function of the input shapes alone (no op here has a data-dependent shape).
        is_host_step = [all(o in host_names for o in outs if o) for _, _, outs, _ in steps]

        # Buffers: only the constants the remaining steps (or outputs) read.
        used = {i for _, ins, _, _ in steps for i in ins if i} | set(self.output_names)
        self._buffer_map = []  # (onnx name, attribute name)
        for name, array in arrays.items():
            if name not in used or name in host:
                continue
            tensor = torch.from_numpy(np.ascontiguousarray(array).copy())
            if self.half and tensor.is_floating_point():
                tensor = tensor.to(self._half_dtype)
            attr = f"c{len(self._buffer_map)}"
            self.register_buffer(attr, tensor, persistent=False)
            self._buffer_map.append((name, attr))
        self._host_constants = {k: v for k, v in host.items() if k in used}
        self._steps = steps
        self._host_outputs = [o for (_, _, outs, _), h in zip(steps, is_host_step) if h
                              for o in outs if o]
        self._device_steps = [s for s, h in zip(steps, is_host_step) if not h]
        # Eager only: the host values of the last input shapes, so a repeated shape runs
        # only the device steps (torch.compile traces the shape arithmetic away itself).
        self._shape_cache_key = None
        self._shape_cache = None

    def forward(self, *inputs):
        if len(inputs) != len(self.input_names):
            raise TypeError(f"expected {len(self.input_names)} inputs "
                            f"({', '.join(self.input_names)}), got {len(inputs)}")
        compiling = _is_compiling()
        env = dict(self._host_constants)
        if compiling:
            for name, attr in self._buffer_map:
                env[name] = getattr(self, attr)
        else:
            buffers = self._buffers  # plain dict reads: __getattr__ costs ~1 us a buffer
            for name, attr in self._buffer_map:
                env[name] = buffers[attr]
        device = inputs[0].device if inputs else torch.device("cpu")
        ctx = _Ctx(device, self._float_dtype)
        for name, x, is_float in zip(self.input_names, inputs, self._float_inputs):
            env[name] = x.to(self._float_dtype) if is_float and x.dtype != self._float_dtype else x
        steps = self._steps
        key = None
        if not compiling:
            key = tuple(tuple(x.shape) for x in inputs)
            if key == self._shape_cache_key:
                env.update(self._shape_cache)
                steps = self._device_steps
        for fn, ins, outs, _ in steps:
            result = fn(ctx, *[env[i] if i else None for i in ins])
            if len(outs) == 1:
                env[outs[0]] = result
            else:
                for name, value in zip(outs, result):
                    if name:
                        env[name] = value
        if key is not None and steps is self._steps:
            self._shape_cache = {name: env[name] for name in self._host_outputs}
            self._shape_cache_key = key
        results = []
        for name in self.output_names:
            value = env[name]
            if not isinstance(value, torch.Tensor):
                value = ctx.tensor(value)
            if self.half and value.dtype == self._half_dtype:
                value = value.float()
            results.append(value)
        return tuple(results)


def _main():
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("inputs", nargs="*", help="name=file.npy, or file.npy in graph order")
    parser.add_argument("--half", action="store_true")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--compile", action="store_true", help="run through torch.compile")
    parser.add_argument("-o", "--output-dir")
    args = parser.parse_args()
    module = OnnxModule(args.model, half=args.half).to(args.device).eval()
    given = {}
    for k, arg in enumerate(args.inputs):
        name, _, path = arg.rpartition("=")
        given[name or module.input_names[k]] = np.load(path)
    missing = [n for n in module.input_names if n not in given]
    if missing:
        parser.error(f"missing input(s): {', '.join(missing)}")
    tensors = [torch.from_numpy(given[n]).to(args.device) for n in module.input_names]
    run = torch.compile(module) if args.compile else module
    with torch.no_grad():
        outputs = run(*tensors)
    for name, value in zip(module.output_names, outputs):
        array = value.cpu().numpy()
        print(f"{name}: {array.dtype} {list(array.shape)}  min {array.min():.6g}  "
              f"max {array.max():.6g}  mean {array.mean():.6g}")
        if args.output_dir:
            sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
                os.path.abspath(__file__))), "tests", "models"))
            from check_models import escape_name
            os.makedirs(args.output_dir, exist_ok=True)
            np.save(os.path.join(args.output_dir, escape_name(name) + ".npy"), array)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
