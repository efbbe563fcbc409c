// The CUDA movement kernels' plans and index arithmetic, run on the host: each case's
// descriptor comes from the real plan_* function, and every output element is computed
// with the same functions the kernels call (ops/cuda/movement_index.h), in every unit
// width the run may pick and on the tiled-transpose path. The result must equal the
// CPU kernel's byte for byte (linear Resize: within float rounding), and no element may
// be read or written outside its tensor. These tests run without a GPU; what they do
// not cover is the launch itself (grid, shared memory, the vector types).
#include "ops/cuda/movement_index.h"
#include "ops/cuda/movement_plans.h"
#include "test_movement_util.h"

#include <cstring>
#include <functional>

namespace ember::test {
namespace {

using namespace ember::cuda;

// Copies `unit` bytes from input unit `off` to output unit `i`, failing (and skipping
// the copy) when either lies outside its tensor.
bool copy_unit(const Tensor& in, int64_t off, Tensor& out, int64_t i, size_t unit) {
  const int64_t in_units = static_cast<int64_t>(in.nbytes() / unit);
  const int64_t out_units = static_cast<int64_t>(out.nbytes() / unit);
  if (off < 0 || off >= in_units || i < 0 || i >= out_units) {
    ADD_FAILURE() << "unit " << i << " reads " << off << " of " << in_units << " (out of bounds)";
    return false;
  }
  std::memcpy(static_cast<uint8_t*>(out.data()) + i * unit, static_cast<const uint8_t*>(in.data()) + off * unit, unit);
  return true;
}

Tensor blank(const TensorType& t) {
  Tensor out(t.dtype, t.shape);
  std::memset(out.data(), 0x7f, out.nbytes());  // a pattern: unwritten elements must not pass
  return out;
}

size_t elem_of(DType t) { return static_cast<size_t>(dtype_bits(t) / 8); }

// The widest unit a run may pick for rows of `bytes` bytes.
int64_t max_unit(int64_t bytes) { return static_cast<int64_t>(pow2_divisor(static_cast<uint64_t>(bytes))); }

// ---- Strided copy -----------------------------------------------------------------------

Tensor emulate_copy(const StridedCopy& c, const Tensor& in, const TensorType& out_type) {
  Tensor out = blank(out_type);
  for (int64_t i = 0; i < c.numel; ++i) {
    const int64_t off = strided_offset<int64_t>(c, i);
    // The launcher's 32-bit path must agree wherever it would be taken.
    if (c.numel < (int64_t{1} << 30) && c.in_extent * (c.rank + 1) < (int64_t{1} << 31)) {
      EXPECT_EQ(strided_offset<int32_t>(c, static_cast<int32_t>(i)), off);
    }
    if (!copy_unit(in, off, out, i, static_cast<size_t>(c.unit))) break;
  }
  return out;
}

template <class T> void emulate_tiled_typed(const TiledTranspose& t, const T* in, T* out) {
  const int64_t tiles_a = (t.size_a + kTile - 1) / kTile, tiles_b = (t.size_b + kTile - 1) / kTile;
  T tile[kTile][kTile + 1];
  for (int64_t batch = 0; batch < t.batches; ++batch) {
    int64_t in_off, out_off;
    tiled_batch_offsets(t, batch, in_off, out_off);
    for (int64_t block = 0; block < tiles_a * tiles_b; ++block) {
      const int64_t a0 = (block % tiles_a) * kTile, b0 = (block / tiles_a) * kTile;
      for (int ty = 0; ty < kTileRows; ++ty)
        for (int tx = 0; tx < kTile; ++tx) tiled_load(t, in, tile, in_off, a0, b0, tx, ty);
      for (int ty = 0; ty < kTileRows; ++ty)
        for (int tx = 0; tx < kTile; ++tx) tiled_store(t, out, tile, out_off, a0, b0, tx, ty);
    }
  }
}

Tensor emulate_tiled(const TiledTranspose& t, const Tensor& in, const TensorType& out_type) {
  Tensor out = blank(out_type);
  // Bounds: the largest offsets either side touches must lie inside the tensors.
  int64_t in_max = (t.size_a - 1) + (t.size_b - 1) * t.in_stride_b;
  int64_t out_max = (t.size_a - 1) * t.out_stride_a + t.size_b - 1;
  for (int d = 0; d < t.batch_rank; ++d) {
    in_max += (t.batch_dims[d] - 1) * t.batch_in_strides[d];
    out_max += (t.batch_dims[d] - 1) * t.batch_out_strides[d];
  }
  EXPECT_LT(in_max, in.numel());
  EXPECT_LT(out_max, out.numel());
  EXPECT_EQ(t.batches * t.size_a * t.size_b, out.numel());
  if (in_max >= in.numel() || out_max >= out.numel()) return out;
  switch (t.unit) {
    case 1: emulate_tiled_typed(t, in.data_as<uint8_t>(), out.data_as<uint8_t>()); break;
    case 2: emulate_tiled_typed(t, in.data_as<uint16_t>(), out.data_as<uint16_t>()); break;
    case 4: emulate_tiled_typed(t, in.data_as<uint32_t>(), out.data_as<uint32_t>()); break;
    case 8: emulate_tiled_typed(t, in.data_as<uint64_t>(), out.data_as<uint64_t>()); break;
    default: ADD_FAILURE() << "tiled unit " << t.unit;
  }
  return out;
}

void check_strided_cases(const std::vector<MoveCase>& cases) {
  for (const MoveCase& c : cases) {
    SCOPED_TRACE(c.label);
    InitFor f(c);
    StridedCopyPlan plan;
    std::string why;
    ASSERT_TRUE(plan_strided(*f.init, plan, &why)) << why;
    const Tensor want = evaluate_node(c.node, c.opset, c.ptrs())[0];
    const Tensor& in = c.inputs[0];
    if (plan.tiled()) {
      expect_same_bytes(emulate_tiled(plan.tiled_plan(), in, f.outputs[0]), want, c.label + " (tiled)");
    } else {
      expect_same_bytes(emulate_copy(plan.narrow(), in, f.outputs[0]), want, c.label + " (element units)");
      expect_same_bytes(emulate_copy(plan.wide(), in, f.outputs[0]), want, c.label + " (wide units)");
    }
    if (want.numel()) {
      EXPECT_EQ(plan.narrow().unit, static_cast<int>(elem_of(in.dtype())));
    }
  }
}

TEST(CudaMovementEmulated, TransposeMatchesCpu) { check_strided_cases(transpose_cases()); }
TEST(CudaMovementEmulated, SliceMatchesCpu) { check_strided_cases(slice_cases()); }
TEST(CudaMovementEmulated, ExpandAndTileMatchCpu) { check_strided_cases(expand_tile_cases()); }
TEST(CudaMovementEmulated, DepthToSpaceAndSpaceToDepthMatchCpu) { check_strided_cases(depth_space_cases()); }

// The plans the fast paths depend on: attention's (0, 2, 1, 3) moves 16-byte units over
// 3 merged dims; swapping the last two dims goes through tiles; broadcasts merge.
TEST(CudaMovementEmulated, PlansPickTheFastPaths) {
  auto plan_of = [](const MoveCase& c) {
    InitFor f(c);
    StridedCopyPlan plan;
    std::string why;
    EXPECT_TRUE(plan_strided(*f.init, plan, &why)) << why;
    return plan;
  };
  MoveCase bshd;
  bshd.node = make_node("Transpose", 1, 1, with_ints("perm", {0, 2, 1, 3}));
  bshd.inputs = {Tensor(DType::Float16, {2, 128, 12, 64})};
  const StridedCopyPlan a = plan_of(bshd);
  EXPECT_FALSE(a.tiled());
  EXPECT_EQ(a.wide().unit, 16);
  EXPECT_EQ(a.wide().rank, 4);  // [B, H, S, 8 units of 16 bytes]
  EXPECT_EQ(a.wide().dims[3], 8);

  MoveCase swap;
  swap.node = make_node("Transpose", 1, 1, with_ints("perm", {0, 2, 1}));
  swap.inputs = {Tensor(DType::Float32, {4, 100, 36})};
  const StridedCopyPlan b = plan_of(swap);
  ASSERT_TRUE(b.tiled());
  EXPECT_EQ(b.tiled_plan().size_a, 36);
  EXPECT_EQ(b.tiled_plan().size_b, 100);
  EXPECT_EQ(b.tiled_plan().batches, 4);

  MoveCase expand;
  expand.node = make_node("Expand", 2);
  expand.inputs = {Tensor(DType::Float32, {1, 1, 64}), int_vector({2, 3, 1})};
  expand.plan_time = {1};
  const StridedCopyPlan e = plan_of(expand);
  EXPECT_EQ(e.wide().rank, 2);  // [6 broadcast rows, 16 units]
  EXPECT_EQ(e.wide().strides[0], 0);
  EXPECT_EQ(e.wide().unit, 16);
}

// ---- Concat / Split -----------------------------------------------------------------------

TEST(CudaMovementEmulated, ConcatAndSplitMatchCpuInEveryUnit) {
  for (const MoveCase& c : concat_split_cases()) {
    SCOPED_TRACE(c.label);
    InitFor f(c);
    PieceBlocks b;
    std::string why;
    ASSERT_TRUE(plan_pieces(*f.init, b, &why)) << why;
    const std::vector<Tensor> want = evaluate_node(c.node, c.opset, c.ptrs());
    for (size_t unit = 1; unit <= b.max_unit; unit *= 2) {
      std::vector<Tensor> outs;
      for (const TensorType& t : f.outputs) outs.push_back(blank(t));
      // Every tensor's byte range, to check each copy stays inside one.
      std::vector<std::pair<const uint8_t*, size_t>> ranges;
      for (const Tensor& t : c.inputs) ranges.push_back({static_cast<const uint8_t*>(t.data()), t.nbytes()});
      for (const Tensor& t : outs) ranges.push_back({static_cast<const uint8_t*>(t.data()), t.nbytes()});
      auto inside = [&](const void* p, size_t n) {
        for (const auto& [base, size] : ranges)
          if (static_cast<const uint8_t*>(p) >= base && static_cast<const uint8_t*>(p) + n <= base + size) return true;
        return false;
      };
      auto launch = [&](const CopyPieces& p) {
        ASSERT_LE(p.count, kMaxPieces);
        for (int q = 0; q < p.count; ++q) {
          const CopyPieces::Piece& piece = p.pieces[q];
          ASSERT_LE(p.rows * piece.width, p.max_piece);
          for (int64_t i = 0; i < p.rows * piece.width; ++i) {
            int64_t s, d;
            piece_offsets(piece, i, s, d);
            const auto* src = static_cast<const uint8_t*>(piece.src) + s * static_cast<int64_t>(unit);
            auto* dst = static_cast<uint8_t*>(piece.dst) + d * static_cast<int64_t>(unit);
            ASSERT_TRUE(inside(src, unit) && inside(dst, unit)) << "piece " << q << " unit " << i;
            std::memcpy(dst, src, unit);
          }
        }
      };
      if (b.concat) {
        auto src = [&](size_t i) -> const void* { return c.inputs[i].data(); };
        auto dst = [&](size_t) -> void* { return outs[0].data(); };
        EXPECT_EQ(pieces_unit(b, src, dst), b.max_unit);  // host tensors are 64-byte aligned
        for_each_piece_group(b, unit, src, dst, launch);
      } else {
        auto src = [&](size_t) -> const void* { return c.inputs[0].data(); };
        auto dst = [&](size_t i) -> void* { return outs[i].data(); };
        for_each_piece_group(b, unit, src, dst, launch);
      }
      ASSERT_EQ(outs.size(), want.size());
      for (size_t o = 0; o < outs.size(); ++o)
        expect_same_bytes(outs[o], want[o], c.label + " output " + std::to_string(o) + " unit " + std::to_string(unit));
    }
  }
}

// ---- Gather / Scatter ---------------------------------------------------------------------

template <class F> void with_index_type(const Tensor& indices, F&& f) {
  if (indices.dtype() == DType::Int64) f(indices.data_as<int64_t>());
  else f(indices.data_as<int32_t>());
}

TEST(CudaMovementEmulated, GatherFamilyMatchesCpuInEveryUnit) {
  for (const MoveCase& c : gather_cases()) {
    SCOPED_TRACE(c.label);
    InitFor f(c);
    std::string why;
    const Tensor want = evaluate_node(c.node, c.opset, c.ptrs())[0];
    const Tensor& data = c.inputs[0];
    const Tensor& indices = c.inputs[1];
    if (c.node.op_type == "Gather") {
      GatherParams bytes;
      ASSERT_TRUE(plan_gather(*f.init, bytes, &why)) << why;
      for (int64_t unit = 1; unit <= max_unit(bytes.inner); unit *= 2) {
        const GatherParams p = gather_for_unit(bytes, unit);
        Tensor out = blank(f.outputs[0]);
        with_index_type(indices, [&](auto* idx) {
          for (int64_t i = 0; i < p.outer * p.count * p.inner; ++i) {
            const int64_t off = gather_source(p, idx, i);
            ASSERT_GE(off, 0);
            ASSERT_TRUE(copy_unit(data, off, out, i, static_cast<size_t>(unit)));
          }
        });
        expect_same_bytes(out, want, c.label + " unit " + std::to_string(unit));
      }
    } else if (c.node.op_type == "GatherElements") {
      ElementsParams p;
      ASSERT_TRUE(plan_elements(*f.init, p, &why)) << why;
      Tensor out = blank(f.outputs[0]);
      with_index_type(indices, [&](auto* idx) {
        for (int64_t i = 0; i < p.numel; ++i) {
          const int64_t off = elements_offset(p, idx, i);
          ASSERT_GE(off, 0);
          ASSERT_TRUE(copy_unit(data, off, out, i, static_cast<size_t>(p.elem)));
        }
      });
      expect_same_bytes(out, want, c.label);
    } else {
      NDParams bytes;
      ASSERT_TRUE(plan_nd(*f.init, bytes, &why)) << why;
      for (int64_t unit = 1; unit <= max_unit(bytes.slice); unit *= 2) {
        const NDParams p = nd_for_unit(bytes, unit);
        Tensor out = blank(f.outputs[0]);
        for (int64_t i = 0; i < p.total_tuples * p.slice; ++i) {
          const int64_t off = nd_offset(p, indices.data_as<int64_t>(), i);
          ASSERT_GE(off, 0);
          ASSERT_TRUE(copy_unit(data, off, out, i, static_cast<size_t>(unit)));
        }
        expect_same_bytes(out, want, c.label + " unit " + std::to_string(unit));
      }
    }
  }
}

// Out-of-range indices (the CPU raises) never read outside the data: gathers give
// zero bytes, scatters leave the data as it was.
TEST(CudaMovementEmulated, OutOfRangeIndicesStayInBounds) {
  std::mt19937 rng(5);
  MoveCase c;
  c.node = make_node("Gather", 2, 1, with_int("axis", 1));
  c.opset = 13;
  c.inputs = {random_tensor(DType::Float32, {3, 5}, 1, 2, rng),
              int_vector({0, 5, -6, 1000000, -5, 4})};
  InitFor f(c);
  GatherParams bytes;
  std::string why;
  ASSERT_TRUE(plan_gather(*f.init, bytes, &why)) << why;
  const GatherParams p = gather_for_unit(bytes, 4);
  const float* in = c.inputs[0].data_as<float>();
  for (int64_t i = 0; i < p.outer * p.count * p.inner; ++i) {
    const int64_t k = (i / p.inner) % p.count, o = i / (p.inner * p.count);
    const int64_t off = gather_source(p, c.inputs[1].data_as<int64_t>(), i);
    if (k == 1 || k == 2 || k == 3) {
      EXPECT_EQ(off, -1) << "index " << k;
    } else {
      const int64_t idx = k == 0 ? 0 : k == 4 ? 0 : 4;
      EXPECT_EQ(off, o * 5 + idx);
      EXPECT_GT(in[off], 0.f);
    }
  }
  ElementsParams e;
  e.rank = 2;
  e.axis = 0;
  e.numel = 2;
  e.axis_len = 3;
  e.dims[0] = 1;
  e.dims[1] = 2;
  e.data_strides[0] = 5;
  e.data_strides[1] = 1;
  const int64_t bad[2] = {3, -4};
  EXPECT_EQ(elements_offset(e, bad, 0), -1);
  EXPECT_EQ(elements_offset(e, bad, 1), -1);
  NDParams n;
  n.k = 2;
  n.total_tuples = n.tuples = 1;
  n.slice = 1;
  n.dims[0] = 3;
  n.dims[1] = 5;
  n.strides[0] = 5;
  n.strides[1] = 1;
  const int64_t tuple[2] = {-1, 5};
  EXPECT_EQ(nd_offset(n, tuple, 0), -1);
}

TEST(CudaMovementEmulated, ScattersMatchCpu) {
  for (const MoveCase& c : scatter_cases()) {
    SCOPED_TRACE(c.label);
    InitFor f(c);
    std::string why;
    const Tensor want = evaluate_node(c.node, c.opset, c.ptrs())[0];
    const Tensor& indices = c.inputs[1];
    const Tensor& updates = c.inputs[2];
    if (c.node.op_type == "ScatterElements") {
      ElementsParams p;
      ASSERT_TRUE(plan_elements(*f.init, p, &why)) << why;
      Tensor out = c.inputs[0].clone();
      with_index_type(indices, [&](auto* idx) {
        for (int64_t i = 0; i < p.numel; ++i) {
          const int64_t off = elements_offset(p, idx, i);
          ASSERT_GE(off, 0);
          ASSERT_TRUE(copy_unit(updates, i, out, off, static_cast<size_t>(p.elem)));
        }
      });
      expect_same_bytes(out, want, c.label);
    } else {
      NDParams bytes;
      ASSERT_TRUE(plan_nd(*f.init, bytes, &why)) << why;
      for (int64_t unit = 1; unit <= max_unit(bytes.slice); unit *= 2) {
        const NDParams p = nd_for_unit(bytes, unit);
        Tensor out = c.inputs[0].clone();
        for (int64_t i = 0; i < p.total_tuples * p.slice; ++i) {
          const int64_t off = nd_offset(p, indices.data_as<int64_t>(), i);
          ASSERT_GE(off, 0);
          ASSERT_TRUE(copy_unit(updates, i, out, off, static_cast<size_t>(unit)));
        }
        expect_same_bytes(out, want, c.label + " unit " + std::to_string(unit));
      }
    }
  }
}

// ---- Pad ----------------------------------------------------------------------------------

TEST(CudaMovementEmulated, PadMatchesCpu) {
  for (const MoveCase& c : pad_cases()) {
    SCOPED_TRACE(c.label);
    InitFor f(c);
    PadDims p;
    uint64_t fill_bits = 0;
    bool fill_from_input = false;
    std::string why;
    ASSERT_TRUE(plan_pad(*f.init, p, fill_bits, fill_from_input, &why)) << why;
    const Tensor want = evaluate_node(c.node, c.opset, c.ptrs())[0];
    const size_t elem = static_cast<size_t>(p.elem);
    Tensor out = blank(f.outputs[0]);
    ASSERT_EQ(p.numel, out.numel());
    for (int64_t i = 0; i < p.numel; ++i) {
      const int64_t off = pad_source(p, i);
      if (off >= 0) {
        ASSERT_TRUE(copy_unit(c.inputs[0], off, out, i, elem));
      } else {
        const void* fill = fill_from_input ? c.inputs[2].data() : static_cast<const void*>(&fill_bits);
        std::memcpy(static_cast<uint8_t*>(out.data()) + i * elem, fill, elem);  // little-endian low bytes
      }
    }
    expect_same_bytes(out, want, c.label);
  }
}

// ---- Resize -------------------------------------------------------------------------------

TEST(CudaMovementEmulated, ResizeNearestMatchesCpuExactly) {
  for (DType t : {DType::Float32, DType::Float16, DType::Int64, DType::Int8}) {
    for (const MoveCase& c : resize_cases(false, t)) {
      SCOPED_TRACE(c.label);
      InitFor f(c);
      ResizeDesc d;
      std::string why;
      ASSERT_TRUE(plan_resize(*f.init, d, &why)) << why;
      const Tensor want = evaluate_node(c.node, c.opset, c.ptrs())[0];
      Tensor out = blank(f.outputs[0]);
      ASSERT_EQ(d.planes * d.h.out_len * d.w.out_len, out.numel());
      for (int64_t i = 0; i < out.numel(); ++i)
        ASSERT_TRUE(copy_unit(c.inputs[0], resize_nearest_offset(d, i), out, i, static_cast<size_t>(d.elem)));
      expect_same_bytes(out, want, c.label);
    }
  }
}

TEST(CudaMovementEmulated, ResizeLinearMatchesCpu) {
  for (DType t : {DType::Float32, DType::Float16}) {
    for (const MoveCase& c : resize_cases(true, t)) {
      SCOPED_TRACE(c.label);
      InitFor f(c);
      ResizeDesc d;
      std::string why;
      ASSERT_TRUE(plan_resize(*f.init, d, &why)) << why;
      const Tensor want = run_on_cpu(c.node, c.opset, c.ptrs())[0];  // float16 widened to float32
      const Tensor in = cast_to(c.inputs[0], DType::Float32);
      const float* x = in.data_as<float>();
      Tensor out(DType::Float32, f.outputs[0].shape);
      for (int64_t i = 0; i < out.numel(); ++i)
        out.data_as<float>()[i] = resize_linear_value(d, i, [&](int64_t off) {
          EXPECT_TRUE(off >= 0 && off < in.numel());
          return off >= 0 && off < in.numel() ? x[off] : 0.f;
        });
      // float32: weights and sums in float vs the CPU's double (inputs in [-100, 100]);
      // float16: the kernel stores half (relative rounding 2^-11).
      if (t == DType::Float32) expect_close(out, want, 1e-5, 1e-4, c.label);
      else expect_close(cast_to(out, DType::Float16), want, 1e-2, 1e-2, c.label);
    }
  }
}

TEST(CudaMovementEmulated, ResizeAntialiasIsLeftToTheCpuWhenDownsampling) {
  std::mt19937 rng(23);
  for (const float scale : {0.5f, 2.f}) {
    Attributes a = with_string("mode", "linear");
    a.set_int("antialias", 1);
    MoveCase c;
    c.node = make_node("Resize", 4, 1, a);
    c.opset = 19;
    c.inputs = {random_tensor(DType::Float32, {1, 1, 6, 8}, -100, 100, rng), Tensor(),
                float_vector({1, 1, scale, scale}), Tensor()};
    c.plan_time = {2, 3};
    // Enlarging, antialias changes nothing and CUDA runs it as plain linear.
    if (scale < 1) EXPECT_NE(cuda_declines(c).find("antialias"), std::string::npos);
    else EXPECT_EQ(cuda_declines(c), "");
  }
}

// ---- Trilu / OneHot -----------------------------------------------------------------------

TEST(CudaMovementEmulated, TriluAndOneHotMatchCpu) {
  for (const MoveCase& c : trilu_one_hot_cases()) {
    SCOPED_TRACE(c.label);
    InitFor f(c);
    ASSERT_EQ(cuda_declines(c), "");
    const Tensor want = evaluate_node(c.node, c.opset, c.ptrs())[0];
    Tensor out = blank(f.outputs[0]);
    if (c.node.op_type == "Trilu") {
      const Tensor& x = c.inputs[0];
      const int64_t k = c.inputs.size() > 1 ? c.inputs[1].data_as<int64_t>()[0] : 0;
      const int64_t rows = x.shape()[x.rank() - 2], cols = x.shape()[x.rank() - 1];
      const size_t elem = elem_of(x.dtype());
      const bool upper = c.node.attributes.get_int_or("upper", 1) != 0;
      for (int64_t i = 0; i < x.numel(); ++i) {
        if (trilu_keeps(i, rows, cols, upper, k)) copy_unit(x, i, out, i, elem);
        else std::memset(static_cast<uint8_t*>(out.data()) + i * elem, 0, elem);
      }
    } else {
      const Shape& s = f.outputs[0].shape;
      int64_t axis = c.node.attributes.get_int_or("axis", -1);
      if (axis < 0) axis += static_cast<int64_t>(s.size());
      int64_t inner = 1;
      for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) inner *= s[d];
      const int64_t depth = s[static_cast<size_t>(axis)];
      const Tensor& idx = c.inputs[0];
      const size_t elem = elem_of(c.inputs[2].dtype());
      for (int64_t i = 0; i < out.numel(); ++i) {
        int64_t d;
        const int64_t src = one_hot_source(i, depth, inner, d);
        ASSERT_LT(src, idx.numel());
        const int64_t v = idx.dtype() == DType::Int64   ? idx.data_as<int64_t>()[src]
                          : idx.dtype() == DType::Int32 ? idx.data_as<int32_t>()[src]
                                                        : static_cast<int64_t>(idx.data_as<float>()[src]);
        copy_unit(c.inputs[2], one_hot_is_hot(v, d, depth) ? 1 : 0, out, i, elem);
      }
    }
    expect_same_bytes(out, want, c.label);
  }
}

}  // namespace
}  // namespace ember::test
