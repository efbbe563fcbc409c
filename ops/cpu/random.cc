// Random draws on the CPU: Bernoulli and RandomUniformLike. Each draw is a
// counter-based hash of (seed, run, element index),
// so the output does not depend on the thread count or on how the elements are split,
// and concurrent runs of one session share no generator state:
//   - with the `seed` attribute, every run draws the same values (reproducible);
//   - without it, each run takes a fresh stream: a process-wide counter started from
//     std::random_device, so two runs (or two processes) differ.
// u is uniform in [0, 1) from 53 bits of the hash. Bernoulli: y[i] = 1 when u < x[i]; a
// probability outside [0, 1] (or NaN) is an error, as numpy's binomial (the ONNX
// reference) raises. RandomUniformLike: y[i] = low + u * (high - low).
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <ember/core/element_types.h>
#include <ember/core/error.h>

#include <atomic>
#include <bit>
#include <random>

namespace ember {

namespace {

uint64_t mix(uint64_t z) {  // splitmix64's finalizer: a bijection with full avalanche
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A new stream key per unseeded run.
uint64_t fresh_key() {
  static std::atomic<uint64_t> counter{(uint64_t(std::random_device{}()) << 32) ^ std::random_device{}()};
  return mix(counter.fetch_add(1, std::memory_order_relaxed) + 0x9E3779B97F4A7C15ull);
}

// The stream of one node: fixed by its `seed` attribute, else new for every run.
class RandomStream {
 public:
  explicit RandomStream(const Node& node) : seeded_(node.attributes.has("seed")) {
    // The attribute is a float; its bits (not its value rounded) key the stream.
    if (seeded_) key_ = mix(std::bit_cast<uint32_t>(node.attributes.get_float("seed")) ^ 0xB5297A4D3F84D5B5ull);
  }
  uint64_t key_for_run() const { return seeded_ ? key_ : fresh_key(); }
  // Draw i of the stream `key`, uniform in [0, 1).
  static double uniform(uint64_t key, int64_t i) {
    return static_cast<double>(mix(key + uint64_t(i) * 0x9E3779B97F4A7C15ull) >> 11) * 0x1.0p-53;
  }

 private:
  bool seeded_ = false;
  uint64_t key_ = 0;
};

class BernoulliKernel final : public Kernel {
 public:
  explicit BernoulliKernel(const KernelInit& init) : node_(init.node), stream_(init.node) {}

  void run(const RunArgs& args) const override {
    const Tensor& x = *args.inputs[0];
    Tensor& y = *args.outputs[0];
    const uint64_t key = stream_.key_for_run();
    bool bad = false;
    dispatch(FloatTypes{}, x.dtype(), [&](auto in_tag) {
      using In = typename decltype(in_tag)::type;
      dispatch(AllTypes{}, y.dtype(), [&](auto out_tag) {
        using Out = typename decltype(out_tag)::type;
        bad = !draw(x.data_as<In>(), y.data_as<Out>(), x.numel(), key);
      });
    });
    if (bad) throw Error(node_.label() + ": input values must be probabilities in [0, 1]");
  }

 private:
  template <class In, class Out>
  static bool draw(const In* p, Out* y, int64_t n, uint64_t key) {
    std::atomic<bool> ok{true};
    parallel_for(n, 8, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const double q = static_cast<double>(static_cast<compute_t<In>>(p[i]));
        if (!(q >= 0 && q <= 1)) ok.store(false, std::memory_order_relaxed);
        y[i] = convert<Out>(RandomStream::uniform(key, i) < q ? 1.0 : 0.0);
      }
    });
    return ok.load();
  }

  const Node& node_;
  RandomStream stream_;
};

class RandomUniformLikeKernel final : public Kernel {
 public:
  explicit RandomUniformLikeKernel(const KernelInit& init)
      : stream_(init.node),
        low_(init.node.attributes.get_float_or("low", 0.f)),
        high_(init.node.attributes.get_float_or("high", 1.f)) {}

  void run(const RunArgs& args) const override {
    Tensor& y = *args.outputs[0];
    const uint64_t key = stream_.key_for_run();
    dispatch(FloatTypes{}, y.dtype(), [&](auto tag) {
      using Out = typename decltype(tag)::type;
      Out* out = y.data_as<Out>();
      parallel_for(y.numel(), 8, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) out[i] = convert<Out>(low_ + RandomStream::uniform(key, i) * (high_ - low_));
      });
    });
  }

 private:
  RandomStream stream_;
  double low_, high_;
};

template <class K>
std::unique_ptr<Kernel> make(KernelInit& init, std::string*) {
  return std::make_unique<K>(init);
}

}  // namespace

EMBER_KERNEL("Bernoulli", "", 15, kMaxOpset, DeviceKind::Cpu, make<BernoulliKernel>);
EMBER_KERNEL("RandomUniformLike", "", 1, kMaxOpset, DeviceKind::Cpu, make<RandomUniformLikeKernel>);

}  // namespace ember
