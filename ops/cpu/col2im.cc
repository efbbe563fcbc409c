// CPU kernel for Col2Im: the inverse of im2col. Input [N, C * prod(block), L] holds,
// per block position l and kernel offset k, the pixel at l * stride - pad_begin +
// k * dilation; overlapping contributions are summed into the [N, C, *image] output.
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <algorithm>

namespace ember {

namespace {

struct Col2ImGeometry {
  std::vector<int64_t> image, block, strides, dilations, pads_begin, blocks;  // per spatial dim
  int64_t kernel = 1, positions = 1, pixels = 1;
};

template <class T>
class Col2ImKernel final : public Kernel {
 public:
  explicit Col2ImKernel(Col2ImGeometry g) : g_(std::move(g)) {}

  void run(const RunArgs& args) const override {
    const T* in = args.inputs[0]->data_as<T>();
    T* out = args.outputs[0]->data_as<T>();
    const Shape& out_shape = args.outputs[0]->shape();
    const int64_t planes = out_shape[0] * out_shape[1];
    const int64_t dims = static_cast<int64_t>(g_.image.size());
    parallel_for(planes, g_.kernel * g_.positions, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        T* plane = out + p * g_.pixels;
        std::fill(plane, plane + g_.pixels, T(0));
        for (int64_t k = 0; k < g_.kernel; ++k) {
          const T* col = in + (p * g_.kernel + k) * g_.positions;
          for (int64_t l = 0; l < g_.positions; ++l) {
            int64_t pixel = 0, krest = k, lrest = l;
            bool inside = true;
            for (int64_t d = dims - 1, scale = 1; d >= 0; --d) {
              const int64_t kd = krest % g_.block[d], ld = lrest % g_.blocks[d];
              krest /= g_.block[d];
              lrest /= g_.blocks[d];
              const int64_t at = ld * g_.strides[d] - g_.pads_begin[d] + kd * g_.dilations[d];
              inside = inside && at >= 0 && at < g_.image[d];
              pixel += at * scale;
              scale *= g_.image[d];
            }
            if (inside) plane[pixel] += col[l];
          }
        }
      }
    });
  }

 private:
  Col2ImGeometry g_;
};

Col2ImGeometry col2im_geometry(KernelInit& init) {
  Col2ImGeometry g;
  const Shape& out = init.outputs[0].shape;
  const auto& attrs = init.node.attributes;
  g.image.assign(out.begin() + 2, out.end());
  const size_t n = g.image.size();
  if (!init.values[2]) init.fail("block_shape must be known before the run");
  const Tensor& block = *init.values[2];
  for (int64_t i = 0; i < block.numel(); ++i)
    g.block.push_back(block.dtype() == DType::Int32 ? block.data_as<int32_t>()[i] : block.data_as<int64_t>()[i]);
  g.strides = attrs.get_ints_or("strides", std::vector<int64_t>(n, 1));
  g.dilations = attrs.get_ints_or("dilations", std::vector<int64_t>(n, 1));
  const std::vector<int64_t> pads = attrs.get_ints_or("pads", std::vector<int64_t>(2 * n, 0));
  if (g.strides.size() != n || g.dilations.size() != n || pads.size() != 2 * n)
    init.fail("strides, dilations and pads must have one entry (pads two) per image dim");
  for (size_t d = 0; d < n; ++d) {
    const int64_t span = g.dilations[d] * (g.block[d] - 1) + 1;
    const int64_t count = (g.image[d] + pads[d] + pads[d + n] - span) / g.strides[d] + 1;
    if (g.strides[d] < 1 || g.dilations[d] < 1 || count < 1) init.fail("block does not fit the padded image");
    g.pads_begin.push_back(pads[d]);
    g.blocks.push_back(count);
    g.kernel *= g.block[d];
    g.positions *= count;
    g.pixels *= g.image[d];
  }
  if (init.inputs[0].shape[2] != g.positions)
    init.fail("input has " + std::to_string(init.inputs[0].shape[2]) + " blocks, the geometry gives " +
              std::to_string(g.positions));
  return g;
}

std::unique_ptr<Kernel> make_col2im(KernelInit& init, std::string* why_not) {
  Col2ImGeometry g = col2im_geometry(init);
  std::unique_ptr<Kernel> kernel;
  dispatch(TypeList<float, double>{}, init.inputs[0].dtype,
           [&](auto tag) { kernel = std::make_unique<Col2ImKernel<typename decltype(tag)::type>>(g); });
  if (!kernel) *why_not = unsupported_dtype(init, init.inputs[0].dtype);
  return kernel;
}

}  // namespace

EMBER_KERNEL("Col2Im", "", 18, kMaxOpset, DeviceKind::Cpu, make_col2im);

}  // namespace ember
