// Resize and Upsample against a reference written the way ONNX's Python reference
// reads the spec (edge-pad the input, take the n nearest samples, weight them), one
// output element at a time; plus a few values computed by ONNX Runtime.
#include "test_movement_util.h"

#include <algorithm>
#include <cmath>

namespace ember::test {
namespace {

struct Options {
  std::string mode = "nearest", coord = "half_pixel", nearest = "round_prefer_floor";
  double a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  std::vector<double> roi = {};  // per dim start..., end...; empty: none
  bool antialias = false;
};

double source_x(const Options& o, int64_t i, int64_t in, int64_t out, double scale, size_t d, size_t rank) {
  const double x = static_cast<double>(i);
  if (o.coord == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (o.coord == "asymmetric") return x / scale;
  const double len = scale * in;  // the ONNX reference's unrounded output length
  if (o.coord == "align_corners") return len == 1 ? 0 : x * (in - 1) / (len - 1);
  if (o.coord == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0;
  if (o.coord == "half_pixel_symmetric") {
    const double adjustment = out / (scale * in), center = in / 2.0;
    return center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
  }
  const double s = o.roi[d], e = o.roi[rank + d];  // tf_crop_and_resize
  return len != 1 ? s * (in - 1) + x * (e - s) * (in - 1) / (len - 1) : 0.5 * (s + e) * (in - 1);
}

// Antialiasing (opset 18) as the reference writes it: the filter evaluated at
// scale * (i - ratio) over 2 - 2 * start taps, normalized.
std::vector<double> antialias_coefficients(const Options& o, double ratio, double scale) {
  scale = std::min(scale, 1.0);
  const double radius = o.mode == "linear" ? 1 : 2, a = o.a;
  const int start = static_cast<int>(std::floor(-radius / scale) + 1);
  std::vector<double> c;
  double sum = 0;
  for (int i = start; i < 2 - start; ++i) {
    const double x = std::abs(scale * (i - ratio));
    double w = 0;
    if (o.mode == "linear") w = std::clamp(1 - x, 0.0, 1.0);
    else if (x <= 1) w = (a + 2) * x * x * x - (a + 3) * x * x + 1;
    else if (x < 2) w = a * x * x * x - 5 * a * x * x + 8 * a * x - 4 * a;
    c.push_back(w);
    sum += w;
  }
  for (double& w : c) w /= sum;
  return c;
}

std::vector<double> coefficients(const Options& o, double ratio, bool integer, double scale) {
  if (o.antialias) return antialias_coefficients(o, ratio, scale);
  if (o.mode == "nearest") {
    if (integer) return {0, 1};
    if (o.nearest == "round_prefer_floor") return {double(ratio <= 0.5), double(ratio > 0.5)};
    if (o.nearest == "round_prefer_ceil") return {double(ratio < 0.5), double(ratio >= 0.5)};
    if (o.nearest == "floor") return {1, 0};
    return {0, 1};
  }
  if (o.mode == "linear") return {1 - ratio, ratio};
  const double a = o.a, r = ratio;
  return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
          ((a + 2) * r - (a + 3)) * r * r + 1,
          ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1,
          ((a * ((1 - r) + 1) - 5 * a) * ((1 - r) + 1) + 8 * a) * ((1 - r) + 1) - 4 * a};
}

// The samples (input index, weight) along one dim for source coordinate x.
std::vector<std::pair<int64_t, double>> samples(const Options& o, double x, int64_t in, double scale) {
  const bool integer = x == std::floor(x);
  std::vector<double> c = coefficients(o, integer ? 1.0 : x - std::floor(x), integer, scale);
  const int64_t n = static_cast<int64_t>(c.size()), pad = (n + 1) / 2;
  std::vector<int64_t> cand;
  for (int64_t i = 0; i < in + 2 * pad; ++i) cand.push_back(i);
  const double xp = x + pad;
  std::stable_sort(cand.begin(), cand.end(), [&](int64_t p, int64_t q) { return std::abs(xp - p) < std::abs(xp - q); });
  cand.resize(n);
  std::sort(cand.begin(), cand.end());
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (o.exclude_outside && (cand[k] - pad < 0 || cand[k] - pad >= in)) c[k] = 0;
    sum += c[k];
  }
  std::vector<std::pair<int64_t, double>> out;
  for (int64_t k = 0; k < n; ++k)
    out.push_back({std::clamp<int64_t>(cand[k] - pad, 0, in - 1), o.exclude_outside ? c[k] / sum : c[k]});
  return out;
}

Tensor resize_reference(const Tensor& x, const Shape& out, const std::vector<double>& scales, const Options& o) {
  const size_t rank = out.size();
  Tensor result(DType::Float32, out);
  for (int64_t flat = 0; flat < result.numel(); ++flat) {
    const auto idx = unravel(flat, out);
    std::vector<std::vector<std::pair<int64_t, double>>> per_dim(rank);
    bool extrapolate = false;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t in = x.shape()[d];
      const bool identity = in == out[d] && scales[d] == 1 && (o.roi.empty() || (o.roi[d] == 0 && o.roi[rank + d] == 1));
      if (identity) {
        per_dim[d] = {{idx[d], 1.0}};
        continue;
      }
      const double sx = source_x(o, idx[d], in, out[d], scales[d], d, rank);
      if (o.coord == "tf_crop_and_resize" && (sx < 0 || sx > in - 1)) extrapolate = true;
      per_dim[d] = samples(o, sx, in, scales[d]);
    }
    double acc = 0;
    std::vector<size_t> pick(rank, 0);
    while (true) {
      double w = 1;
      std::vector<int64_t> src(rank);
      for (size_t d = 0; d < rank; ++d) {
        src[d] = per_dim[d][pick[d]].first;
        w *= per_dim[d][pick[d]].second;
      }
      acc += w * x.data_as<float>()[ravel(src, x.shape())];
      size_t d = rank;
      while (d > 0 && ++pick[d - 1] == per_dim[d - 1].size()) pick[--d] = 0;
      if (d == 0) break;
    }
    result.data_as<float>()[flat] = static_cast<float>(extrapolate ? o.extrapolation : acc);
  }
  return result;
}

Node resize_node(const Options& o, size_t inputs, std::vector<bool> present) {
  Node n = make_node("Resize", inputs, 1, present);
  n.attributes.set_string("mode", o.mode);
  n.attributes.set_string("coordinate_transformation_mode", o.coord);
  n.attributes.set_string("nearest_mode", o.nearest);
  n.attributes.set_float("cubic_coeff_a", static_cast<float>(o.a));
  n.attributes.set_int("exclude_outside", o.exclude_outside);
  n.attributes.set_float("extrapolation_value", static_cast<float>(o.extrapolation));
  n.attributes.set_int("antialias", o.antialias);
  return n;
}

// Runs Resize with scales (opset 13+) and compares with the reference.
void check_scales(const Options& o, const Shape& in_shape, const std::vector<float>& scales, int64_t opset = 19) {
  std::mt19937 rng(61);
  const Tensor x = random_tensor(DType::Float32, in_shape, rng);
  const Tensor s = floats(scales);
  Shape out;
  std::vector<double> sd;
  for (size_t d = 0; d < in_shape.size(); ++d) {
    out.push_back(static_cast<int64_t>(std::floor(in_shape[d] * static_cast<double>(scales[d]))));
    sd.push_back(scales[d]);
  }
  std::vector<float> roi(o.roi.begin(), o.roi.end());
  const Tensor r = floats(roi);
  const Tensor actual = run(resize_node(o, 3, {true, !roi.empty(), true}), opset, {&x, roi.empty() ? nullptr : &r, &s})[0];
  expect_close(actual, resize_reference(x, out, sd, o), 0, 1e-4f);
}

void check_sizes(const Options& o, const Shape& in_shape, const Shape& sizes, int64_t opset = 19) {
  std::mt19937 rng(62);
  const Tensor x = random_tensor(DType::Float32, in_shape, rng);
  const Tensor s = ints(sizes);
  std::vector<double> sd;
  for (size_t d = 0; d < in_shape.size(); ++d) sd.push_back(static_cast<double>(sizes[d]) / in_shape[d]);
  const Tensor actual = run(resize_node(o, 4, {true, false, false, true}), opset, {&x, nullptr, nullptr, &s})[0];
  expect_close(actual, resize_reference(x, sizes, sd, o), 0, 1e-4f);
}

const std::vector<std::string> kCoordModes{"half_pixel", "pytorch_half_pixel", "align_corners",
                                           "asymmetric", "half_pixel_symmetric"};

TEST(Resize, NearestEveryNearestModeAndCoordinateModeUpAndDown) {
  for (const std::string nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
    for (const auto& coord : kCoordModes) {
      Options o{.mode = "nearest", .coord = coord, .nearest = nearest};
      check_scales(o, {1, 2, 5, 7}, {1, 1, 1.6f, 0.6f});
      check_sizes(o, {2, 3, 7}, {2, 5, 3});
    }
}

TEST(Resize, LinearEveryCoordinateModeUpAndDown) {
  for (const auto& coord : kCoordModes) {
    Options o{.mode = "linear", .coord = coord};
    check_scales(o, {1, 2, 5, 6}, {1, 1, 2.5f, 0.5f});
    check_sizes(o, {3, 4, 5}, {1, 7, 2});
  }
}

TEST(Resize, CubicWithCoefficientAndExcludeOutside) {
  for (const auto& coord : kCoordModes)
    for (bool exclude : {false, true})
      for (double a : {-0.75, -0.5}) {
        Options o{.mode = "cubic", .coord = coord, .a = a, .exclude_outside = exclude};
        check_scales(o, {1, 1, 6, 5}, {1, 1, 1.5f, 0.8f});
      }
}

TEST(Resize, TfCropAndResizeWithExtrapolation) {
  for (const std::string mode : {"nearest", "linear", "cubic"}) {
    Options o{.mode = mode, .coord = "tf_crop_and_resize", .extrapolation = 7.5,
              .roi = {0, 0, 0.2, -0.3, 1, 1, 0.9, 1.2}};
    check_scales(o, {1, 2, 5, 6}, {1, 1, 1.4f, 1.5f});
  }
}

TEST(Resize, AxesAndKeepAspectRatioFromOpset18) {
  std::mt19937 rng(63);
  const Tensor x = random_tensor(DType::Float32, {1, 2, 4, 6}, rng);
  for (const std::string policy : {"not_larger", "not_smaller"}) {
    Options o{.mode = "linear"};
    Node n = resize_node(o, 4, {true, false, false, true});
    n.attributes.set_ints("axes", {-1, 2});
    n.attributes.set_string("keep_aspect_ratio_policy", policy);
    const Tensor sizes = ints({9, 2});  // width 9 (x1.5), height 2 (x0.5)
    const double scale = policy == "not_larger" ? 0.5 : 1.5;
    const Shape out{1, 2, static_cast<int64_t>(4 * scale + 0.5), static_cast<int64_t>(6 * scale + 0.5)};
    expect_close(run(n, 18, {&x, nullptr, nullptr, &sizes})[0], resize_reference(x, out, {1, 1, scale, scale}, o), 0,
                 1e-4f);
  }
}

// Antialias widens the filter only when shrinking: the 0.6 and 0.35 dims take 4 and 6
// (linear) or 8 and 12 (cubic) taps, the 1.5 dim keeps 2 or 4.
TEST(Resize, AntialiasLinearAndCubicEveryCoordinateModeAndExcludeOutside) {
  for (const std::string mode : {"linear", "cubic"})
    for (const auto& coord : kCoordModes)
      for (bool exclude : {false, true}) {
        Options o{.mode = mode, .coord = coord, .a = -0.5, .exclude_outside = exclude, .antialias = true};
        check_scales(o, {1, 7, 9, 5}, {1, 0.6f, 0.35f, 1.5f});
        check_sizes(o, {2, 11, 6}, {2, 4, 5});
      }
}

TEST(Resize, AntialiasWithTfCropAndResizeAxesAndKeepAspectRatio) {
  Options crop{.mode = "linear", .coord = "tf_crop_and_resize", .extrapolation = -2,
               .roi = {0, 0, 0.1, -0.2, 1, 1, 0.8, 1.1}, .antialias = true};
  check_scales(crop, {1, 2, 9, 10}, {1, 1, 0.5f, 0.3f});
  std::mt19937 rng(65);
  const Tensor x = random_tensor(DType::Float32, {1, 2, 10, 7}, rng);
  for (const std::string policy : {"not_larger", "not_smaller"}) {
    Options o{.mode = "cubic", .antialias = true};
    Node n = resize_node(o, 4, {true, false, false, true});
    n.attributes.set_ints("axes", {3, 2});
    n.attributes.set_string("keep_aspect_ratio_policy", policy);
    const Tensor sizes = ints({3, 4});  // width x3/7, height x0.4
    const double scale = policy == "not_larger" ? 0.4 : 3.0 / 7;
    const Shape out{1, 2, static_cast<int64_t>(10 * scale + 0.5), static_cast<int64_t>(7 * scale + 0.5)};
    expect_close(run(n, 18, {&x, nullptr, nullptr, &sizes})[0], resize_reference(x, out, {1, 1, scale, scale}, o),
                 0, 1e-4f);
  }
}

TEST(Resize, AntialiasLinearHalvingAveragesFourInputsByHand) {
  // half_pixel, scale 0.5: output i samples x = 2i + 0.5 with the triangle stretched to
  // radius 2: weights 1/8, 3/8, 3/8, 1/8 on inputs 2i-1 .. 2i+2 (edge-clamped).
  const Tensor x = floats({1, 2, 3, 4, 5, 6, 7, 8}, {1, 8});
  const Tensor scales = floats({1, 0.5f});
  const Node n = resize_node(Options{.mode = "linear", .antialias = true}, 3, {true, false, true});
  expect_close(run(n, 18, {&x, nullptr, &scales})[0], floats({1.625f, 3.5f, 5.5f, 7.375f}, {1, 4}), 0, 1e-6f);
  // Without antialias the same resize interpolates between inputs 2i and 2i+1.
  const Node plain = resize_node(Options{.mode = "linear"}, 3, {true, false, true});
  expect_close(run(plain, 18, {&x, nullptr, &scales})[0], floats({1.5f, 3.5f, 5.5f, 7.5f}, {1, 4}), 0, 1e-6f);
}

TEST(Resize, NearestIsDtypeAgnostic) {
  std::mt19937 rng(64);
  for (DType dt : {DType::Int64, DType::Bool, DType::Float16}) {
    const Tensor x = random_tensor(dt, {2, 3, 4}, rng);
    const Tensor scales = floats({1, 2, 0.5f});
    const Node n = resize_node(Options{.coord = "asymmetric", .nearest = "floor"}, 3, {true, false, true});
    const Tensor expected = expected_by_index(x, {2, 6, 2}, [&](const std::vector<int64_t>& o) {
      return ravel({o[0], o[1] / 2, o[2] * 2}, x.shape());
    });
    expect_same(run(n, 13, {&x, nullptr, &scales})[0], expected);
  }
}

TEST(Resize, MatchesOnnxRuntimeOnFixedCases) {
  const Tensor x = floats({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {1, 1, 3, 4});
  const Tensor sizes = ints({1, 1, 5, 3});
  const Node cubic = resize_node(Options{.mode = "cubic"}, 4, {true, false, false, true});
  expect_close(run(cubic, 13, {&x, nullptr, nullptr, &sizes})[0],
               floats({0.742158055f, 2.116001129f, 3.489844561f, 2.390157223f, 3.763999224f, 5.137842178f,
                       5.126158237f, 6.5f, 7.873844147f, 7.862160206f, 9.236000061f, 10.609846115f,
                       9.510163307f, 10.884004593f, 12.257848740f}, {1, 1, 5, 3}),
               0, 1e-4f);
  // align_corners with scales: ONNX Runtime divides by the integer output length
  // (rows 0, 2/3, 4/3, 2); the ONNX reference, and the conformance cases, by the
  // unrounded 3 * 1.5 = 4.5 (rows 0, 4/7, 8/7, 12/7). We follow the reference.
  const Tensor scales = floats({1, 1, 1.5f, 0.75f});
  const Node corners = resize_node(Options{.mode = "linear", .coord = "align_corners"}, 3, {true, false, true});
  std::vector<float> want;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c) want.push_back(static_cast<float>(1 + 4 * (r * 4 / 7.0) + c * 1.5));
  expect_close(run(corners, 13, {&x, nullptr, &scales})[0], floats(want, {1, 1, 4, 3}), 0, 1e-5f);
  const Tensor down_up = floats({1, 1, 0.7f, 1.6f});
  const Node ceil = resize_node(Options{.coord = "asymmetric", .nearest = "ceil"}, 3, {true, false, true});
  expect_close(run(ceil, 13, {&x, nullptr, &down_up})[0],
               floats({1, 2, 3, 3, 4, 4, 9, 10, 11, 11, 12, 12}, {1, 1, 2, 6}), 0, 0);
}

TEST(Resize, Opset10AndUpsampleUseAsymmetricSimpleNearest) {
  // ONNX's resize_downsample_nearest (opset 10): scales 0.6 keep input columns 0 and 2.
  const Tensor x = floats({1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 2, 4});
  const Tensor scales = floats({1, 1, 0.6f, 0.6f});
  Node r10 = make_node("Resize", 2);
  r10.attributes.set_string("mode", "nearest");
  expect_close(run(r10, 10, {&x, &scales})[0], floats({1, 3}, {1, 1, 1, 2}), 0, 0);
  // Upsample nearest repeats each element scale times (attribute form 7, input form 9).
  const Tensor y = floats({1, 2, 3, 4}, {1, 2, 2});
  const Tensor expected = floats({1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}, {1, 4, 6});
  Node u7 = make_node("Upsample", 1);
  u7.attributes.set_floats("scales", {1, 2, 3});
  expect_close(run(u7, 7, {&y})[0], expected, 0, 0);
  const Tensor up = floats({1, 2, 3});
  expect_close(run(make_node("Upsample", 2), 9, {&y, &up})[0], expected, 0, 0);
  // Upsample linear is asymmetric: x = i / scale, clamped at the edge.
  Node ul = make_node("Upsample", 2);
  ul.attributes.set_string("mode", "linear");
  const Tensor row = floats({1, 3}, {1, 2});
  const Tensor s = floats({1, 2});
  expect_close(run(ul, 9, {&row, &s})[0], floats({1, 2, 3, 3}, {1, 4}), 0, 1e-6f);
}

TEST(Resize, Errors) {
  const Tensor x(DType::Float32, {1, 2});
  const Tensor scales = floats({1, 2}), sizes = ints({1, 4});
  const Node both = resize_node(Options{}, 4, {true, false, true, true});
  expect_error(both, "only one", [&] { run(both, 13, {&x, nullptr, &scales, &sizes}); });
  const Tensor wrong = floats({2});
  const Node n = resize_node(Options{}, 3, {true, false, true});
  expect_error(n, "one value per", [&] { run(n, 13, {&x, nullptr, &wrong}); });
  Node bad_mode = resize_node(Options{.mode = "area"}, 3, {true, false, true});
  expect_error(bad_mode, "mode", [&] { run(bad_mode, 13, {&x, nullptr, &scales}); });
  Node nearest_antialias = resize_node(Options{.antialias = true}, 3, {true, false, true});
  expect_error(nearest_antialias, "antialias needs mode linear or cubic",
               [&] { run(nearest_antialias, 18, {&x, nullptr, &scales}); });
}

}  // namespace
}  // namespace ember::test
