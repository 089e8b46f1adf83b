// CUDA kernels for gru_unit and its gradient (schema in gru_unit_op.cc):
// the step of ops/gru_op.h on the CUDA device, two cuBLAS GEMMs each way
// (16-bit types: cublasGemmEx, summed in float32).
#include "ops/cuda/recurrent_device.cuh"
#include "ops/gru_unit_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void GruUnitKernel(const ExecutionContext& ctx) {
  GruUnitForward<T>(CudaRecurrentDevice(ctx));
}

template <typename T>
void GruUnitGradKernel(const ExecutionContext& ctx) {
  GruUnitBackward<T>(CudaRecurrentDevice(ctx));
}

}  // namespace

REGISTER_FLOAT_KERNELS(gru_unit, kCUDA, GruUnitKernel);
REGISTER_FLOAT_KERNELS(gru_unit_grad, kCUDA, GruUnitGradKernel);
REGISTER_HALF_KERNELS(gru_unit, kCUDA, GruUnitKernel);
REGISTER_HALF_KERNELS(gru_unit_grad, kCUDA, GruUnitGradKernel);

}  // namespace ops
}  // namespace fluid
