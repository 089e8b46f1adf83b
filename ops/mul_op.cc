// mul: Out = flatten(X, x_num_col_dims) * flatten(Y, y_num_col_dims).
// The fully connected layer's product; X's leading dims stay leading.
#include <algorithm>

#include "ops/half_matrix.h"
#include "ops/op_helpers.h"
#include "src/framework/math/blas.h"
#include "src/framework/math/dnnl_gemm.h"

namespace fluid {
namespace ops {
namespace {

constexpr char kYGradIn[] = "YGradIn";

// X and Y as the product reads them, checked: both flattened to 2-D at their
// num_col_dims, X's columns matching Y's rows. The gradient reads them the
// same way, so it checks them the same way.
void CheckMulOperands(InferShapeContext* ctx, const Shape& x, const Shape& y,
                      int xn, int yn) {
  FLUID_ENFORCE(xn >= 1 && xn < x.rank(), ctx->op_type(), ": x_num_col_dims ",
                xn, " out of range for X '", ctx->InputName("X"), "' of shape ",
                x);
  FLUID_ENFORCE(yn >= 1 && yn < y.rank(), ctx->op_type(), ": y_num_col_dims ",
                yn, " out of range for Y '", ctx->InputName("Y"), "' of shape ",
                y);
  int64_t xk = x.Product(xn, x.rank());
  int64_t yk = y.Product(0, yn);
  FLUID_ENFORCE(xk < 0 || yk < 0 || xk == yk, ctx->op_type(), ": X '",
                ctx->InputName("X"), "' ", x, " flattened at ", xn, " has ", xk,
                " columns but Y '", ctx->InputName("Y"), "' ", y,
                " flattened at ", yn, " has ", yk, " rows");
}

void MulInferShape(InferShapeContext* ctx) {
  Shape x = ctx->GetInputShape("X");
  Shape y = ctx->GetInputShape("Y");
  int xn = ctx->Attr<int32_t>("x_num_col_dims");
  int yn = ctx->Attr<int32_t>("y_num_col_dims");
  CheckMulOperands(ctx, x, y, xn, yn);
  Shape out;
  for (int i = 0; i < xn; ++i) out.push_back(x[i]);
  for (int i = yn; i < y.rank(); ++i) out.push_back(y[i]);
  ctx->SetOutputShape("Out", out);
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
  // Row i of Out is row i of X: a sequence batch stays one (fc per token).
  if (xn == 1) ctx->ShareLoD("X", "Out");
}

void MulGradInferShape(InferShapeContext* ctx) {
  const Shape x = ctx->GetInputShape("X");
  const Shape y = ctx->GetInputShape("Y");
  const int xn = ctx->Attr<int32_t>("x_num_col_dims");
  const int yn = ctx->Attr<int32_t>("y_num_col_dims");
  CheckMulOperands(ctx, x, y, xn, yn);
  // The kernel reads Out@GRAD as [rows of X, columns of Y].
  const int64_t m = x.Product(0, xn);
  const int64_t n = y.Product(yn, y.rank());
  const Shape dout = ctx->GetInputShape(GradSlot("Out"));
  const int64_t got = dout.numel();
  int64_t want = 0;
  FLUID_ENFORCE(
      m < 0 || n < 0 || got < 0 || (CheckedMul(m, n, &want) && got == want),
      ctx->op_type(), ": Out@GRAD '", ctx->InputName(GradSlot("Out")), "' ",
      dout, " holds ", got, " values but the product of X '",
      ctx->InputName("X"), "' ", x, " and Y '", ctx->InputName("Y"), "' ", y,
      " has ", m, " x ", n);
  ctx->ShareShape("X", GradSlot("X"));
  ctx->ShareShape("Y", GradSlot("Y"));
  if (ctx->HasInput(kYGradIn)) {
    const Shape acc = ctx->GetInputShape(kYGradIn);
    FLUID_ENFORCE(acc == y, ctx->op_type(), ": ", kYGradIn, " '",
                  ctx->InputName(kYGradIn), "' ", acc,
                  " must have the shape of Y '", ctx->InputName("Y"), "' ", y);
    FLUID_ENFORCE(
        ctx->GetInputDtype(kYGradIn) == ctx->GetInputDtype("Y"), ctx->op_type(),
        ": ", kYGradIn, " '", ctx->InputName(kYGradIn), "' is ",
        DataTypeName(ctx->GetInputDtype(kYGradIn)), ", Y '",
        ctx->InputName("Y"), "' ", DataTypeName(ctx->GetInputDtype("Y")));
  }
}

// C [m, n] = op(A) op(B) (+ C when `accumulate`) for 16-bit T: on oneDNN,
// or else in float32 (the operands converted, math::Gemm<float> as the
// float32 kernel runs it, C rounded once). An accumulation always takes
// the float32 path, so that C is rounded once.
template <typename T>
void HalfGemm(const CPUDeviceContext& dev, bool ta, bool tb, int64_t m,
              int64_t n, int64_t k, const T* a, const T* b, bool accumulate,
              T* c) {
  math::GemmBatch g;
  g.trans_a = ta;
  g.trans_b = tb;
  g.m = m;
  g.n = n;
  g.k = k;
  if (!accumulate && math::DnnlGemm<T>(dev, g, a, b, c)) return;
  const float* af = FloatCopy(dev, kHalfIn0, a, m * k);
  const float* bf = FloatCopy(dev, kHalfIn1, b, k * n);
  float* cf = accumulate ? FloatCopy(dev, kHalfOut0, c, m * n)
                         : HalfScratch(kHalfOut0, m * n);
  math::Gemm<float>(dev, ta, tb, m, n, k, 1.0f, af, bf,
                    accumulate ? 1.0f : 0.0f, cf);
  RoundInto(dev, cf, m * n, c);
}

// C [m, n] = op(A) op(B) (+ C when `accumulate`): math::Gemm for float32
// and float64, HalfGemm for the 16-bit types.
template <typename T>
void Product(const CPUDeviceContext& dev, bool ta, bool tb, int64_t m,
             int64_t n, int64_t k, const T* a, const T* b, T* c,
             bool accumulate = false) {
  if constexpr (IsHalfType<T>::value) {
    HalfGemm<T>(dev, ta, tb, m, n, k, a, b, accumulate, c);
  } else {
    math::Gemm<T>(dev, ta, tb, m, n, k, T(1), a, b, T(accumulate ? 1 : 0), c);
  }
}

template <typename T>
void MulKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  Tensor* out = ctx.Output("Out");
  int xn = ctx.Attr<int32_t>("x_num_col_dims");
  int yn = ctx.Attr<int32_t>("y_num_col_dims");
  int64_t m = x.shape().Product(0, xn);
  int64_t k = x.shape().Product(xn, x.shape().rank());
  int64_t n = y.shape().Product(yn, y.shape().rank());
  Product<T>(ctx.device(), false, false, m, n, k, x.data<T>(), y.data<T>(),
             out->mutable_data<T>());
}

// With YGradIn, dY starts from it (in place when it is dY's own var: the
// pipeline's accumulation over micro-batches); nullptr without.
template <typename T>
const T* AccumulatedYGrad(const ExecutionContext& ctx, Tensor* dy) {
  if (!ctx.HasInput(kYGradIn)) return nullptr;
  const Tensor& acc = ctx.Input(kYGradIn);
  T* d = dy->mutable_data<T>(acc.shape());
  if (acc.data<T>() != d)
    std::copy(acc.data<T>(), acc.data<T>() + acc.numel(), d);
  return d;
}

template <typename T>
void MulGradKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  int xn = ctx.Attr<int32_t>("x_num_col_dims");
  int yn = ctx.Attr<int32_t>("y_num_col_dims");
  int64_t m = x.shape().Product(0, xn);
  int64_t k = x.shape().Product(xn, x.shape().rank());
  int64_t n = y.shape().Product(yn, y.shape().rank());
  if (Tensor* dx = ctx.Output(GradSlot("X"))) {
    // dX[m,k] = dOut[m,n] * Y[k,n]^T
    Product<T>(ctx.device(), false, true, m, k, n, dout.data<T>(), y.data<T>(),
               dx->mutable_data<T>());
  }
  if (Tensor* dy = ctx.Output(GradSlot("Y"))) {
    // dY[k,n] = X[m,k]^T * dOut[m,n] (+ YGradIn)
    const T* acc = AccumulatedYGrad<T>(ctx, dy);
    Product<T>(ctx.device(), true, false, k, n, m, x.data<T>(), dout.data<T>(),
               dy->mutable_data<T>(), acc != nullptr);
  }
}

}  // namespace

REGISTER_OP(mul)
    .Doc("Matrix product of X and Y, each flattened to 2-D.")
    .Input("X", "left operand")
    .Input("Y", "right operand")
    .Output("Out", "the product, X's leading dims then Y's trailing dims")
    .Attr<int32_t>("x_num_col_dims", 1, "leading dims of X that form rows")
    .InRange(1, Shape::kMaxRank - 1)
    .Attr<int32_t>("y_num_col_dims", 1, "leading dims of Y that form rows")
    .InRange(1, Shape::kMaxRank - 1)
    .SetInferShape(MulInferShape)
    .SetGrad(GradSpec("mul_grad")
                 .Inputs({"X", "Y"})
                 .OutGrads({"Out"})
                 .InGrads({"X", "Y"}))
    .CPUKernel<float>(MulKernel<float>)
    .CPUKernel<double>(MulKernel<double>)
    .CPUKernel<bfloat16>(MulKernel<bfloat16>)
    .CPUKernel<float16>(MulKernel<float16>);

REGISTER_GRAD_OP(mul_grad)
    .OptionalInput(kYGradIn,
                   "the gradient of Y so far: given, Y@GRAD is it plus this "
                   "product's, summed inside the product (the pipeline's "
                   "accumulation over micro-batches; Y's shape and dtype)")
    .SetInferShape(MulGradInferShape)
    .CPUKernel<float>(MulGradKernel<float>)
    .CPUKernel<double>(MulGradKernel<double>)
    .CPUKernel<bfloat16>(MulGradKernel<bfloat16>)
    .CPUKernel<float16>(MulGradKernel<float16>);

}  // namespace ops
}  // namespace fluid
