// CUDA kernels for linear_chain_crf and its gradient (schemas in
// linear_chain_crf_op.cc): one thread per sequence running the CPU
// kernels' math (ops/linear_chain_crf_op.h). The gradient's transition
// shares are summed over the sequences in order, one thread per weight, as
// the CPU kernel sums them. Labels cannot be checked on the host without a
// synchronisation: a sequence with a tag outside [0, D) gets a NaN cost.
#include <vector>

#include "ops/cuda/sequence_helpers.cuh"
#include "ops/linear_chain_crf_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct ForwardFunctor {
  const int64_t* spans;
  CrfWeights<T> w;
  const T* x;
  const int64_t* label;
  T* alpha;
  T* exps;
  T* nll;
  T* scratch;  // D per sequence
  __device__ void operator()(int64_t i) const {
    const int64_t r = spans[2 * i];
    nll[i] = CrfForward(w, x + r * w.d, label + r, spans[2 * i + 1],
                        alpha + r * w.d, exps + r * w.d, scratch + i * w.d);
  }
};

template <typename T>
struct ColumnExpsFunctor {
  const T* w;
  int64_t d;
  T* e;
  T* cmax;
  __device__ void operator()(int64_t j) const {
    CrfColumnExps(w, d, j, e, cmax);
  }
};

// The column exponentials of w (CrfColumnExps: D * D + D values) computed
// at `at`, in the workspace, which then holds D scratch values per sequence
// (ColumnExpsBytes in all); sets w->e and w->cmax and returns the scratch.
template <typename T>
T* ColumnExps(const CUDADeviceContext& dev, void* at, CrfWeights<T>* w) {
  const int64_t d = w->d;
  T* base = static_cast<T*>(at);
  ColumnExpsFunctor<T> f{w->w, d, base, base + d * d};
  cuda::ForEach(dev, d, f);
  w->e = f.e;
  w->cmax = f.cmax;
  return base + d * d + d;
}

template <typename T>
size_t ColumnExpsBytes(int64_t d, int64_t n) {
  return (sizeof(T) * (d * d + d + n * d) + 255) / 256 * 256;
}

template <typename T>
struct ExpFunctor {
  const T* w;
  T* out;
  __device__ void operator()(int64_t k) const { out[k] = exp(w[k]); }
};

template <typename T>
struct BackwardFunctor {
  const int64_t* spans;
  CrfWeights<T> w;
  const T* x;
  const int64_t* label;
  const T* g;
  T* la;  // the log forward vectors, Emission's shape
  T* dx;
  T* partial;
  T* scratch;  // D per sequence
  __device__ void operator()(int64_t i) const {
    const int64_t r = spans[2 * i];
    CrfBackward(w, x + r * w.d, label + r, spans[2 * i + 1], g[i], la + r * w.d,
                dx + r * w.d, partial + i * (w.d + 2) * w.d, scratch + i * w.d);
  }
};

template <typename T>
struct SumSharesFunctor {
  const T* partial;
  int64_t n, size;
  T* dw;
  __device__ void operator()(int64_t k) const {
    T s = 0;
    for (int64_t i = 0; i < n; ++i) s += partial[i * size + k];
    dw[k] = s;
  }
};

}  // namespace

Tensor HostInt64Input(const ExecutionContext& ctx, const std::string& slot) {
  Tensor host;
  if (!ctx.HasInput(slot)) return host;
  const Tensor& dev = ctx.Input(slot);
  int64_t* p = host.mutable_data<int64_t>(dev.shape());
  if (dev.numel() > 0) {
    FLUID_CUDA_CHECK(cudaMemcpy(p, dev.data<int64_t>(),
                                sizeof(int64_t) * dev.numel(),
                                cudaMemcpyDeviceToHost));
  }
  return host;
}

namespace {

template <typename T>
void LinearChainCrfKernel(const ExecutionContext& ctx) {
  const Tensor& emission = ctx.Input("Emission");
  const bool padded = ctx.HasInput("Length");
  const Tensor length = HostInt64Input(ctx, "Length");
  const std::vector<int64_t> spans =
      CrfSpans(emission, padded ? &length : nullptr, "linear_chain_crf");
  const auto& dev = cuda::Dev(ctx);
  const int64_t d = emission.shape()[emission.shape().rank() - 1];
  const Tensor& trans = ctx.Input("Transition");
  ExpFunctor<T> e{trans.data<T>(), cuda::OutputData<T>(ctx, "TransitionExps")};
  cuda::ForEach(dev, trans.numel(), e);
  ForwardFunctor<T> f;
  f.w = CrfWeights<T>{trans.data<T>(), d};
  f.x = emission.data<T>();
  f.label = ctx.Input("Label").data<int64_t>();
  f.alpha = cuda::OutputData<T>(ctx, "Alpha");
  f.exps = cuda::OutputData<T>(ctx, "EmissionExps");
  f.nll = cuda::OutputData<T>(ctx, "LogLikelihood");
  cuda::ZeroAsync(dev, f.alpha, sizeof(T) * emission.numel());
  cuda::ZeroAsync(dev, f.exps, sizeof(T) * emission.numel());
  if (spans.empty()) return;
  const int64_t n = static_cast<int64_t>(spans.size() / 2);
  const cuda::DeviceLoDs ws =
      cuda::CopyLoDsToDevice(dev, {&spans}, ColumnExpsBytes<T>(d, n));
  f.spans = ws.lod[0];
  f.scratch = ColumnExps(dev, ws.extra, &f.w);
  cuda::ForEach(dev, n, f);
}

template <typename T>
void LinearChainCrfGradKernel(const ExecutionContext& ctx) {
  const Tensor& emission = ctx.Input("Emission");
  const bool padded = ctx.HasInput("Length");
  const Tensor length = HostInt64Input(ctx, "Length");
  const std::vector<int64_t> spans =
      CrfSpans(emission, padded ? &length : nullptr, "linear_chain_crf_grad");
  const int64_t n = static_cast<int64_t>(spans.size() / 2);
  const Tensor& dll = ctx.Input(GradSlot("LogLikelihood"));
  FLUID_ENFORCE(dll.numel() == n,
                "linear_chain_crf_grad: LogLikelihood@GRAD "
                "has shape ",
                dll.shape(), " for ", n, " sequences");
  const auto& dev = cuda::Dev(ctx);
  const int64_t d = emission.shape()[emission.shape().rank() - 1];
  const int64_t size = (d + 2) * d;
  T* demission = cuda::OutputData<T>(ctx, GradSlot("Emission"));
  T* dtrans = cuda::OutputData<T>(ctx, GradSlot("Transition"));
  // Scratch: each sequence's transition share, then dx when not wanted.
  const size_t cols_bytes = ColumnExpsBytes<T>(d, n);
  const size_t share_bytes = (sizeof(T) * n * size + 255) / 256 * 256;
  const size_t la_bytes = (sizeof(T) * emission.numel() + 255) / 256 * 256;
  const size_t dx_bytes = demission ? 0 : sizeof(T) * emission.numel();
  const cuda::DeviceLoDs ws = cuda::CopyLoDsToDevice(
      dev, {&spans}, cols_bytes + share_bytes + la_bytes + dx_bytes);
  char* extra = static_cast<char*>(ws.extra);
  BackwardFunctor<T> f;
  f.spans = ws.lod[0];
  f.w = CrfWeights<T>{ctx.Input("Transition").data<T>(), d};
  f.scratch = ColumnExps(dev, extra, &f.w);
  f.x = emission.data<T>();
  f.label = ctx.Input("Label").data<int64_t>();
  f.g = dll.data<T>();
  f.partial = reinterpret_cast<T*>(extra + cols_bytes);
  f.la = reinterpret_cast<T*>(extra + cols_bytes + share_bytes);
  f.dx =
      demission
          ? demission
          : reinterpret_cast<T*>(extra + cols_bytes + share_bytes + la_bytes);
  cuda::ZeroAsync(dev, f.dx, sizeof(T) * emission.numel());
  cuda::ForEach(dev, n, f);
  if (dtrans == nullptr) return;
  cuda::ForEach(dev, size, SumSharesFunctor<T>{f.partial, n, size, dtrans});
}

}  // namespace

REGISTER_FLOAT_KERNELS(linear_chain_crf, kCUDA, LinearChainCrfKernel);
REGISTER_FLOAT_KERNELS(linear_chain_crf_grad, kCUDA, LinearChainCrfGradKernel);

}  // namespace ops
}  // namespace fluid
