// Shape/dtype inference for the recurrent ops RNN, GRU and LSTM: every input's shape
// is checked against X, W and R here, so the kernels can trust them.
#include "graph/schema.h"

#include <string>
#include <vector>

namespace ember {

namespace {

void check_shape(const InferContext& ctx, size_t input, const char* what, const Shape& expected) {
  if (!ctx.has_input(input)) return;
  const TensorType& t = ctx.inputs[input];
  if (t.shape != expected)
    ctx.fail(std::string(what) + " must have shape " + shape_to_string(expected) + ", got " +
             shape_to_string(t.shape));
}

void check_dtype(const InferContext& ctx, size_t input, const char* what, DType expected) {
  if (ctx.has_input(input) && ctx.inputs[input].dtype != expected)
    ctx.fail(std::string(what) + " must be " + dtype_name(expected) + ", got " +
             dtype_name(ctx.inputs[input].dtype));
}

// `gates` is 1 for RNN, 3 for GRU, 4 for LSTM; LSTM also has initial_c, P and Y_c.
std::vector<TensorType> infer_recurrent(const InferContext& ctx, int64_t gates) {
  const TensorType& x = ctx.input(0);
  ctx.input(1);  // W is required
  const Shape& r = ctx.input(2).shape;
  if (x.shape.size() != 3) ctx.fail("X must have rank 3, got " + shape_to_string(x.shape));
  const std::string direction = ctx.node.attributes.get_string_or("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    ctx.fail("direction must be forward, reverse or bidirectional, got '" + direction + "'");
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  const int64_t layout = ctx.opset >= 14 ? ctx.node.attributes.get_int_or("layout", 0) : 0;
  if (layout != 0 && layout != 1) ctx.fail("layout must be 0 or 1, got " + std::to_string(layout));
  const int64_t seq = x.shape[layout], batch = x.shape[1 - layout], input_size = x.shape[2];
  if (r.size() != 3) ctx.fail("R must have rank 3, got " + shape_to_string(r));
  const int64_t hidden = ctx.node.attributes.get_int_or("hidden_size", r[2]);
  if (hidden <= 0) ctx.fail("hidden_size must be positive, got " + std::to_string(hidden));

  check_shape(ctx, 1, "W", {dirs, gates * hidden, input_size});
  check_shape(ctx, 2, "R", {dirs, gates * hidden, hidden});
  check_shape(ctx, 3, "B", {dirs, 2 * gates * hidden});
  check_shape(ctx, 4, "sequence_lens", {batch});
  check_dtype(ctx, 4, "sequence_lens", DType::Int32);
  const Shape state = layout == 0 ? Shape{dirs, batch, hidden} : Shape{batch, dirs, hidden};
  check_shape(ctx, 5, "initial_h", state);
  if (gates == 4) {
    check_shape(ctx, 6, "initial_c", state);
    check_shape(ctx, 7, "P", {dirs, 3 * hidden});
  }
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (i != 4) check_dtype(ctx, i, "every input but sequence_lens", x.dtype);

  const Shape y = layout == 0 ? Shape{seq, dirs, batch, hidden} : Shape{batch, seq, dirs, hidden};
  std::vector<TensorType> out = {{x.dtype, y}, {x.dtype, state}};
  if (gates == 4) out.push_back({x.dtype, state});
  // Unused optional outputs stay absent so nothing is allocated for them.
  for (size_t i = 0; i < out.size(); ++i)
    if (i >= ctx.node.outputs.size() || ctx.node.outputs[i].empty()) out[i] = {};
  return out;
}

std::vector<TensorType> infer_rnn(const InferContext& ctx) { return infer_recurrent(ctx, 1); }
std::vector<TensorType> infer_gru(const InferContext& ctx) { return infer_recurrent(ctx, 3); }
std::vector<TensorType> infer_lstm(const InferContext& ctx) { return infer_recurrent(ctx, 4); }

}  // namespace

EMBER_SCHEMA("RNN", "", infer_rnn);
EMBER_SCHEMA("GRU", "", infer_gru);
EMBER_SCHEMA("LSTM", "", infer_lstm);

}  // namespace ember
