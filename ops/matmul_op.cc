// matmul: Out = alpha * op(X) * op(Y), op() an optional transpose of the last
// two dims. Rank-2 operands are plain matrices; an operand of rank 3 or more
// is a batch of matrices, its leading dims the batch dims ([B, H, L, D]
// attention heads are a batch of B * H). Two batched operands must have the
// same batch dims. When one operand is batched and the other rank 2, the
// rank-2 one is shared by every matrix of the batch (a projection applied to
// each sequence), and its gradient sums over the batch.
#include <algorithm>

#include "ops/half_matrix.h"
#include "ops/matmul_dims.h"
#include "ops/op_helpers.h"
#include "src/framework/math/blas.h"
#include "src/framework/math/dnnl_gemm.h"

namespace fluid {
namespace ops {

MatMulArgs ReadMatMulArgs(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  const bool tx = ctx.Attr<bool>("transpose_X");
  const bool ty = ctx.Attr<bool>("transpose_Y");
  const float alpha = ctx.Attr<float>("alpha");
  const MatMulDims d = GetMatMulDims(ctx, x, y);
  const int64_t x_stride = d.x_batched ? d.m * d.k : 0;
  const int64_t y_stride = d.y_batched ? d.k * d.n : 0;
  return {x, y, tx, ty, alpha, d, x_stride, y_stride, d.m * d.n};
}

// With G = dOut and the stored (untransposed) X and Y:
//   Out = X Y      : dX = G Y^T     dY = X^T G
//   Out = X^T Y    : dX = Y G^T     dY = X G
//   Out = X Y^T    : dX = G Y       dY = G^T X
//   Out = X^T Y^T  : dX = Y^T G^T   dY = G^T X^T
// each times alpha. A shared (rank-2) operand's gradient sums over the
// batch.
MatMulGradArgs ReadMatMulGradArgs(const ExecutionContext& ctx) {
  const MatMulArgs f = ReadMatMulArgs(ctx);
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  const MatMulDims& d = f.dims;
  const int64_t m = d.m, n = d.n, k = d.k;
  const int64_t out_numel = (d.x_batched || d.y_batched ? d.batch : 1) * m * n;
  FLUID_ENFORCE(dout.numel() == out_numel, "matmul_grad: Out@GRAD '",
                ctx.InputName(GradSlot("Out")), "' ", dout.shape(),
                " does not match the product of X '", ctx.InputName("X"), "' ",
                f.x.shape(), " and Y '", ctx.InputName("Y"), "' ", f.y.shape());
  const Tensor *x = &f.x, *y = &f.y, *g = &dout;
  const int64_t xs = f.x_stride, ys = f.y_stride, gs = f.out_stride;
  MatMulGradProduct dx, dy;
  if (!f.trans_x && !f.trans_y) {
    dx = {g, y, false, true, m, k, n, gs, ys, xs};
    dy = {x, g, true, false, k, n, m, xs, gs, ys};
  } else if (f.trans_x && !f.trans_y) {
    dx = {y, g, false, true, k, m, n, ys, gs, xs};
    dy = {x, g, false, false, k, n, m, xs, gs, ys};
  } else if (!f.trans_x && f.trans_y) {
    dx = {g, y, false, false, m, k, n, gs, ys, xs};
    dy = {g, x, true, false, n, k, m, gs, xs, ys};
  } else {
    dx = {y, g, true, true, k, m, n, ys, gs, xs};
    dy = {g, x, true, true, n, k, m, gs, xs, ys};
  }
  return {f, dout, dx, dy};
}

namespace {

// A batch of products is spread over the pool item by item, each product
// serial, when each is below this many multiply-adds, or when there are at
// least kItemsPerThread items per thread: splitting one product of the
// attention's size (128 x 128 x 32) over threads costs more in
// synchronisation than it saves, and whole items balance well once there
// are a few per thread.
constexpr int64_t kSmallGemmFlops = 1 << 18;
constexpr int64_t kItemsPerThread = 4;

void MatMulInferShape(InferShapeContext* ctx) {
  MatMulDims d = GetMatMulDims(
      ctx->op_type(), ctx->InputName("X"), ctx->GetInputShape("X"),
      ctx->Attr<bool>("transpose_X"), ctx->InputName("Y"),
      ctx->GetInputShape("Y"), ctx->Attr<bool>("transpose_Y"));
  FLUID_ENFORCE(ctx->GetInputDtype("X") == ctx->GetInputDtype("Y"),
                "matmul: X '", ctx->InputName("X"), "' is ",
                ctx->GetInputDtype("X"), " but Y '", ctx->InputName("Y"),
                "' is ", ctx->GetInputDtype("Y"));
  Shape out = d.batch_dims;
  out.push_back(d.m);
  out.push_back(d.n);
  ctx->SetOutputShape("Out", out);
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
}

// For each b in [0, batch): C_b = alpha * op(A_b) * op(B_b) (+ C when
// accumulating). A stride of 0 shares one matrix across the batch; a C
// stride of 0 sums every product into one C.
template <typename T>
void BatchedGemm(const CPUDeviceContext& dev, int64_t batch, bool ta, bool tb,
                 int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                 int64_t a_stride, const T* b, int64_t b_stride, T* c,
                 int64_t c_stride) {
  const bool by_item = m * n * k < kSmallGemmFlops ||
                       batch >= kItemsPerThread * dev.num_threads();
  if (c_stride == 0 || batch == 1 || dev.num_threads() == 1 || !by_item) {
    for (int64_t i = 0; i < batch; ++i) {
      T beta = (c_stride == 0 && i > 0) ? T(1) : T(0);
      math::Gemm<T>(dev, ta, tb, m, n, k, alpha, a + i * a_stride,
                    b + i * b_stride, beta, c + i * c_stride);
    }
    if (batch == 0 && c_stride == 0) std::fill(c, c + m * n, T(0));
    return;
  }
  // Many small independent products: one per task, each serial.
  static const CPUDeviceContext kSerial(1);
  ParallelFor(
      dev, batch, static_cast<double>(m * n * k), [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i)
          math::Gemm<T>(kSerial, ta, tb, m, n, k, alpha, a + i * a_stride,
                        b + i * b_stride, T(0), c + i * c_stride);
      });
}

template <typename T>
void MatMulKernel(const ExecutionContext& ctx) {
  const MatMulArgs a = ReadMatMulArgs(ctx);
  const MatMulDims& d = a.dims;
  BatchedGemm<T>(ctx.device(), d.batch, a.trans_x, a.trans_y, d.m, d.n, d.k,
                 static_cast<T>(a.alpha), a.x.data<T>(), a.x_stride,
                 a.y.data<T>(), a.y_stride,
                 ctx.Output("Out")->mutable_data<T>(), a.out_stride);
}

// BatchedGemm for 16-bit T: on oneDNN (a C stride of 0 sums the products
// in float32 and rounds once), or else in float32: the operands converted,
// BatchedGemm<float> as the float32 kernel runs it, C rounded once. An
// operand's stride is its matrix size or 0 (shared), so it spans
// (stride ? batch : 1) matrices.
template <typename T>
void HalfBatchedGemm(const CPUDeviceContext& dev, int64_t batch, bool ta,
                     bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                     const T* a, int64_t a_stride, const T* b, int64_t b_stride,
                     T* c, int64_t c_stride) {
  math::GemmBatch g;
  g.trans_a = ta;
  g.trans_b = tb;
  g.batch = batch;
  g.m = m;
  g.n = n;
  g.k = k;
  g.alpha = alpha;
  g.a_stride = a_stride;
  g.b_stride = b_stride;
  g.sum = c_stride == 0 && batch > 1;
  if (math::DnnlGemm<T>(dev, g, a, b, c)) return;
  const int64_t a_size = a_stride == 0 ? m * k : batch * a_stride;
  const int64_t b_size = b_stride == 0 ? k * n : batch * b_stride;
  const int64_t c_size = c_stride == 0 ? m * n : batch * c_stride;
  const float* af = FloatCopy(dev, kHalfIn0, a, a_size);
  const float* bf = FloatCopy(dev, kHalfIn1, b, b_size);
  float* cf = HalfScratch(kHalfOut0, c_size);
  BatchedGemm<float>(dev, batch, ta, tb, m, n, k, alpha, af, a_stride, bf,
                     b_stride, cf, c_stride);
  RoundInto(dev, cf, c_size, c);
}

template <typename T>
void MatMulHalfKernel(const ExecutionContext& ctx) {
  const MatMulArgs a = ReadMatMulArgs(ctx);
  const MatMulDims& d = a.dims;
  HalfBatchedGemm<T>(ctx.device(), d.batch, a.trans_x, a.trans_y, d.m, d.n, d.k,
                     a.alpha, a.x.data<T>(), a.x_stride, a.y.data<T>(),
                     a.y_stride, ctx.Output("Out")->mutable_data<T>(),
                     a.out_stride);
}

void MatMulGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("X", GradSlot("X"));
  ctx->ShareShape("Y", GradSlot("Y"));
}

// The products are listed in ReadMatMulGradArgs.
template <typename T>
void MatMulGradKernel(const ExecutionContext& ctx) {
  const MatMulGradArgs a = ReadMatMulGradArgs(ctx);
  auto product = [&](const MatMulGradProduct& p, T* c) {
    BatchedGemm<T>(ctx.device(), a.fwd.dims.batch, p.trans_a, p.trans_b, p.m,
                   p.n, p.k, static_cast<T>(a.fwd.alpha), p.a->data<T>(),
                   p.a_stride, p.b->data<T>(), p.b_stride, c, p.c_stride);
  };
  if (Tensor* dx = ctx.Output(GradSlot("X"))) {
    product(a.dx, dx->mutable_data<T>());
  }
  if (Tensor* dy = ctx.Output(GradSlot("Y"))) {
    product(a.dy, dy->mutable_data<T>());
  }
}

// The products of MatMulGradKernel, for 16-bit T.
template <typename T>
void MatMulGradHalfKernel(const ExecutionContext& ctx) {
  const MatMulGradArgs a = ReadMatMulGradArgs(ctx);
  auto product = [&](const MatMulGradProduct& p, T* c) {
    HalfBatchedGemm<T>(ctx.device(), a.fwd.dims.batch, p.trans_a, p.trans_b,
                       p.m, p.n, p.k, a.fwd.alpha, p.a->data<T>(), p.a_stride,
                       p.b->data<T>(), p.b_stride, c, p.c_stride);
  };
  if (Tensor* dx = ctx.Output(GradSlot("X"))) {
    product(a.dx, dx->mutable_data<T>());
  }
  if (Tensor* dy = ctx.Output(GradSlot("Y"))) {
    product(a.dy, dy->mutable_data<T>());
  }
}

}  // namespace

REGISTER_OP(matmul)
    .Doc(
        "Out = alpha * op(X) * op(Y) over the last two dims; the dims "
        "before them are batch dims, a rank-2 operand is shared by the "
        "batch.")
    .Input("X", "[M, K] or [B.., M, K] ([.., K, M] with transpose_X)")
    .Input("Y", "[K, N] or [B.., K, N] ([.., N, K] with transpose_Y)")
    .Output("Out", "[B.., M, N], B.. the batch dims of the batched operands")
    .Attr<bool>("transpose_X", false, "transpose the last two dims of X")
    .Attr<bool>("transpose_Y", false, "transpose the last two dims of Y")
    .Attr<float>("alpha", 1.0f, "scale applied to the product")
    .SetInferShape(MatMulInferShape)
    .SetGrad(GradSpec("matmul_grad")
                 .Inputs({"X", "Y"})
                 .OutGrads({"Out"})
                 .InGrads({"X", "Y"}))
    .CPUKernel<float>(MatMulKernel<float>)
    .CPUKernel<double>(MatMulKernel<double>)
    .CPUKernel<bfloat16>(MatMulHalfKernel<bfloat16>)
    .CPUKernel<float16>(MatMulHalfKernel<float16>);

REGISTER_GRAD_OP(matmul_grad)
    .Doc("Gradients of matmul with respect to X and Y.")
    .SetInferShape(MatMulGradInferShape)
    .CPUKernel<float>(MatMulGradKernel<float>)
    .CPUKernel<double>(MatMulGradKernel<double>)
    .CPUKernel<bfloat16>(MatMulGradHalfKernel<bfloat16>)
    .CPUKernel<float16>(MatMulGradHalfKernel<float16>);

}  // namespace ops
}  // namespace fluid
