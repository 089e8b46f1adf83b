// CUDA kernels for gru and its gradient (schema in gru_op.cc): the drivers
// of ops/gru_op.h on the CUDA device, each step two cuBLAS GEMMs and two
// per-element kernels each way (16-bit types: cublasGemmEx, summed in
// float32).
#include "ops/cuda/recurrent_device.cuh"
#include "ops/gru_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void GruKernel(const ExecutionContext& ctx) {
  GruForward<T>(CudaRecurrentDevice(ctx));
}

template <typename T>
void GruGradKernel(const ExecutionContext& ctx) {
  GruBackward<T>(CudaRecurrentDevice(ctx));
}

}  // namespace

REGISTER_FLOAT_KERNELS(gru, kCUDA, GruKernel);
REGISTER_HALF_KERNELS(gru, kCUDA, GruKernel);
REGISTER_FLOAT_KERNELS(gru_grad, kCUDA, GruGradKernel);
REGISTER_HALF_KERNELS(gru_grad, kCUDA, GruGradKernel);

}  // namespace ops
}  // namespace fluid
