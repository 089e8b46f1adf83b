// CUDA kernels for lstm_unit and its gradient (schema in lstm_unit_op.cc):
// the per-element math of ops/lstm_unit_op.h, one thread per element
// (16-bit X and H, float32 cell states, computed in float32).
#include "ops/cuda/recurrent_device.cuh"
#include "ops/lstm_unit_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void LstmUnitKernel(const ExecutionContext& ctx) {
  LstmUnitForward<T>(CudaRecurrentDevice(ctx));
}

template <typename T>
void LstmUnitGradKernel(const ExecutionContext& ctx) {
  LstmUnitBackward<T>(CudaRecurrentDevice(ctx));
}

}  // namespace

REGISTER_FLOAT_KERNELS(lstm_unit, kCUDA, LstmUnitKernel);
REGISTER_FLOAT_KERNELS(lstm_unit_grad, kCUDA, LstmUnitGradKernel);
REGISTER_HALF_KERNELS(lstm_unit, kCUDA, LstmUnitKernel);
REGISTER_HALF_KERNELS(lstm_unit_grad, kCUDA, LstmUnitGradKernel);

}  // namespace ops
}  // namespace fluid
