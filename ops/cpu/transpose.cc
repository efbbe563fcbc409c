// Transpose: an IndexCopy whose tables walk the input with permuted strides. The
// IndexCopy merges dims that stay adjacent and memcpys when the innermost dim is kept
// (BERT's [B,S,H,D] -> [B,H,S,D] copies rows of D). A permutation that swaps the last
// two of its merged dims (NCHW <-> NHWC is [N][C][HW] <-> [N][HW][C]) runs as tiled
// matrix transposes instead: copying a 3-channel image row by row of 3 elements was
// 0.19 ms of MobileNetV3's 3.5.
// com.ember ToBlocked and FromBlocked (the CPU's blocked layout, graph/schemas/
// blocked_layout.cc) are the same batched transposes: [N C/b][b][D..] <-> [N C/b][D..][b],
// and com.ember ChannelShuffle is [outer][g][C/g][inner] -> [outer][C/g][g][inner].
#include "graph/schemas/channel_shuffle.h"
#include "graph/schemas/shape_util.h"
#include "ops/cpu/index_copy.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace ember {

namespace {

// The input's dims of size > 1, with dims that stay adjacent and in order under perm
// merged into one. Returns the merged input dims in input order and the permutation.
void merge_dims(const Shape& in, std::vector<int64_t> perm, Shape* dims, std::vector<int64_t>* merged_perm) {
  std::vector<int64_t> kept;  // input dims that are not 1, in output order
  for (int64_t p : perm)
    if (in[p] != 1) kept.push_back(p);
  std::vector<std::vector<int64_t>> groups;  // runs of consecutive input dims, in output order
  for (int64_t p : kept) {
    if (!groups.empty() && groups.back().back() + 1 == p) groups.back().push_back(p);
    else groups.push_back({p});
  }
  std::vector<size_t> by_input(groups.size());
  for (size_t i = 0; i < by_input.size(); ++i) by_input[i] = i;
  std::sort(by_input.begin(), by_input.end(), [&](size_t a, size_t b) { return groups[a][0] < groups[b][0]; });
  dims->clear();
  merged_perm->assign(groups.size(), 0);
  for (size_t k = 0; k < by_input.size(); ++k) {
    int64_t size = 1;
    for (int64_t d : groups[by_input[k]]) size *= in[d];
    dims->push_back(size);
    (*merged_perm)[by_input[k]] = static_cast<int64_t>(k);
  }
}

// [B][R][S] -> [B][S][R] in tiles that stay in cache on both sides.
template <class T>
class BatchedTransposeKernel final : public Kernel {
 public:
  BatchedTransposeKernel(int64_t b, int64_t r, int64_t s) : b_(b), r_(r), s_(s) {}

  void run(const RunArgs& args) const override {
    const T* in = args.inputs[0]->data_as<T>();
    T* out = args.outputs[0]->data_as<T>();
    const int64_t bands = (s_ + kTile - 1) / kTile;  // output rows, kTile at a time
    parallel_for(b_ * bands, kTile * r_, [&](int64_t begin, int64_t end) {
      for (int64_t job = begin; job < end; ++job) {
        const int64_t b = job / bands, s0 = job % bands * kTile, s1 = std::min(s0 + kTile, s_);
        const T* from = in + b * r_ * s_;
        T* to = out + b * r_ * s_;
        for (int64_t r0 = 0; r0 < r_; r0 += kTile) {
          const int64_t r1 = std::min(r0 + kTile, r_);
          for (int64_t s = s0; s < s1; ++s)
            for (int64_t r = r0; r < r1; ++r) to[s * r_ + r] = from[r * s_ + s];
        }
      }
    });
  }

 private:
  static constexpr int64_t kTile = 32;
  int64_t b_, r_, s_;
};

// [B][R][S] -> [B][S][R] for a few rows R (an RGB image to channels-last): R known
// when compiled lets GCC interleave whole vectors, where the tiled loop above moved
// rows of 3 one element at a time (0.043 against 0.016 ms for a 224x224 image).
template <class T, int R>
class InterleaveRowsKernel final : public Kernel {
 public:
  InterleaveRowsKernel(int64_t b, int64_t s) : b_(b), s_(s) {}

  void run(const RunArgs& args) const override {
    const T* in = args.inputs[0]->data_as<T>();
    T* out = args.outputs[0]->data_as<T>();
    const int64_t chunks = (s_ + kChunk - 1) / kChunk;
    parallel_for(b_ * chunks, kChunk * R, [&](int64_t begin, int64_t end) {
      for (int64_t job = begin; job < end; ++job) {
        const int64_t b = job / chunks, s0 = job % chunks * kChunk, s1 = std::min(s0 + kChunk, s_);
        const T* from = in + b * R * s_;
        T* to = out + b * R * s_;
        for (int64_t s = s0; s < s1; ++s)
          for (int r = 0; r < R; ++r) to[s * R + r] = from[r * s_ + s];
      }
    });
  }

 private:
  static constexpr int64_t kChunk = 4096;
  int64_t b_, s_;
};

std::unique_ptr<Kernel> make_batched_transpose(size_t elem, int64_t b, int64_t r, int64_t s) {
  if (elem == 4 && r == 2) return std::make_unique<InterleaveRowsKernel<uint32_t, 2>>(b, s);
  if (elem == 4 && r == 3) return std::make_unique<InterleaveRowsKernel<uint32_t, 3>>(b, s);
  if (elem == 4 && r == 4) return std::make_unique<InterleaveRowsKernel<uint32_t, 4>>(b, s);
  if (elem == 4 && r == 8) return std::make_unique<InterleaveRowsKernel<uint32_t, 8>>(b, s);
  if (elem == 4 && r == 16) return std::make_unique<InterleaveRowsKernel<uint32_t, 16>>(b, s);
  switch (elem) {
    case 1: return std::make_unique<BatchedTransposeKernel<uint8_t>>(b, r, s);
    case 2: return std::make_unique<BatchedTransposeKernel<uint16_t>>(b, r, s);
    case 4: return std::make_unique<BatchedTransposeKernel<uint32_t>>(b, r, s);
    case 8: return std::make_unique<BatchedTransposeKernel<uint64_t>>(b, r, s);
    default: return nullptr;
  }
}

// `in` permuted by `perm` (non-negative), elements of `elem` bytes.
std::unique_ptr<Kernel> make_permutation(size_t elem, const Shape& in, const std::vector<int64_t>& perm) {
  if (shape_numel(in) == 0) return std::make_unique<IndexCopyKernel>(IndexCopy::nothing(elem));
  Shape dims;
  std::vector<int64_t> merged;
  merge_dims(in, perm, &dims, &merged);
  if (merged == std::vector<int64_t>{1, 0}) {  // one matrix: a batch of one
    dims.insert(dims.begin(), 1);
    merged = {0, 2, 1};
  }
  if (merged == std::vector<int64_t>{0, 2, 1})
    if (auto k = make_batched_transpose(elem, dims[0], dims[1], dims[2])) return k;
  const auto strides = contiguous_strides(in);
  std::vector<std::vector<int64_t>> tables;
  for (int64_t p : perm) tables.push_back(IndexCopy::affine(in[p], 0, strides[p]));
  return std::make_unique<IndexCopyKernel>(IndexCopy(std::move(tables), elem));
}

std::unique_ptr<Kernel> make_transpose(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  if (!elem) {
    *why_not = std::string("unsupported dtype ") + dtype_name(init.inputs[0].dtype);
    return nullptr;
  }
  const Shape& in = init.inputs[0].shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> perm = init.node.attributes.get_ints_or("perm", {});
  if (perm.empty())
    for (int64_t i = rank; i-- > 0;) perm.push_back(i);
  for (int64_t& p : perm)
    if (p < 0) p += rank;
  return make_permutation(elem, in, perm);
}

// com.ember ChannelShuffle: the axis viewed as [group, C / group] and those two swapped,
// [outer, g, C/g, inner] -> [outer, C/g, g, inner]. Channels-last (inner 1) interleaves
// the groups' rows of channels at each position; NCHW moves whole planes.
std::unique_ptr<Kernel> make_channel_shuffle(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  if (!elem) {
    *why_not = std::string("unsupported dtype ") + dtype_name(init.inputs[0].dtype);
    return nullptr;
  }
  const Shape& x = init.inputs[0].shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  if (!channel_shuffle_fused_for(init.node, x)) {
    *why_not = "X is " + shape_to_string(x) + ", not the x_shape it was fused for";
    return nullptr;
  }
  int64_t axis = init.node.attributes.get_int_or("axis", 1);
  if (axis < 0) axis += rank;
  const int64_t group = init.node.attributes.get_int("group");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) outer *= x[d];
    if (d > axis) inner *= x[d];
  }
  return make_permutation(elem, {outer, group, x[axis] / group, inner}, {0, 2, 1, 3});
}

// N x C/b x S x b -> N x S x C (FromBlocked with channels_last): for each image and
// position, its blocks of b channels side by side.
class BlocksToChannelsLastKernel final : public Kernel {
 public:
  BlocksToChannelsLastKernel(const Shape& x, size_t elem)
      : images_(x[0]), groups_(x[1]), positions_(shape_numel(x) / std::max<int64_t>(x[0] * x[1] * x.back(), 1)),
        block_bytes_(x.back() * elem) {}

  void run(const RunArgs& args) const override {
    const auto* in = static_cast<const char*>(args.inputs[0]->data());
    auto* out = static_cast<char*>(args.outputs[0]->data());
    const int64_t row = groups_ * block_bytes_;
    parallel_for(images_ * positions_, groups_ * 4, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t n = r / positions_, s = r % positions_;
        const char* from = in + (n * groups_ * positions_ + s) * block_bytes_;
        for (int64_t g = 0; g < groups_; ++g)
          std::memcpy(out + r * row + g * block_bytes_, from + g * positions_ * block_bytes_, block_bytes_);
      }
    });
  }

 private:
  int64_t images_, groups_, positions_, block_bytes_;
};

// N x C x D.. <-> N x C/b x D.. x b: blocks of b channel planes, interleaved.
template <bool kToBlocked>
std::unique_ptr<Kernel> make_blocked_conversion(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  const Shape& blocked = kToBlocked ? init.outputs[0].shape : init.inputs[0].shape;
  const int64_t block = blocked.back(), planes = shape_numel(blocked) / std::max<int64_t>(block, 1);
  const int64_t groups = blocked[0] * blocked[1], plane = planes / std::max<int64_t>(groups, 1);
  if (elem && !kToBlocked && init.node.attributes.get_int_or("channels_last", 0) != 0)
    return std::make_unique<BlocksToChannelsLastKernel>(blocked, elem);
  std::unique_ptr<Kernel> k;
  if (elem) k = make_batched_transpose(elem, groups, kToBlocked ? block : plane, kToBlocked ? plane : block);
  if (!k) *why_not = std::string("unsupported dtype ") + dtype_name(init.inputs[0].dtype);
  return k;
}

}  // namespace

EMBER_KERNEL("Transpose", "", 1, kMaxOpset, DeviceKind::Cpu, make_transpose);
EMBER_KERNEL("ChannelShuffle", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, make_channel_shuffle);
EMBER_KERNEL("ToBlocked", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, make_blocked_conversion<true>);
EMBER_KERNEL("FromBlocked", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, make_blocked_conversion<false>);

}  // namespace ember
