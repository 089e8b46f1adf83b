#include "src/framework/cuda_device_context.h"

#include <functional>

#include "src/framework/cuda_check.h"

namespace fluid {

const char* CublasStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "invalid value";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "architecture mismatch";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "mapping error";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "execution failed";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "internal error";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "not supported";
    default:
      return "unknown cuBLAS status";
  }
}

CUDADeviceContext::CUDADeviceContext(int device) : device_(device) {
  FLUID_CUDA_CHECK(cudaSetDevice(device));
  FLUID_CUDA_CHECK(cudaDeviceGetAttribute(
      &multiprocessors_, cudaDevAttrMultiProcessorCount, device));
  FLUID_CUDA_CHECK(cudaStreamCreate(&stream_));
  FLUID_CUBLAS_CHECK(cublasCreate(&cublas_));
  FLUID_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
  // Bitwise-reproducible GEMMs: no atomics-based reductions.
  FLUID_CUBLAS_CHECK(cublasSetAtomicsMode(cublas_, CUBLAS_ATOMICS_NOT_ALLOWED));
}

CUDADeviceContext::~CUDADeviceContext() {
  cudaSetDevice(device_);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  workspace_ = Tensor();
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void CUDADeviceContext::MakeCurrent() const {
  FLUID_CUDA_CHECK(cudaSetDevice(device_));
}

void CUDADeviceContext::Wait() const {
  FLUID_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void* CUDADeviceContext::Workspace(size_t bytes) const {
  size_t elems = (bytes + sizeof(double) - 1) / sizeof(double);
  if (!workspace_.initialized() ||
      static_cast<size_t>(workspace_.numel()) < elems) {
    workspace_.Resize(Shape{static_cast<int64_t>(elems)});
  } else {
    return workspace_.data<double>();
  }
  return workspace_.mutable_data<double>(place());
}

std::function<void()> CUDADeviceContext::ReadyFence() const {
  cudaEvent_t raw = nullptr;
  FLUID_CUDA_CHECK(cudaSetDevice(device_));
  FLUID_CUDA_CHECK(cudaEventCreateWithFlags(&raw, cudaEventDisableTiming));
  // Owned by the returned function: freed when the last copy goes, whether
  // or not it was ever called.
  std::shared_ptr<CUevent_st> event(raw,
                                    [](cudaEvent_t e) { cudaEventDestroy(e); });
  FLUID_CUDA_CHECK(cudaEventRecord(raw, stream_));
  const int device = device_;
  return [event, device] {
    cudaSetDevice(device);
    cudaError_t rc = cudaEventSynchronize(event.get());
    FLUID_ENFORCE_CODE(rc == cudaSuccess, ErrorCode::kAborted,
                       "waiting for the kernels before a collective failed: ",
                       cudaGetErrorString(rc));
  };
}

}  // namespace fluid
