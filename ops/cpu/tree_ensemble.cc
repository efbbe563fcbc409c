// CPU kernel for the ai.onnx.ml tree ensembles (TreeEnsembleRegressor,
// TreeEnsembleClassifier, TreeEnsemble). The schema has already checked the trees
// (graph/schemas/tree_ensemble.h) and packed them, once per session, into one array of
// 20-24 byte node records (threshold, feature, both children, mode) that every plan's
// kernel reads.
//
// Rows go in chunks of kChunk, each walked tree by tree so a tree's nodes stay in cache
// for all the chunk's rows; within a tree, in blocks of kBlock rows that take one step
// at a time. Their walks are independent, so the processor overlaps their loads instead
// of waiting on one chain of node reads, and a step is branch-free (it indexes the
// children by the comparison). Leaves point to themselves, so no row tests for
// "arrived": the block steps until no row moved (at most the tree's depth). Threads
// take chunks as they go; run allocates nothing.
#include "graph/schemas/tree_ensemble.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/ml_post_transform.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <utility>

namespace ember {

namespace {

constexpr int64_t kBlock = 8;
constexpr int64_t kChunk = 128;  // a multiple of kBlock

// Whether x passes a branch of mode M (not Member, whose set the caller tests).
template <TreeMode M, class Th>
bool compare(Th x, Th threshold) {
  if constexpr (M == TreeMode::Leq) return x <= threshold;
  else if constexpr (M == TreeMode::Lt) return x < threshold;
  else if constexpr (M == TreeMode::Gte) return x >= threshold;
  else if constexpr (M == TreeMode::Gt) return x > threshold;
  else if constexpr (M == TreeMode::Eq) return x == threshold;
  else return x != threshold;
}

enum class TreeOutput { Values, Classes };  // Y = scores; or Y = labels, Z = scores

template <class X, class Th>
class TreeEnsembleKernel final : public Kernel {
 public:
  TreeEnsembleKernel(std::shared_ptr<const TreeEnsembleAttributes> attrs, TreeOutput output, int64_t rows,
                     int64_t row_stride, int64_t slots, int64_t chunk_rows)
      : attrs_(std::move(attrs)), a_(*attrs_), nodes_(packed_nodes<Th>(a_)), mode_(a_.uniform_mode), output_(output),
        rows_(rows), stride_(row_stride), slots_(slots), chunk_rows_(chunk_rows) {}

  // Per slot: the chunk's sums (doubles) and "has a weight" flags, and one row's
  // scores in float.
  static size_t workspace_per_slot(int64_t targets) {
    const auto t = static_cast<size_t>(targets);
    const size_t bytes = kChunk * t * (sizeof(double) + 1) + t * sizeof(float);
    return (bytes + 63) / 64 * 64;  // keeps the next slot's doubles aligned
  }

  void run(const RunArgs& args) const override {
    const X* x = args.inputs[0]->data_as<X>();
    const int64_t chunks = (rows_ + chunk_rows_ - 1) / chunk_rows_;
    const int64_t cost = (rows_ + slots_ - 1) / slots_ * static_cast<int64_t>(a_.roots.size()) * 8;
    auto* workspace = static_cast<unsigned char*>(args.workspace);
    // Threads take chunks as they finish, not a fixed half each: on a shared machine a
    // thread that loses its core for a while no longer holds up the whole run.
    std::atomic<int64_t> next_chunk{0};
    parallel_for(slots_, cost, [&](int64_t begin, int64_t end) {
      for (int64_t slot = begin; slot < end; ++slot) {  // each slot owns its scratch
        unsigned char* scratch = workspace + static_cast<size_t>(slot) * workspace_per_slot(a_.num_targets);
        for (int64_t c = next_chunk.fetch_add(1); c < chunks; c = next_chunk.fetch_add(1))
          run_chunk(x, c * chunk_rows_, std::min(chunk_rows_, rows_ - c * chunk_rows_), scratch, args);
      }
    });
  }

 private:
  template <TreeMode M>
  void walk(const X* x, int64_t rows, int32_t depth, int32_t* at) const {
    const PackedTreeNode<Th>* nodes = nodes_.data();
    for (int32_t step = 0; step < depth; ++step) {
      int32_t moved = 0;  // nonzero while some row has not reached its leaf
      for (int64_t r = 0; r < rows; ++r) {
        const PackedTreeNode<Th>& n = nodes[at[r]];
        const Th v = static_cast<Th>(compute_t<X>(x[r * stride_ + n.feature]));
        int go_true;
        if constexpr (M == TreeMode::Member) go_true = passes(n, at[r], v);
        else go_true = int{compare<M>(v, n.threshold)} | (n.missing_tracks_true & int{v != v});  // v != v: NaN
        const int32_t next = n.children[go_true];
        moved |= next ^ at[r];
        at[r] = next;
      }
      if (!moved) break;  // deep, lopsided trees: the block's rows all stopped early
    }
  }

  // The generic test, for forests that mix modes or test set membership.
  bool passes(const PackedTreeNode<Th>& n, int32_t i, Th v) const {
    if (n.missing_tracks_true && std::isnan(v)) return true;
    switch (n.mode) {
      case TreeMode::Leq: return compare<TreeMode::Leq>(v, n.threshold);
      case TreeMode::Lt: return compare<TreeMode::Lt>(v, n.threshold);
      case TreeMode::Gte: return compare<TreeMode::Gte>(v, n.threshold);
      case TreeMode::Gt: return compare<TreeMode::Gt>(v, n.threshold);
      case TreeMode::Eq: return compare<TreeMode::Eq>(v, n.threshold);
      case TreeMode::Neq: return compare<TreeMode::Neq>(v, n.threshold);
      case TreeMode::Member: {
        const double* first = a_.members.data() + a_.member_begin[static_cast<size_t>(i)];
        const double* last = a_.members.data() + a_.member_begin[static_cast<size_t>(i) + 1];
        return std::binary_search(first, last, static_cast<double>(v));
      }
      case TreeMode::Leaf: return true;  // both children are the leaf itself
    }
    return false;
  }

  void walk_any(const X* x, int64_t rows, int32_t depth, int32_t* at) const {
    switch (mode_) {
      case TreeMode::Leq: return walk<TreeMode::Leq>(x, rows, depth, at);
      case TreeMode::Lt: return walk<TreeMode::Lt>(x, rows, depth, at);
      case TreeMode::Gte: return walk<TreeMode::Gte>(x, rows, depth, at);
      case TreeMode::Gt: return walk<TreeMode::Gt>(x, rows, depth, at);
      default: return walk<TreeMode::Member>(x, rows, depth, at);
    }
  }

  void run_chunk(const X* x, int64_t row0, int64_t rows, unsigned char* scratch, const RunArgs& args) const {
    const int64_t targets = a_.num_targets;
    auto* sums = reinterpret_cast<double*>(scratch);
    auto* row_floats = reinterpret_cast<float*>(sums + kChunk * targets);
    auto* has = reinterpret_cast<uint8_t*>(row_floats + targets);
    std::fill(sums, sums + rows * targets, 0.0);
    std::fill(has, has + rows * targets, uint8_t{0});
    int32_t at[kBlock];
    for (size_t t = 0; t < a_.roots.size(); ++t) {
      for (int64_t b = 0; b < rows; b += kBlock) {
        const int64_t n = std::min(kBlock, rows - b);
        std::fill(at, at + n, a_.roots[t]);
        walk_any(x + (row0 + b) * stride_, n, a_.depths[t], at);
        accumulate(at, n, sums + b * targets, has + b * targets);
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      if (output_ == TreeOutput::Values) finish_values(sums + r * targets, row_floats, row0 + r, args);
      else finish_classes(sums + r * targets, row_floats, row0 + r, args);
    }
  }

  // Adds each row's leaf weights to its targets' sums (or min / max).
  void accumulate(const int32_t* at, int64_t rows, double* sums, uint8_t* has) const {
    const int64_t targets = a_.num_targets;
    for (int64_t r = 0; r < rows; ++r) {
      const size_t leaf = static_cast<size_t>(at[r]);
      for (int32_t e = a_.weight_begin[leaf]; e < a_.weight_begin[leaf + 1]; ++e) {
        const int64_t k = r * targets + a_.weight_targets[static_cast<size_t>(e)];
        const double w = a_.weight_values[static_cast<size_t>(e)];
        switch (a_.aggregate) {
          case TreeAggregate::Sum:
          case TreeAggregate::Average: sums[k] += w; break;
          case TreeAggregate::Min: sums[k] = has[k] ? std::min(sums[k], w) : w; break;
          case TreeAggregate::Max: sums[k] = has[k] ? std::max(sums[k], w) : w; break;
        }
        has[k] = 1;
      }
    }
  }

  // A target no leaf gave a weight to scores 0 (plus its base value), as in ONNX Runtime.
  void finish_values(double* v, float* f, int64_t row, const RunArgs& args) const {
    const int64_t targets = a_.num_targets;
    const double trees = static_cast<double>(a_.roots.size());
    for (int64_t k = 0; k < targets; ++k) {
      if (a_.aggregate == TreeAggregate::Average) v[k] /= trees;
      if (!a_.base_values.empty()) v[k] += a_.base_values[static_cast<size_t>(k)];
    }
    Tensor& y = *args.outputs[0];
    if (y.dtype() == DType::Float64) {
      apply_ml_post_transform(a_.post_transform, v, targets);
      std::copy(v, v + targets, y.data_as<double>() + row * targets);
      return;
    }
    // A float output is transformed in float, as ONNX Runtime does.
    for (int64_t k = 0; k < targets; ++k) f[k] = static_cast<float>(v[k]);
    apply_ml_post_transform(a_.post_transform, f, targets);
    if (y.dtype() == DType::Float16)
      for (int64_t k = 0; k < targets; ++k) y.data_as<Float16>()[row * targets + k] = Float16(f[k]);
    else
      std::copy(f, f + targets, y.data_as<float>() + row * targets);
  }

  // The classifier: base values, then (binary case) the first class's score derived
  // from the second's as the ONNX reference does, the transform, and the top label.
  void finish_classes(const double* v, float* f, int64_t row, const RunArgs& args) const {
    const int64_t classes = a_.num_targets;
    for (int64_t k = 0; k < classes; ++k)
      f[k] = static_cast<float>(v[k] + (a_.base_values.empty() ? 0.0 : a_.base_values[static_cast<size_t>(k)]));
    if (a_.binary) {
      const bool complement = a_.post_transform == MlPostTransform::None || a_.post_transform == MlPostTransform::Probit;
      f[1] = f[0];
      f[0] = complement ? 1.0f - f[1] : -f[1];
    }
    apply_ml_post_transform(a_.post_transform, f, classes);
    std::copy(f, f + classes, args.outputs[1]->data_as<float>() + row * classes);
    const int64_t top = std::max_element(f, f + classes) - f;
    args.outputs[0]->data_as<int64_t>()[row] = a_.class_labels[static_cast<size_t>(top)];
  }

  std::shared_ptr<const TreeEnsembleAttributes> attrs_;
  const TreeEnsembleAttributes& a_;
  const std::vector<PackedTreeNode<Th>>& nodes_;  // the session's, in attrs_
  TreeMode mode_;  // the one mode of every branch, or Member for the generic walk
  TreeOutput output_;
  int64_t rows_, stride_, slots_, chunk_rows_;
};

std::unique_ptr<Kernel> make_tree_kernel(KernelInit& init, std::string* why_not, TreeOutput output) {
  const auto attrs = init.attributes<TreeEnsembleAttributes>();
  const Shape& xs = init.inputs[0].shape;
  const int64_t rows = xs.size() == 2 ? xs[0] : 1, stride = xs.back();
  const int64_t blocks = (rows + kBlock - 1) / kBlock;
  const int64_t slots = std::max<int64_t>(1, std::min<int64_t>(init.num_threads, blocks));
  // About four chunks per thread, so threads can even out; whole blocks, at most kChunk.
  const int64_t chunk_blocks = (blocks + 4 * slots - 1) / (4 * slots);
  const int64_t chunk_rows = std::clamp(chunk_blocks * kBlock, kBlock, kChunk);
  std::unique_ptr<Kernel> kernel;
  auto make = [&](auto x_tag, auto th_tag) {
    using K = TreeEnsembleKernel<typename decltype(x_tag)::type, typename decltype(th_tag)::type>;
    init.workspace_bytes = K::workspace_per_slot(attrs->num_targets) * static_cast<size_t>(slots);
    kernel = std::make_unique<K>(attrs, output, rows, stride, slots, chunk_rows);
  };
  // Compare in the wider of X's and the thresholds' types, as numpy would.
  const bool narrow = !attrs->thresholds_double;
  switch (init.inputs[0].dtype) {
    case DType::Float32: narrow ? make(TypeTag<float>{}, TypeTag<float>{}) : make(TypeTag<float>{}, TypeTag<double>{}); break;
    case DType::Float16: narrow ? make(TypeTag<Float16>{}, TypeTag<float>{}) : make(TypeTag<Float16>{}, TypeTag<double>{}); break;
    case DType::Float64: make(TypeTag<double>{}, TypeTag<double>{}); break;
    case DType::Int32: make(TypeTag<int32_t>{}, TypeTag<double>{}); break;
    case DType::Int64: make(TypeTag<int64_t>{}, TypeTag<double>{}); break;
    default: *why_not = unsupported_dtype(init, init.inputs[0].dtype);
  }
  return kernel;
}

std::unique_ptr<Kernel> make_tree_values(KernelInit& init, std::string* why_not) {
  return make_tree_kernel(init, why_not, TreeOutput::Values);
}

std::unique_ptr<Kernel> make_tree_classes(KernelInit& init, std::string* why_not) {
  return make_tree_kernel(init, why_not, TreeOutput::Classes);
}

}  // namespace

EMBER_KERNEL("TreeEnsembleRegressor", kMlDomain, 1, 4, DeviceKind::Cpu, make_tree_values);
EMBER_KERNEL("TreeEnsembleClassifier", kMlDomain, 1, 4, DeviceKind::Cpu, make_tree_classes);
EMBER_KERNEL("TreeEnsemble", kMlDomain, 5, kMaxOpset, DeviceKind::Cpu, make_tree_values);

}  // namespace ember
