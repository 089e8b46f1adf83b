// CUDA kernels for cos_sim and cos_sim_grad (schemas and the CPU kernels in
// cos_sim_op.cc; the per-element gradient in cos_sim_op.h). One block per
// row for the forward sums and for a broadcast Y's gradient, in a fixed
// order (deterministic).
#include "ops/cos_sim_op.h"
#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

// Row r's dot product and both norms; Y's row is 0 when broadcast.
template <typename T>
__global__ void CosSimRowsKernel(int64_t rows, int64_t cols, bool y_broadcast,
                                 const T* x, const T* y, T* out, T* xn, T* yn) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t ry = y_broadcast ? 0 : r;
    const T* xr = x + r * cols;
    const T* yr = y + ry * cols;
    T dot = 0, xx = 0, yy = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      dot += xr[c] * yr[c];
      xx += xr[c] * xr[c];
      yy += yr[c] * yr[c];
    }
    dot = cuda::BlockReduce(dot, cuda::SumOp(), T(0));
    xx = cuda::BlockReduce(xx, cuda::SumOp(), T(0));
    yy = cuda::BlockReduce(yy, cuda::SumOp(), T(0));
    if (threadIdx.x == 0) {
      const T xnr = sqrt(xx), ynr = sqrt(yy);
      xn[r] = xnr;
      if (ry == r) yn[ry] = ynr;
      out[r] = dot / (xnr * ynr);
    }
  }
}

template <typename T>
void CosSimKernel(const ExecutionContext& ctx) {
  const CosSimDims d = ReadCosSimDims(ctx);
  const auto& dev = cuda::Dev(ctx);
  const int64_t y_rows = d.y_broadcast ? 1 : d.rows;
  T* out = ctx.Output("Out")->mutable_data<T>(Shape({d.rows, 1}), ctx.place());
  T* xn = ctx.Output("XNorm")->mutable_data<T>(Shape({d.rows, 1}), ctx.place());
  T* yn = ctx.Output("YNorm")->mutable_data<T>(Shape({y_rows, 1}), ctx.place());
  if (d.rows <= 0) return;
  const int64_t blocks = std::min<int64_t>(d.rows, 65535);
  CosSimRowsKernel<T>
      <<<static_cast<unsigned>(blocks), cuda::kThreads, 0, dev.stream()>>>(
          d.rows, d.cols, d.y_broadcast, ctx.Input("X").data<T>(),
          ctx.Input("Y").data<T>(), out, xn, yn);
  cuda::CheckLaunch();
}

// The saved forward values every gradient element reads.
template <typename T>
struct CosSimSaved {
  const T* x;
  const T* y;
  const T* out;
  const T* xn;
  const T* yn;
  const T* dout;
  int64_t cols;
  bool y_broadcast;
};

// dX[i], or dY[i] for a Y with X's rows (swap: a = y).
template <typename T>
struct CosSimElementGrad {
  CosSimSaved<T> s;
  bool wrt_y;
  T* d;
  __device__ void operator()(int64_t i) const {
    const int64_t r = i / s.cols, c = i % s.cols;
    const int64_t ry = s.y_broadcast ? 0 : r;
    const T xv = s.x[i], yv = s.y[ry * s.cols + c];
    d[i] = wrt_y ? CosSimGrad(yv, xv, s.out[r], s.yn[ry], s.xn[r], s.dout[r])
                 : CosSimGrad(xv, yv, s.out[r], s.xn[r], s.yn[ry], s.dout[r]);
  }
};

// A broadcast Y's gradient at column c: the sum over the rows r.
template <typename T>
struct CosSimBroadcastGrad {
  CosSimSaved<T> s;
  __device__ T operator()(int64_t c, int64_t r) const {
    return CosSimGrad(s.y[c], s.x[r * s.cols + c], s.out[r], s.yn[0], s.xn[r],
                      s.dout[r]);
  }
};

template <typename T>
void CosSimGradKernel(const ExecutionContext& ctx) {
  const CosSimDims d = ReadCosSimDims(ctx);
  const auto& dev = cuda::Dev(ctx);
  const CosSimSaved<T> s{ctx.Input("X").data<T>(),
                         ctx.Input("Y").data<T>(),
                         ctx.Input("Out").data<T>(),
                         ctx.Input("XNorm").data<T>(),
                         ctx.Input("YNorm").data<T>(),
                         ctx.Input(GradSlot("Out")).data<T>(),
                         d.cols,
                         d.y_broadcast};
  if (ctx.HasOutput(GradSlot("X"))) {
    T* dx = cuda::OutputLike<T>(ctx, GradSlot("X"), ctx.Input("X"));
    cuda::ForEach(dev, d.rows * d.cols, CosSimElementGrad<T>{s, false, dx});
  }
  if (!ctx.HasOutput(GradSlot("Y"))) return;
  T* dy = cuda::OutputLike<T>(ctx, GradSlot("Y"), ctx.Input("Y"));
  if (d.y_broadcast) {
    cuda::RowReduce<T>(dev, d.cols, d.rows, CosSimBroadcastGrad<T>{s},
                       cuda::SumOp(), T(0), dy);
  } else {
    cuda::ForEach(dev, d.rows * d.cols, CosSimElementGrad<T>{s, true, dy});
  }
}

}  // namespace

REGISTER_FLOAT_KERNELS(cos_sim, kCUDA, CosSimKernel);
REGISTER_FLOAT_KERNELS(cos_sim_grad, kCUDA, CosSimGradKernel);

}  // namespace ops
}  // namespace fluid
