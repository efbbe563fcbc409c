#include "ops/cuda/cuda_common.h"

#include <ember/core/error.h>

#include <memory>

namespace ember::cuda {

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear a sticky-free error so the next call starts clean
  throw Error(std::string(what) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

void check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw Error(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(status)));
}

void check(cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw Error(std::string(what) + ": " + cudnnGetErrorString(status));
}

void check_launch(const char* what) { check(cudaGetLastError(), what); }

StreamContext* create_stream_context(int device) {
  auto context = std::make_unique<StreamContext>();
  context->device = device;
  check(cudaSetDevice(device), "selecting the CUDA device");
  cudaDeviceProp props{};
  check(cudaGetDeviceProperties(&props, device), "reading the CUDA device's properties");
  context->sm_count = props.multiProcessorCount;
  context->compute_major = props.major;
  context->compute_minor = props.minor;
  context->shared_memory_per_block = props.sharedMemPerBlockOptin;
  check(cudaStreamCreateWithFlags(&context->stream, cudaStreamNonBlocking), "creating a CUDA stream");
  try {
    check(cublasLtCreate(&context->blaslt), "creating a cuBLASLt handle");
    check(cudnnCreate(&context->cudnn), "creating a cuDNN handle");
    check(cudnnSetStream(context->cudnn, context->stream), "binding cuDNN to the stream");
  } catch (...) {
    destroy_stream_context(context.release());
    throw;
  }
  return context.release();
}

void destroy_stream_context(StreamContext* context) {
  if (!context) return;
  cudaSetDevice(context->device);
  if (context->stream) cudaStreamSynchronize(context->stream);
  if (context->cudnn) cudnnDestroy(context->cudnn);
  if (context->blaslt) cublasLtDestroy(context->blaslt);
  if (context->stream) cudaStreamDestroy(context->stream);
  delete context;
}

}  // namespace ember::cuda
