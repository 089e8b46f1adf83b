// transpose: Out = X with its dims permuted, Out's dim d being X's dim
// axis[d]. Its gradient is the transpose of Out@GRAD by the inverse
// permutation. Integer tensors (class ids moved with their scores, as
// softmax_with_cross_entropy's axis does) are transposed too; they have no
// gradient.
#include "ops/transpose_op.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ops/op_helpers.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace ops {
namespace {

// Checks that `axis` permutes the `rank` dims of `var`.
void CheckPermutation(const std::string& op, const std::string& var,
                      const Shape& shape, const std::vector<int32_t>& axis) {
  const int rank = shape.rank();
  bool ok = static_cast<int>(axis.size()) == rank;
  bool seen[Shape::kMaxRank] = {false};
  for (size_t d = 0; ok && d < axis.size(); ++d) {
    ok = axis[d] >= 0 && axis[d] < rank && !seen[axis[d]];
    if (ok) seen[axis[d]] = true;
  }
  FLUID_ENFORCE(ok, op, ": axis ", Shape(axis.begin(), axis.end()),
                " is not a permutation of the ", rank, " dims of '", var, "' ",
                shape);
}

void TransposeInferShape(InferShapeContext* ctx) {
  if (!ctx->HasOutput("Out")) return;  // an unneeded gradient
  const Shape x = ctx->GetInputShape("X");
  const auto& axis = ctx->Attr<std::vector<int32_t>>("axis");
  CheckPermutation("transpose", ctx->InputName("X"), x, axis);
  Shape out;
  for (int32_t a : axis) out.push_back(x[a]);
  ctx->SetOutputShape("Out", out);
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
}

// Out's elements [b, e) from X: the index of element b is divided out once,
// then Out is walked in order, a run of its last dimension at a time (X read
// at that dimension's stride), carrying into the dimensions above.
template <typename T>
void TransposeRange(const TransposeIndex& index, const T* xd, T* od, int64_t b,
                    int64_t e) {
  const int r = index.rank;
  if (b >= e) return;  // also an empty X: no dimension to divide by
  if (r == 0) {
    for (int64_t i = b; i < e; ++i) od[i] = xd[0];
    return;
  }
  int64_t at[Shape::kMaxRank];  // Out's multi-index of element i
  int64_t rest = b;
  for (int d = r - 1; d >= 0; --d) {
    at[d] = rest % index.out_dims[d];
    rest /= index.out_dims[d];
  }
  int64_t src = index.Source(b);
  const int64_t inner = index.out_dims[r - 1];
  const int64_t stride = index.x_strides[r - 1];
  for (int64_t i = b; i < e;) {
    const int64_t len = std::min(inner - at[r - 1], e - i);
    const T* s = xd + src;
    if (stride == 1) {  // the last axis stays last: runs of it are copies
      std::memcpy(od + i, s, static_cast<size_t>(len) * sizeof(T));
    } else {
      for (int64_t k = 0; k < len; ++k) od[i + k] = s[k * stride];
    }
    i += len;
    src += len * stride;
    at[r - 1] += len;
    for (int d = r - 1; d > 0 && at[d] == index.out_dims[d]; --d) {
      src += index.x_strides[d - 1] - at[d] * index.x_strides[d];
      at[d] = 0;
      ++at[d - 1];
    }
  }
}

template <typename T>
void TransposeKernel(const ExecutionContext& ctx) {
  Tensor* out = ctx.Output("Out");
  if (out == nullptr) return;
  const Tensor& x = ctx.Input("X");
  const TransposeIndex index = MakeTransposeIndex(ctx, x);
  const T* xd = x.data<T>();
  T* od = out->mutable_data<T>();
  ParallelFor(
      ctx.device(), out->numel(), 4.0 * index.rank,
      [&](int64_t b, int64_t e) { TransposeRange(index, xd, od, b, e); });
}

// X@GRAD = Out@GRAD transposed back: inverse[axis[d]] = d.
std::vector<proto::OpDesc> TransposeGradMaker(const proto::OpDesc& fwd) {
  const auto axis = GetOpAttrAs<std::vector<int32_t>>(fwd, "axis");
  std::vector<int32_t> inverse(axis.size(), 0);
  for (size_t d = 0; d < axis.size(); ++d) {
    FLUID_ENFORCE(axis[d] >= 0 && axis[d] < static_cast<int>(axis.size()),
                  "transpose: axis ", Shape(axis.begin(), axis.end()),
                  " of Out '", OpOutput(fwd, "Out").at(0),
                  "' is not a permutation");
    inverse[axis[d]] = static_cast<int32_t>(d);
  }
  return {MakeOp("transpose", {{"X", {GradVarName(OpOutput(fwd, "Out")[0])}}},
                 {{"Out", {GradVarName(OpInput(fwd, "X").at(0))}}},
                 {{"axis", inverse},
                  {kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward)}})};
}

}  // namespace

TransposeIndex MakeTransposeIndex(const ExecutionContext& ctx,
                                  const Tensor& x) {
  const auto& axis = ctx.Attr<std::vector<int32_t>>("axis");
  const Shape& s = x.shape();
  CheckPermutation("transpose", ctx.InputName("X"), s, axis);
  int64_t strides[Shape::kMaxRank] = {0};
  int64_t stride = 1;
  for (int d = s.rank() - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= s[d];
  }
  TransposeIndex index;
  index.rank = s.rank();
  for (int d = 0; d < s.rank(); ++d) {
    index.out_dims[d] = s[axis[d]];
    index.x_strides[d] = strides[axis[d]];
  }
  return index;
}

REGISTER_OP(transpose)
    .Doc("Out = X with its dims permuted: Out's dim d is X's dim axis[d].")
    .Input("X", "input")
    .Output("Out", "X transposed")
    .Attr<std::vector<int32_t>>("axis", {}, "a permutation of X's dims")
    .SetInferShape(TransposeInferShape)
    .SetGradMaker(TransposeGradMaker)
    .CPUKernel<float>(TransposeKernel<float>)
    .CPUKernel<double>(TransposeKernel<double>)
    .CPUKernel<bfloat16>(TransposeKernel<bfloat16>)
    .CPUKernel<float16>(TransposeKernel<float16>)
    .CPUKernel<int32_t>(TransposeKernel<int32_t>)
    .CPUKernel<int64_t>(TransposeKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
