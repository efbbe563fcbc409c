// cuBLAS(Lt) and cuDNN under the emulator: handles and versions only. Their kernels are
// the vendors' own device code, which cannot run on the CPU, so the ember kernels that
// call them (MatMul, Gemm, Conv, ConvTranspose) are left out of the emulated build and
// those ops fall back to the CPU there.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>

struct cublasLtContext {};
struct cublasContext {};
struct cudnnContext {};

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  *handle = new cublasLtContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  *handle = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetVersion_v2(cublasHandle_t, int* version) {
  *version = CUBLAS_VERSION;
  return CUBLAS_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  *handle = new cudnnContext;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t, cudaStream_t) { return CUDNN_STATUS_SUCCESS; }

size_t cudnnGetVersion() { return CUDNN_VERSION; }

const char* cudnnGetErrorString(cudnnStatus_t) { return "cuDNN does not run in the CUDA emulator"; }
