// CPU kernels for DepthToSpace and SpaceToDepth (DCR and CRD modes; SpaceToDepth has
// CRD from opset 28). Both are a reshape to 6-D, a transpose and a reshape back, as
// the ONNX spec defines them; the kernel precomputes the 6-D input strides in output order and copies elements as
// bytes, so every fixed-size dtype works.
#include "graph/schemas/shape_util.h"
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <array>
#include <cstring>

namespace ember {

namespace {

using Dims6 = std::array<int64_t, 6>;

class BlockPermuteKernel final : public Kernel {
 public:
  // out_dims: the transposed 6-D shape; in_strides: the input stride of each of them.
  BlockPermuteKernel(Dims6 out_dims, Dims6 in_strides, size_t elem)
      : dims_(out_dims), strides_(in_strides), elem_(elem) {}

  void run(const RunArgs& args) const override {
    const auto* in = static_cast<const char*>(args.inputs[0]->data());
    auto* out = static_cast<char*>(args.outputs[0]->data());
    const int64_t rows = dims_[0] * dims_[1] * dims_[2] * dims_[3] * dims_[4];
    parallel_for(rows, dims_[5], [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        int64_t rest = r, offset = 0;
        for (int d = 4; d >= 0; --d) {
          offset += (rest % dims_[d]) * strides_[d];
          rest /= dims_[d];
        }
        char* dst = out + static_cast<size_t>(r * dims_[5]) * elem_;
        for (int64_t i = 0; i < dims_[5]; ++i)
          std::memcpy(dst + i * elem_, in + static_cast<size_t>(offset + i * strides_[5]) * elem_, elem_);
      }
    });
  }

 private:
  Dims6 dims_, strides_;
  size_t elem_;
};

// The input viewed as `view` (6-D, row-major), transposed by `perm`.
std::unique_ptr<Kernel> make_block_permute(KernelInit& init, std::string* why_not, const Dims6& view,
                                           const Dims6& perm) {
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  if (elem == 0 || init.inputs[0].dtype == DType::String) {
    *why_not = unsupported_dtype(init, init.inputs[0].dtype);
    return nullptr;
  }
  Dims6 view_strides, dims, strides;
  int64_t stride = 1;
  for (int d = 5; d >= 0; --d) {
    view_strides[d] = stride;
    stride *= view[d];
  }
  for (int d = 0; d < 6; ++d) {
    dims[d] = view[perm[d]];
    strides[d] = view_strides[perm[d]];
  }
  return std::make_unique<BlockPermuteKernel>(dims, strides, elem);
}

std::unique_ptr<Kernel> make_depth_to_space(KernelInit& init, std::string* why_not) {
  const Shape& s = init.inputs[0].shape;
  const int64_t b = init.node.attributes.get_int("blocksize");
  const int64_t c = s[1] / (b * b);
  const std::string mode = init.opset >= 11 ? init.node.attributes.get_string_or("mode", "DCR") : "DCR";
  if (mode == "DCR") return make_block_permute(init, why_not, {s[0], b, b, c, s[2], s[3]}, {0, 3, 4, 1, 5, 2});
  if (mode == "CRD") return make_block_permute(init, why_not, {s[0], c, b, b, s[2], s[3]}, {0, 1, 4, 2, 5, 3});
  init.fail("mode must be DCR or CRD, got '" + mode + "'");
}

std::unique_ptr<Kernel> make_space_to_depth(KernelInit& init, std::string* why_not) {
  const Shape& s = init.inputs[0].shape;
  const int64_t b = init.node.attributes.get_int("blocksize");
  const Dims6 view = {s[0], s[1], s[2] / b, b, s[3] / b, b};
  const std::string mode = init.opset >= 28 ? init.node.attributes.get_string_or("mode", "DCR") : "DCR";
  if (mode == "DCR") return make_block_permute(init, why_not, view, {0, 3, 5, 1, 2, 4});
  if (mode == "CRD") return make_block_permute(init, why_not, view, {0, 1, 3, 5, 2, 4});
  init.fail("mode must be DCR or CRD, got '" + mode + "'");
}

}  // namespace

EMBER_KERNEL("DepthToSpace", "", 1, kMaxOpset, DeviceKind::Cpu, make_depth_to_space);
EMBER_KERNEL("SpaceToDepth", "", 1, kMaxOpset, DeviceKind::Cpu, make_space_to_depth);

}  // namespace ember
