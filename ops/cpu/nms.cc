// NonMaxSuppression (opsets 10, 11): per batch and class, greedily keeps the
// highest-scoring boxes whose IoU with every box already kept is at most
// iou_threshold, up to max_output_boxes_per_class, skipping scores at or below
// score_threshold. The output [selected, 3] (batch, class, box) has a length only the
// data tells, so the schema runs the same selection on the values (see
// DataDependentShape) and lives here beside it.
#include "graph/schema.h"
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <algorithm>
#include <span>
#include <vector>

namespace ember {

namespace {

struct NmsParams {
  int64_t batches = 0, classes = 0, boxes = 0;
  int64_t max_per_class = 0;
  float iou_threshold = 0;
  bool has_score_threshold = false;
  float score_threshold = 0;
  bool center_point = false;
};

struct Box {
  float y1, x1, y2, x2;
};

template <class T>
Box load_box(const T* b, bool center_point) {
  const float v[4] = {float(b[0]), float(b[1]), float(b[2]), float(b[3])};
  if (center_point)  // [x_center, y_center, width, height]
    return {v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2, v[0] + v[2] / 2};
  // Corners may come in either order.
  return {std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]), std::max(v[1], v[3])};
}

float iou(const Box& a, const Box& b) {
  const float area_a = (a.y2 - a.y1) * (a.x2 - a.x1), area_b = (b.y2 - b.y1) * (b.x2 - b.x1);
  if (area_a <= 0 || area_b <= 0) return 0;
  const float h = std::max(0.f, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  const float w = std::max(0.f, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  const float inter = h * w;
  return inter / (area_a + area_b - inter);
}

// Calls emit(batch, class, box) for every selected box, in output order. `order` and
// `kept` are scratch of p.boxes elements each.
template <class T, class Emit>
void select_boxes(const NmsParams& p, const T* boxes, const T* scores, int64_t* order,
                  int64_t* kept, const Emit& emit) {
  for (int64_t b = 0; b < p.batches; ++b)
    for (int64_t c = 0; c < p.classes; ++c) {
      const T* s = scores + (b * p.classes + c) * p.boxes;
      int64_t candidates = 0;
      for (int64_t i = 0; i < p.boxes; ++i)
        if (!p.has_score_threshold || float(s[i]) > p.score_threshold) order[candidates++] = i;
      // Highest score first; ties keep the lower index first.
      std::sort(order, order + candidates, [&](int64_t l, int64_t r) {
        return float(s[l]) != float(s[r]) ? float(s[l]) > float(s[r]) : l < r;
      });
      int64_t count = 0;
      for (int64_t k = 0; k < candidates && count < p.max_per_class; ++k) {
        const Box box = load_box(boxes + (b * p.boxes + order[k]) * 4, p.center_point);
        bool keep = true;
        for (int64_t j = 0; keep && j < count; ++j)
          keep = iou(box, load_box(boxes + (b * p.boxes + kept[j]) * 4, p.center_point)) <= p.iou_threshold;
        if (!keep) continue;
        kept[count++] = order[k];
        emit(b, c, order[k]);
      }
    }
}

template <class I>
float scalar(const Tensor* t, float fallback) {
  if (!t || t->numel() == 0) return fallback;
  return convert<float>(t->data_as<I>()[0]);
}

NmsParams nms_params(const Node& node, const std::vector<TensorType>& inputs,
                     std::span<const Tensor* const> values) {
  NmsParams p;
  p.batches = inputs[0].shape[0], p.boxes = inputs[0].shape[1], p.classes = inputs[1].shape[1];
  const auto value = [&](size_t i) { return i < values.size() ? values[i] : nullptr; };
  p.max_per_class = value(2) ? value(2)->data_as<int64_t>()[0] : 0;
  p.iou_threshold = scalar<float>(value(3), 0);
  p.has_score_threshold = value(4) != nullptr;
  p.score_threshold = scalar<float>(value(4), 0);
  p.center_point = node.attributes.get_int_or("center_point_box", 0) != 0;
  return p;
}

std::vector<TensorType> infer_nms(const InferContext& ctx) {
  const Shape& boxes = ctx.input(0).shape;
  const Shape& scores = ctx.input(1).shape;
  if (boxes.size() != 3 || boxes[2] != 4 || scores.size() != 3 || scores[0] != boxes[0] ||
      scores[2] != boxes[1])
    ctx.fail("boxes " + shape_to_string(boxes) + " and scores " + shape_to_string(scores) +
             " must be [B, N, 4] and [B, C, N]");
  if (ctx.input(0).dtype != DType::Float32 || ctx.input(1).dtype != DType::Float32)
    ctx.fail("boxes and scores must be float32");
  std::vector<const Tensor*> values(ctx.num_inputs(), nullptr);
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) values[i] = &ctx.value(i);  // raises DataDependentShape when unknown
  for (size_t i = 2; i < 5; ++i)
    if (values.size() > i && values[i] && values[i]->numel() > 1)
      ctx.fail("input " + std::to_string(i) + " must be a scalar");
  if (values.size() > 2 && values[2] && values[2]->dtype() != DType::Int64)
    ctx.fail("max_output_boxes_per_class must be int64");
  const NmsParams p = nms_params(ctx.node, ctx.inputs, values);
  std::vector<int64_t> order(p.boxes), kept(p.boxes);
  int64_t selected = 0;
  select_boxes(p, values[0]->data_as<float>(), values[1]->data_as<float>(), order.data(),
               kept.data(), [&](int64_t, int64_t, int64_t) { ++selected; });
  return {{DType::Int64, {selected, 3}}};
}

class NmsKernel final : public Kernel {
 public:
  explicit NmsKernel(const Node& node, std::vector<TensorType> inputs)
      : node_(node), inputs_(std::move(inputs)) {}

  void run(const RunArgs& args) const override {
    const NmsParams p = nms_params(node_, inputs_, args.inputs);
    int64_t* order = static_cast<int64_t*>(args.workspace);
    int64_t* out = args.outputs[0]->data_as<int64_t>();
    int64_t row = 0;
    select_boxes(p, args.inputs[0]->data_as<float>(), args.inputs[1]->data_as<float>(), order,
                 order + p.boxes, [&](int64_t b, int64_t c, int64_t i) {
                   out[row * 3] = b, out[row * 3 + 1] = c, out[row * 3 + 2] = i;
                   ++row;
                 });
  }

 private:
  Node node_;
  std::vector<TensorType> inputs_;
};

std::unique_ptr<Kernel> make_nms(KernelInit& init, std::string*) {
  init.workspace_bytes = 2 * sizeof(int64_t) * static_cast<size_t>(init.inputs[0].shape[1]);
  return std::make_unique<NmsKernel>(init.node, init.inputs);
}

}  // namespace

EMBER_SCHEMA("NonMaxSuppression", "", infer_nms, nullptr, OpTraits{.float16_safe = false});
EMBER_KERNEL("NonMaxSuppression", "", 10, kMaxOpset, DeviceKind::Cpu, make_nms);

}  // namespace ember
