// CUDA kernels for lstm and its gradient (schema in lstm_op.cc): the drivers
// of ops/lstm_op.h on the CUDA device, each step one cuBLAS GEMM and one
// per-element kernel (16-bit types: cublasGemmEx, summed in float32).
#include "ops/cuda/recurrent_device.cuh"
#include "ops/lstm_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void LstmKernel(const ExecutionContext& ctx) {
  LstmForward<T>(CudaRecurrentDevice(ctx));
}

template <typename T>
void LstmGradKernel(const ExecutionContext& ctx) {
  LstmBackward<T>(CudaRecurrentDevice(ctx));
}

}  // namespace

REGISTER_FLOAT_KERNELS(lstm, kCUDA, LstmKernel);
REGISTER_HALF_KERNELS(lstm, kCUDA, LstmKernel);
REGISTER_FLOAT_KERNELS(lstm_grad, kCUDA, LstmGradKernel);
REGISTER_HALF_KERNELS(lstm_grad, kCUDA, LstmGradKernel);

}  // namespace ops
}  // namespace fluid
