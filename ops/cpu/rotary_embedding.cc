// CPU kernel for RotaryEmbedding (opset 23): rotates the first rotary_embedding_dim
// features of every head by the position's angle, pairing feature k with k + dim/2
// (or 2k with 2k+1 when interleaved); the remaining features pass through.
//   out1 = cos * x1 - sin * x2,  out2 = sin * x1 + cos * x2
// cos/sin come from the caches at position_ids[b, s] when given, else the caches are
// already [B, S, dim/2].
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <ember/core/error.h>

namespace ember {

namespace {

struct RotaryParams {
  int64_t batch = 0, heads = 0, seq = 0, head = 0, rotary = 0;
  bool packed = false;  // X is [B, S, heads * head] rather than [B, heads, S, head]
  bool interleaved = false;
  bool has_positions = false;
  int64_t cache_rows = 0;  // positions the caches hold (with position_ids)
};

template <class T>
class RotaryKernel final : public Kernel {
 public:
  explicit RotaryKernel(RotaryParams p) : p_(p) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    const T* cos = args.inputs[1]->data_as<T>();
    const T* sin = args.inputs[2]->data_as<T>();
    const int64_t* ids = p_.has_positions ? args.inputs[3]->data_as<int64_t>() : nullptr;
    T* y = args.outputs[0]->data_as<T>();
    const int64_t half = p_.rotary / 2;
    // position_ids are data: one past the caches' rows read past their end (found by
    // fuzzing a Session, ASan heap-buffer-overflow).
    if (ids)
      for (int64_t i = 0; i < p_.batch * p_.seq; ++i)
        if (ids[i] < 0 || ids[i] >= p_.cache_rows)
          throw Error("RotaryEmbedding: position_ids holds " + std::to_string(ids[i]) +
                      ", outside the cos/sin caches' " + std::to_string(p_.cache_rows) + " positions");
    for (int64_t b = 0; b < p_.batch; ++b)
      for (int64_t h = 0; h < p_.heads; ++h)
        for (int64_t s = 0; s < p_.seq; ++s) {
          const int64_t base = p_.packed ? ((b * p_.seq + s) * p_.heads + h) * p_.head
                                         : ((b * p_.heads + h) * p_.seq + s) * p_.head;
          const int64_t row = (ids ? ids[b * p_.seq + s] : b * p_.seq + s) * half;
          for (int64_t k = 0; k < half; ++k) {
            const int64_t i1 = p_.interleaved ? 2 * k : k;
            const int64_t i2 = p_.interleaved ? 2 * k + 1 : k + half;
            const float c = float(cos[row + k]), sn = float(sin[row + k]);
            const float x1 = float(x[base + i1]), x2 = float(x[base + i2]);
            y[base + i1] = T(c * x1 - sn * x2);
            y[base + i2] = T(sn * x1 + c * x2);
          }
          for (int64_t d = p_.rotary; d < p_.head; ++d) y[base + d] = x[base + d];
        }
  }

 private:
  RotaryParams p_;
};

std::unique_ptr<Kernel> make_rotary(KernelInit& init, std::string* why_not) {
  const Shape& x = init.inputs[0].shape;
  const auto& a = init.node.attributes;
  RotaryParams p;
  p.packed = x.size() == 3;
  p.batch = x[0];
  if (p.packed) {
    p.heads = a.get_int("num_heads"), p.seq = x[1];
    if (x[2] % p.heads) init.fail("num_heads must divide the hidden size");
    p.head = x[2] / p.heads;
  } else {
    p.heads = x[1], p.seq = x[2], p.head = x[3];
  }
  p.rotary = a.get_int_or("rotary_embedding_dim", 0);
  if (p.rotary == 0) p.rotary = p.head;
  if (p.rotary > p.head || p.rotary % 2) init.fail("rotary_embedding_dim must be even and <= head size");
  p.interleaved = a.get_int_or("interleaved", 0) != 0;
  p.has_positions = init.inputs.size() > 3 && init.inputs[3].present();
  const Shape& cache = init.inputs[1].shape;
  if (cache.empty() || cache.back() != p.rotary / 2 || init.inputs[2].shape != cache)
    init.fail("cos_cache/sin_cache must end in rotary_embedding_dim / 2 = " +
              std::to_string(p.rotary / 2));
  const Shape expected = p.has_positions ? Shape{cache[0], p.rotary / 2} : Shape{p.batch, p.seq, p.rotary / 2};
  if (cache != expected) init.fail("cos_cache has shape " + shape_to_string(cache) + ", expected " + shape_to_string(expected));
  p.cache_rows = cache[0];
  if (p.has_positions && init.inputs[3].dtype != DType::Int64) {
    *why_not = "position_ids must be int64";
    return nullptr;
  }
  const DType dtype = init.inputs[0].dtype;
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatTypes{}, dtype, [&](auto tag) {
    kernel = std::make_unique<RotaryKernel<typename decltype(tag)::type>>(p);
  });
  if (!kernel) *why_not = std::string(dtype_name(dtype)) + " is not supported";
  return kernel;
}

}  // namespace

EMBER_KERNEL("RotaryEmbedding", "", 23, kMaxOpset, DeviceKind::Cpu, make_rotary);

}  // namespace ember
