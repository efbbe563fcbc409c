// Where (three-way broadcasting select) and Cast on CUDA, on the drivers in
// elementwise_device.cuh.
#include "ops/cuda/elementwise_device.cuh"

namespace ember::cuda {

namespace {

// ---- Where ------------------------------------------------------------------------------

// Selection only moves bytes: T is an unsigned type of the element's size.
template <class T, class I>
__global__ void where_kernel(const bool* cond, const T* x, const T* y, T* out, BroadcastIndex ix) {
  EMBER_EW_LOOP(I, i, ix.numel) {
    I off[3];
    input_offsets<3, I>(ix, i, off);
    out[i] = cond[off[0]] ? x[off[1]] : y[off[2]];
  }
}

template <class T>
void launch_where_typed(const void* cond, const void* x, const void* y, void* out, const BroadcastIndex& ix,
                        cudaStream_t stream) {
  const auto* c = static_cast<const bool*>(cond);
  const auto* a = static_cast<const T*>(x);
  const auto* b = static_cast<const T*>(y);
  auto* o = static_cast<T*>(out);
  // A rank-1 index (same shapes, or scalars) costs no division in input_offsets.
  if (ix.index32) where_kernel<T, uint32_t><<<ew_blocks(ix.numel), kEwThreads, 0, stream>>>(c, a, b, o, ix);
  else where_kernel<T, int64_t><<<ew_blocks(ix.numel), kEwThreads, 0, stream>>>(c, a, b, o, ix);
}

// ---- Cast -------------------------------------------------------------------------------

// ONNX Cast: float -> integer truncates toward zero, anything -> bool is "!= 0",
// float16 and bfloat16 go through float, and integers/double reach them through double
// (one rounding, as the CPU's convert does).
template <class Out, class In> __device__ __forceinline__ Out convert(In x) {
  if constexpr (std::is_same_v<Out, In>) return x;
  else if constexpr (std::is_same_v<In, __half>) return convert<Out>(__half2float(x));
  else if constexpr (std::is_same_v<In, __nv_bfloat16>) return convert<Out>(__bfloat162float(x));
  else if constexpr (std::is_same_v<Out, __half>) {
    if constexpr (std::is_same_v<In, float>) return __float2half(x);
    else if constexpr (std::is_same_v<In, bool>) return __float2half(x ? 1.f : 0.f);
    else return __double2half(static_cast<double>(x));
  } else if constexpr (std::is_same_v<Out, __nv_bfloat16>) {
    if constexpr (std::is_same_v<In, float>) return __float2bfloat16(x);
    else if constexpr (std::is_same_v<In, bool>) return __float2bfloat16(x ? 1.f : 0.f);
    else return __double2bfloat16(static_cast<double>(x));
  } else if constexpr (std::is_same_v<Out, bool>) {
    return x != In(0);
  } else {
    return static_cast<Out>(x);
  }
}

template <class In, class Out> struct Convert {
  __device__ __forceinline__ Out operator()(In x) const { return convert<Out>(x); }
};

inline constexpr uint32_t kCastTypes = kEwSigned | kEwBool | type_bit(EwType::I8) | type_bit(EwType::U8) |
                                       type_bit(EwType::F64);

}  // namespace

void launch_where(int element_bytes, const void* cond, const void* x, const void* y, void* out,
                  const BroadcastIndex& index, cudaStream_t stream) {
  if (index.numel <= 0) return;
  switch (element_bytes) {
    case 1: return launch_where_typed<uint8_t>(cond, x, y, out, index, stream);
    case 2: return launch_where_typed<uint16_t>(cond, x, y, out, index, stream);
    case 4: return launch_where_typed<uint32_t>(cond, x, y, out, index, stream);
    case 8: return launch_where_typed<uint64_t>(cond, x, y, out, index, stream);
  }
}

void launch_cast(EwType from, EwType to, const void* x, void* y, int64_t n, cudaStream_t stream) {
  dispatch_ew<kCastTypes>(from, [&](auto from_tag) {
    dispatch_ew<kCastTypes>(to, [&](auto to_tag) {
      using In = typename decltype(from_tag)::type;
      using Out = typename decltype(to_tag)::type;
      launch_unary_map<In, Out>(Convert<In, Out>{}, x, y, n, stream);
    });
  });
}

}  // namespace ember::cuda
