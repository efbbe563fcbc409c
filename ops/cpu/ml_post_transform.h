// The post_transform of the ai.onnx.ml regressors and classifiers, applied to one row
// of scores in place, with the formulas ONNX Runtime and the ONNX reference share
// (PROBIT through their erf-inverse approximation, not an exact one).
#pragma once

#include "graph/schemas/ml.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ember {

template <class T>
T ml_logistic(T v) {
  const T e = T(1) / (T(1) + std::exp(-std::abs(v)));  // never overflows
  return v < 0 ? T(1) - e : e;
}

template <class T>
T ml_probit(T v) {
  T x = T(2) * v - T(1);
  const T sign = x < 0 ? T(-1) : T(1);
  x = (T(1) - x) * (T(1) + x);
  if (x == 0) return 0;
  const T log = std::log(x);
  const T a = T(2) / (T(3.14159265358979323846) * T(0.147)) + T(0.5) * log;
  const T b = T(1) / T(0.147) * log;
  return T(1.41421356) * sign * std::sqrt(-a + std::sqrt(a * a - b));
}

template <class T>
void apply_ml_post_transform(MlPostTransform transform, T* v, int64_t n) {
  switch (transform) {
    case MlPostTransform::None:
      return;
    case MlPostTransform::Logistic:
      for (int64_t i = 0; i < n; ++i) v[i] = ml_logistic(v[i]);
      return;
    case MlPostTransform::Probit:
      for (int64_t i = 0; i < n; ++i) v[i] = ml_probit(v[i]);
      return;
    case MlPostTransform::Softmax: {
      const T top = *std::max_element(v, v + n);
      T sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += v[i] = std::exp(v[i] - top);
      for (int64_t i = 0; i < n; ++i) v[i] /= sum;
      return;
    }
    case MlPostTransform::SoftmaxZero: {
      // Like softmax, but a zero score (|v| <= 1e-7) stays (about) zero: it stands for a
      // class no tree voted for. All zeros give 0.5 each, as the ONNX reference does.
      const T top = *std::max_element(v, v + n);
      const T scale = std::exp(-top);
      T sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        v[i] = v[i] > T(1e-7) || v[i] < T(-1e-7) ? std::exp(v[i] - top) : v[i] * scale;
        sum += v[i];
      }
      for (int64_t i = 0; i < n; ++i) v[i] = sum == 0 ? T(0.5) : v[i] / sum;
      return;
    }
  }
}

}  // namespace ember
