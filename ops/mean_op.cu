// CUDA kernels for mean and mean_grad (schemas in mean_op.cc). The sum is
// accumulated in double, as on the CPU, in a fixed order (deterministic).
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/mean_op.h"

namespace fluid {
namespace ops {
namespace {

// Elements per block of the first pass.
constexpr int64_t kMeanCols = 4096;

template <typename T>
struct AsDouble {
  const T* x;
  int64_t n;
  __device__ double operator()(int64_t r, int64_t c) const {
    const int64_t i = r * kMeanCols + c;
    return i < n ? static_cast<double>(x[i]) : 0.0;
  }
};

// out[0] = (sum of the partial sums) / n, rounded to T once.
template <typename T>
__global__ void MeanFinishKernel(const double* partial, int64_t parts,
                                 int64_t n, T* out) {
  double acc = 0.0;
  for (int64_t c = threadIdx.x; c < parts; c += blockDim.x) acc += partial[c];
  acc = cuda::BlockReduce(acc, cuda::SumOp(), 0.0);
  if (threadIdx.x == 0) out[0] = static_cast<T>(acc / static_cast<double>(n));
}

template <typename T>
void MeanKernel(const ExecutionContext& ctx) {
  const Tensor& x = GetMeanInput(ctx);
  const int64_t n = x.numel();
  T* out = cuda::OutputData<T>(ctx, "Out");
  const auto& dev = cuda::Dev(ctx);
  const int64_t parts = CeilDiv(n, kMeanCols);
  double* partial = static_cast<double*>(dev.Workspace(sizeof(double) * parts));
  cuda::RowReduce<double>(dev, parts, kMeanCols, AsDouble<T>{x.data<T>(), n},
                          cuda::SumOp(), 0.0, partial);
  MeanFinishKernel<T>
      <<<1, cuda::kThreads, 0, dev.stream()>>>(partial, parts, n, out);
  cuda::CheckLaunch();
}

// dX = dOut[0] / numel(X) everywhere.
template <typename T>
struct MeanGradFill {
  const T* dout;
  T numel;
  T* dx;
  __device__ void operator()(int64_t i) const { dx[i] = dout[0] / numel; }
};

template <typename T>
void MeanGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const MeanGradArgs a = ReadMeanGradArgs(ctx);
  T* p = dx->mutable_data<T>(ctx.place());
  cuda::ForEach(cuda::Dev(ctx), dx->numel(),
                MeanGradFill<T>{a.dout.data<T>(), static_cast<T>(a.numel), p});
}

}  // namespace

REGISTER_FLOAT_KERNELS(mean, kCUDA, MeanKernel);
REGISTER_FLOAT_KERNELS(mean_grad, kCUDA, MeanGradKernel);

}  // namespace ops
}  // namespace fluid
