// cast: Out = X converted to out_dtype, elementwise (float to int rounds
// toward zero, as static_cast does). Its gradient casts Out@GRAD back to
// in_dtype; gradients only flow between float dtypes.
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/dtype_visit.h"
#include "ops/half_cpu.h"
#include "ops/op_helpers.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace ops {
namespace {

void CastInferShape(InferShapeContext* ctx) {
  if (!ctx->HasOutput("Out")) return;  // an unneeded gradient
  const DataType in =
      DtypeAttr(ctx->Attr<int32_t>("in_dtype"), "cast", "in_dtype");
  FLUID_ENFORCE(ctx->GetInputDtype("X") == in, "cast: X '", ctx->InputName("X"),
                "' is ", ctx->GetInputDtype("X"), " but attr in_dtype says ",
                in);
  ctx->SetOutputShape("Out", ctx->GetInputShape("X"));
  ctx->ShareLoD("X", "Out");  // a batch of sequences stays one
  ctx->SetOutputDtype(
      "Out", DtypeAttr(ctx->Attr<int32_t>("out_dtype"), "cast", "out_dtype"));
}

// float32 -> bfloat16, FloatToBf16Bits's rounding (to nearest, ties to
// even; a NaN kept quiet) written without branches so that the compiler
// vectorises the loop.
void FloatsToBf16(const float* src, bfloat16* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t v;
    std::memcpy(&v, src + i, sizeof(v));
    const uint32_t rounded = (v + 0x7fffu + ((v >> 16) & 1u)) >> 16;
    const uint32_t quiet = (v >> 16) | 0x40u;
    dst[i].x = static_cast<uint16_t>((v & 0x7fffffffu) > 0x7f800000u ? quiet
                                                                     : rounded);
  }
}

// bfloat16 -> float32: the bits shifted into the high half.
void Bf16ToFloats(const bfloat16* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t v = static_cast<uint32_t>(src[i].x) << 16;
    std::memcpy(dst + i, &v, sizeof(v));
  }
}

// od[i] = xd[i] as Out for i in [b, e): the float32 <-> 16-bit pairs in
// bulk (the same values as static_cast), the rest one by one.
template <typename In, typename Out>
void CastRange(const In* xd, Out* od, int64_t b, int64_t e) {
  if constexpr (std::is_same_v<In, float> && std::is_same_v<Out, bfloat16>) {
    FloatsToBf16(xd + b, od + b, e - b);
  } else if constexpr (std::is_same_v<In, bfloat16> &&
                       std::is_same_v<Out, float>) {
    Bf16ToFloats(xd + b, od + b, e - b);
  } else if constexpr (std::is_same_v<In, float> &&
                       std::is_same_v<Out, float16>) {
    FromFloats(xd + b, od + b, e - b);  // F16C where the CPU has it
  } else if constexpr (std::is_same_v<In, float16> &&
                       std::is_same_v<Out, float>) {
    ToFloats(xd + b, od + b, e - b);
  } else {
    for (int64_t i = b; i < e; ++i) od[i] = static_cast<Out>(xd[i]);
  }
}

template <typename In>
void CastKernel(const ExecutionContext& ctx) {
  Tensor* out = ctx.Output("Out");
  if (out == nullptr) return;
  const Tensor& x = ctx.Input("X");
  const In* xd = x.data<In>();
  const int64_t n = x.numel();
  VisitDtype(DtypeAttr(ctx.Attr<int32_t>("out_dtype"), "cast", "out_dtype"),
             [&](auto o) {
               using Out = decltype(o);
               Out* od = out->mutable_data<Out>();
               ParallelFor(ctx.device(), n, 1.0, [&](int64_t b, int64_t e) {
                 CastRange(xd, od, b, e);
               });
             });
}

// X@GRAD = Out@GRAD cast back to X's dtype.
std::vector<proto::OpDesc> CastGradMaker(const proto::OpDesc& fwd) {
  proto::OpDesc g =
      MakeOp("cast", {{"X", {GradVarName(OpOutput(fwd, "Out").at(0))}}},
             {{"Out", {GradVarName(OpInput(fwd, "X").at(0))}}});
  SetOpAttr(&g, "in_dtype", GetOpAttr(fwd, "out_dtype"));
  SetOpAttr(&g, "out_dtype", GetOpAttr(fwd, "in_dtype"));
  SetOpAttr(&g, kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward));
  return {g};
}

}  // namespace

REGISTER_OP(cast)
    .Doc("Out = X converted to out_dtype.")
    .Input("X", "input, of in_dtype")
    .Output("Out", "X's values as out_dtype, same shape")
    .Attr<int32_t>(
        "in_dtype", static_cast<int32_t>(DataType::kFloat32),
        "X's dtype (0 float32, 1 float64, 2 int32, 3 int64, 4 float16, "
        "5 bfloat16)")
    .Attr<int32_t>("out_dtype", static_cast<int32_t>(DataType::kFloat32),
                   "Out's dtype, numbered as in_dtype")
    .SetInferShape(CastInferShape)
    .SetGradMaker(CastGradMaker)
    .CPUKernel<float>(CastKernel<float>)
    .CPUKernel<double>(CastKernel<double>)
    .CPUKernel<int32_t>(CastKernel<int32_t>)
    .CPUKernel<int64_t>(CastKernel<int64_t>)
    .CPUKernel<float16>(CastKernel<float16>)
    .CPUKernel<bfloat16>(CastKernel<bfloat16>);

}  // namespace ops
}  // namespace fluid
