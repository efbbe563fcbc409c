// The device side of the CUDA emulator: what a kernel source needs to compile as host
// C++ and run on the CPU. The build force-includes this header into every .cu file
// rewritten by emulate_cuda_source.py (which turns `k<<<cfg>>>(args)` into
// `k | launch_config("k", cfg)(args)` and `extern __shared__` arrays into
// dynamic_shared<T>()).
//
// Each CUDA thread is a fiber; the threads of one block run on one OS thread and switch
// at __syncthreads and at warp shuffles, so barriers and shuffles keep their meaning
// exactly. `__shared__` variables become thread_local statics: the fibers of a block
// share them, and blocks run one after another. The CUDA types, the __half and
// __nv_bfloat16 conversions and the runtime API's declarations are the toolkit's own
// headers; runtime.cc defines the API functions the engine calls.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>

#undef __global__
#define __global__
#undef __device__
#define __device__
#undef __shared__
#define __shared__ static thread_local
#undef __launch_bounds__
#define __launch_bounds__(...)

namespace ember::emu {

// Where the running fiber is in the grid.
struct ThreadCoordinates {
  uint3 thread_idx{}, block_idx{};
  dim3 block_dim, grid_dim;
  unsigned linear = 0;  // the thread's index in its block; lane = linear % 32
};
extern thread_local const ThreadCoordinates* current_coordinates;

// The block's dynamic shared memory (the launch's third argument), filled with 0xff
// bytes at the start of each block so that reading it before writing shows up as NaN.
void* dynamic_shared_bytes();
template <class T> T* dynamic_shared() { return static_cast<T*>(dynamic_shared_bytes()); }

// __syncthreads(): the fiber waits until every thread of the block arrives.
void block_barrier();
// The warp-level step of a shuffle: the fiber waits until every lane in `mask` arrives.
void warp_barrier(unsigned mask);
// This lane's 8-byte slot of the warp's shuffle exchange, and another lane's.
uint64_t& shuffle_slot(unsigned lane);

inline unsigned lane_id() { return current_coordinates->linear & 31u; }

// One lane's registers of a warp-wide matrix multiply (mma.sync m16n8k16): A's four
// and B's two 32-bit registers, each two float16 (or bfloat16) values.
struct MatrixFragments {
  uint32_t a[4], b[2];
};
MatrixFragments& fragment_slot(unsigned lane);

// PTX mma.sync.aligned.m16n8k16.row.col.f32.{f16.f16,bf16.bf16}.f32 for the warp (T:
// __half or __nv_bfloat16, the inputs' type): D += A * B, with
// A 16x16, B 16x8 and D 16x8 spread over the lanes as the PTX ISA lays them out (lane =
// 4 * group + index in group): A's register r holds row group + 8 * (r & 1), columns
// 2 * index + 8 * (r >> 1) + {0, 1}; B's register r holds rows 2 * index + 8 * r + {0, 1},
// column group; D's element e is row group + 8 * (e >> 1), column 2 * index + (e & 1).
// Every lane publishes its registers, waits for the warp, and computes its own four
// elements in float (each product is exact there, as on the tensor cores).
template <class T> void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  const unsigned lane = lane_id();
  MatrixFragments& mine = fragment_slot(lane);
  std::memcpy(mine.a, a, sizeof mine.a);
  std::memcpy(mine.b, b, sizeof mine.b);
  warp_barrier(0xffffffffu);
  auto half_of = [](uint32_t word, unsigned k) {
    const auto bits = static_cast<unsigned short>(k & 1 ? word >> 16 : word & 0xffffu);
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      const uint32_t f = static_cast<uint32_t>(bits) << 16;  // bfloat16 is float's top half
      float value;
      std::memcpy(&value, &f, sizeof value);
      return value;
    } else {
      return __half2float(__half(__half_raw{bits}));
    }
  };
  auto a_at = [&](unsigned row, unsigned k) {
    const MatrixFragments& from = fragment_slot(4 * (row & 7) + (k & 7) / 2);
    return half_of(from.a[(row >> 3) + 2 * (k >> 3)], k);
  };
  auto b_at = [&](unsigned k, unsigned col) {
    const MatrixFragments& from = fragment_slot(4 * col + (k & 7) / 2);
    return half_of(from.b[k >> 3], k);
  };
  const unsigned group = lane >> 2, index = lane & 3;
  for (unsigned e = 0; e < 4; ++e) {
    const unsigned row = group + 8 * (e >> 1), col = 2 * index + (e & 1);
    float sum = d[e];
    for (unsigned k = 0; k < 16; ++k) sum += a_at(row, k) * b_at(k, col);
    d[e] = sum;
  }
  warp_barrier(0xffffffffu);  // no lane overwrites its registers before the others read them
}

// Every shuffle: publish, wait for the lanes in `mask`, read `source`'s value, and wait
// again so no lane overwrites its slot before the others have read it.
template <class T> T shuffle(unsigned mask, T value, unsigned source) {
  static_assert(sizeof(T) <= sizeof(uint64_t) && std::is_trivially_copyable_v<T>);
  const unsigned lane = lane_id();
  std::memcpy(&shuffle_slot(lane), &value, sizeof(T));
  warp_barrier(mask);
  T result;
  std::memcpy(&result, &shuffle_slot(source), sizeof(T));
  warp_barrier(mask);
  return result;
}

// One kernel launch's configuration.
struct Launch {
  const char* kernel = "";
  dim3 grid, block;
  size_t shared_bytes = 0;
  cudaStream_t stream = nullptr;
};

// Checks the configuration and the pointer arguments, then runs `thread` once per CUDA
// thread of the grid (or records it when `stream` is capturing a graph). Errors are
// reported like CUDA's: through cudaGetLastError and the next synchronization.
// `pointers` are the kernel's pointer arguments (null pointers are allowed).
void submit(const Launch& launch, const void* const* pointers, size_t num_pointers,
            std::function<void()> thread);

template <class... A> struct PendingLaunch {
  Launch launch;
  std::tuple<A...> args;
};

struct LaunchConfig {
  Launch launch;
  template <class... A> PendingLaunch<std::decay_t<A>...> operator()(A&&... args) const {
    return {launch, std::tuple<std::decay_t<A>...>(std::forward<A>(args)...)};
  }
};

inline LaunchConfig launch_config(const char* kernel, dim3 grid, dim3 block, size_t shared_bytes = 0,
                                  cudaStream_t stream = nullptr) {
  return {Launch{kernel, grid, block, shared_bytes, stream}};
}

template <class T> void collect_pointer(const T& arg, const void** out, size_t& n) {
  if constexpr (std::is_pointer_v<T>) out[n++] = static_cast<const void*>(arg);
}

// `kernel | launch_config(...)(args...)`: the arguments are converted to the kernel's
// parameter types once, as CUDA copies them at launch, and every thread gets them.
template <class... P, class... A> void operator|(void (*kernel)(P...), PendingLaunch<A...>&& pending) {
  static_assert(sizeof...(P) == sizeof...(A), "a kernel launch with the wrong number of arguments");
  auto params = std::apply([](auto&... a) { return std::tuple<std::decay_t<P>...>(a...); }, pending.args);
  const void* pointers[sizeof...(P) + 1] = {};
  size_t num_pointers = 0;
  std::apply([&](const auto&... p) { (collect_pointer(p, pointers, num_pointers), ...); }, params);
  submit(pending.launch, pointers, num_pointers, [kernel, params] { std::apply(kernel, params); });
}

}  // namespace ember::emu

#define threadIdx (::ember::emu::current_coordinates->thread_idx)
#define blockIdx (::ember::emu::current_coordinates->block_idx)
#define blockDim (::ember::emu::current_coordinates->block_dim)
#define gridDim (::ember::emu::current_coordinates->grid_dim)

// CUDA's math library puts these in the global namespace.
using std::isfinite;
using std::isinf;
using std::isnan;

inline unsigned __umulhi(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<uint64_t>(a) * b) >> 32);
}

inline void __syncthreads() { ::ember::emu::block_barrier(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { ::ember::emu::warp_barrier(mask); }

template <class T> T __shfl_sync(unsigned mask, T value, int source, int width = 32) {
  const unsigned lane = ::ember::emu::lane_id(), w = static_cast<unsigned>(width);
  return ::ember::emu::shuffle(mask, value, lane / w * w + static_cast<unsigned>(source) % w);
}
template <class T> T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32) {
  const unsigned lane = ::ember::emu::lane_id(), w = static_cast<unsigned>(width);
  const unsigned source = lane ^ static_cast<unsigned>(lane_mask);
  return ::ember::emu::shuffle(mask, value, source / w == lane / w ? source : lane);
}
template <class T> T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  const unsigned lane = ::ember::emu::lane_id(), w = static_cast<unsigned>(width);
  return ::ember::emu::shuffle(mask, value, lane % w + delta < w ? lane + delta : lane);
}
template <class T> T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  const unsigned lane = ::ember::emu::lane_id(), w = static_cast<unsigned>(width);
  return ::ember::emu::shuffle(mask, value, lane % w >= delta ? lane - delta : lane);
}
