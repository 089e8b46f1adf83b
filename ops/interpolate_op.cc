// bilinear_interp and nearest_interp: Fluid 1.x's image resize ops. X
// [N, C, H, W] is resized to Out [N, C, out_h, out_w], each plane on its
// own, by the sampling rule of interpolate_op.h. The size is, first found
// first: the int32 tensor OutSize [2] (known only at run time; the kernel
// sizes Out), scale > 0 (out = int(in * scale)), the attrs out_h, out_w.
//
// The taps of each output row and column are computed once per call into
// per-thread scratch (no allocation on a repeated shape); the planes run in
// parallel on the pool. The gradient adds each output gradient into the
// input pixels it was read from, plane by plane (each plane's dX written
// by one thread, in a fixed order: the same bits at any thread count).
#include "ops/interpolate_op.h"

#include <algorithm>
#include <string>

#include "ops/conv_workspace.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

// The output extent along one axis from scale or the attr (`what`:
// "height" or "width"); -1 where the input extent is unknown under scale.
int64_t AttrExtent(const InferShapeContext& ctx, const std::string& op,
                   int64_t in, const char* attr, const char* what) {
  const float scale = ctx.Attr<float>("scale");
  if (scale > 0) {
    if (in < 0) return -1;
    const int64_t out = static_cast<int64_t>(static_cast<float>(in) * scale);
    FLUID_ENFORCE(out > 0, op, ": X '", ctx.InputName("X"), "' of ", what, " ",
                  in, " times scale ", scale, " leaves an output ", what,
                  " of 0; use a larger scale or set out_h and out_w");
    return out;
  }
  const int32_t v = ctx.Attr<int32_t>(attr);
  if (ctx.HasInput("OutSize") && v <= 0) return -1;
  FLUID_ENFORCE(v > 0, op, ": attr '", attr, "' is ", v,
                " and scale is not set (", scale,
                "); give out_h and out_w > 0, a scale > 0 or OutSize");
  return v;
}

void CheckInputs(const InferShapeContext& ctx, const std::string& op) {
  const Shape x = ctx.GetInputShape("X");
  FLUID_ENFORCE(x.rank() == 4, op, ": X '", ctx.InputName("X"),
                "' must be 4-D [N, C, H, W], got ", x);
  const DataType dt = ctx.GetInputDtype("X");
  FLUID_ENFORCE(dt == DataType::kFloat32 || dt == DataType::kFloat64, op,
                ": X '", ctx.InputName("X"), "' is ", DataTypeName(dt),
                "; float32 or float64 expected");
  const std::string& layout = ctx.Attr<std::string>("data_layout");
  FLUID_ENFORCE_CODE(layout != "NHWC", ErrorCode::kUnimplemented, op,
                     ": data_layout NHWC is not supported (the op computes "
                     "on NCHW); transpose X with perm [0, 3, 1, 2]");
  FLUID_ENFORCE(layout == "NCHW", op,
                ": attr 'data_layout' must be \"NCHW\", got \"", layout, "\"");
  const int32_t mode = ctx.Attr<int32_t>("align_mode");
  FLUID_ENFORCE(mode == 0 || mode == 1, op, ": attr 'align_mode' is ", mode,
                "; 0 (half-pixel centres) or 1 (corners of pixels)");
  if (!ctx.HasInput("OutSize")) return;
  const Shape s = ctx.GetInputShape("OutSize");
  FLUID_ENFORCE(ctx.GetInputDtype("OutSize") == DataType::kInt32 &&
                    s.rank() == 1 && (s[0] < 0 || s[0] == 2),
                op, ": OutSize '", ctx.InputName("OutSize"),
                "' must be an int32 tensor [2] (out_h, out_w), got ",
                DataTypeName(ctx.GetInputDtype("OutSize")), " ", s);
}

void InterpInferShape(InferShapeContext* ctx) {
  const std::string& op = ctx->Attr<std::string>("interp_method") + "_interp";
  CheckInputs(*ctx, op);
  const Shape x = ctx->GetInputShape("X");
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
  // With OutSize the kernel sizes Out once it reads the tensor.
  if (ctx->HasInput("OutSize") && ctx->IsRuntime()) return;
  ctx->SetOutputShape(
      "Out", Shape{x[0], x[1], AttrExtent(*ctx, op, x[2], "out_h", "height"),
                   AttrExtent(*ctx, op, x[3], "out_w", "width")});
}

void InterpGradInferShape(InferShapeContext* ctx) {
  const std::string& op =
      ctx->Attr<std::string>("interp_method") + "_interp_grad";
  const Shape x = ctx->GetInputShape("X");
  const Shape dy = ctx->GetInputShape(GradSlot("Out"));
  FLUID_ENFORCE(x.rank() == 4 && dy.rank() == 4 &&
                    ShapesCompatible(Shape{x[0], x[1]}, Shape{dy[0], dy[1]}),
                op, ": Out@GRAD '", ctx->InputName(GradSlot("Out")), "' ", dy,
                " does not resize X '", ctx->InputName("X"), "' ", x);
  ctx->ShareShape("X", GradSlot("X"));
}

// The resize of the kernel's X into an Out of `out_h` x `out_w`.
InterpShape MakeShape(const ExecutionContext& ctx, const Shape& x,
                      int64_t out_h, int64_t out_w) {
  InterpShape s;
  s.planes = x[0] * x[1];
  s.in_h = x[2];
  s.in_w = x[3];
  s.out_h = out_h;
  s.out_w = out_w;
  s.align_corners = ctx.Attr<bool>("align_corners");
  s.half_pixel = !s.align_corners && ctx.Attr<int32_t>("align_mode") == 0;
  return s;
}

// Out's [out_h, out_w] from OutSize (read on the host), else as at
// build time; checked positive.
void OutputExtents(const ExecutionContext& ctx, const std::string& op,
                   const int32_t* out_size, int64_t* h, int64_t* w) {
  const Shape& x = ctx.Input("X").shape();
  const float scale = ctx.Attr<float>("scale");
  if (out_size != nullptr) {
    *h = out_size[0];
    *w = out_size[1];
  } else if (scale > 0) {
    *h = static_cast<int64_t>(static_cast<float>(x[2]) * scale);
    *w = static_cast<int64_t>(static_cast<float>(x[3]) * scale);
  } else {
    *h = ctx.Attr<int32_t>("out_h");
    *w = ctx.Attr<int32_t>("out_w");
  }
  FLUID_ENFORCE(*h > 0 && *w > 0, op, ": the output size [", *h, ", ", *w,
                "] of X '", ctx.InputName("X"), "' ", x,
                out_size != nullptr
                    ? " read from OutSize '" + ctx.InputName("OutSize") + "'"
                    : std::string(),
                " must be positive");
}

}  // namespace

// Sizes Out for the kernel of either place; `out_size` is OutSize's two
// values on the host, or null without OutSize.
InterpShape PrepareInterpOutput(const ExecutionContext& ctx,
                                const int32_t* out_size) {
  const std::string op = ctx.Attr<std::string>("interp_method") + "_interp";
  int64_t h = 0, w = 0;
  OutputExtents(ctx, op, out_size, &h, &w);
  const Shape& x = ctx.Input("X").shape();
  ctx.Output("Out")->Resize(Shape{x[0], x[1], h, w});
  return MakeShape(ctx, x, h, w);
}

// The resize behind a grad kernel: X's shape and Out@GRAD's plane.
InterpShape GradInterpShape(const ExecutionContext& ctx) {
  const Shape& dy = ctx.Input(GradSlot("Out")).shape();
  return MakeShape(ctx, ctx.Input("X").shape(), dy[2], dy[3]);
}

namespace {

// The bilinear taps of every output row, then of every output column, in
// the calling thread's scratch.
template <typename T>
const LinearTap<T>* RowAndColumnTaps(const InterpShape& s) {
  auto* taps = ThreadScratch<LinearTap<T>>(kScratchTmp, s.out_h + s.out_w);
  const T rh = InterpRatio<T>(s.in_h, s.out_h, s.align_corners);
  const T rw = InterpRatio<T>(s.in_w, s.out_w, s.align_corners);
  for (int64_t k = 0; k < s.out_h; ++k)
    taps[k] = BilinearTap<T>(k, s.in_h, rh, s.half_pixel);
  for (int64_t l = 0; l < s.out_w; ++l)
    taps[s.out_h + l] = BilinearTap<T>(l, s.in_w, rw, s.half_pixel);
  return taps;
}

// The nearest input row of every output row, then column.
const int64_t* NearestTaps(const InterpShape& s) {
  int64_t* taps = ThreadScratch<int64_t>(kScratchTmp, s.out_h + s.out_w);
  const float rh = InterpRatio<float>(s.in_h, s.out_h, s.align_corners);
  const float rw = InterpRatio<float>(s.in_w, s.out_w, s.align_corners);
  for (int64_t k = 0; k < s.out_h; ++k)
    taps[k] = NearestIndex(k, s.in_h, rh, s.align_corners);
  for (int64_t l = 0; l < s.out_w; ++l)
    taps[s.out_h + l] = NearestIndex(l, s.in_w, rw, s.align_corners);
  return taps;
}

const int32_t* HostOutSize(const ExecutionContext& ctx) {
  if (!ctx.HasInput("OutSize")) return nullptr;
  const Tensor& t = ctx.Input("OutSize");
  FLUID_ENFORCE(t.numel() == 2, ctx.op().type(), ": OutSize '",
                ctx.InputName("OutSize"), "' holds ", t.numel(),
                " values; 2 expected (out_h, out_w)");
  return t.data<int32_t>();
}

// fn(plane) for every plane on the pool; `cost` per plane.
template <typename Fn>
void ForPlanes(const ExecutionContext& ctx, const InterpShape& s, double cost,
               Fn fn) {
  ParallelFor(ctx.device(), s.planes, cost, [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) fn(q);
  });
}

template <typename T>
void BilinearKernel(const ExecutionContext& ctx) {
  const InterpShape s = PrepareInterpOutput(ctx, HostOutSize(ctx));
  const T* x = ctx.Input("X").data<T>();
  T* y = ctx.Output("Out")->mutable_data<T>();
  const LinearTap<T>* rows = RowAndColumnTaps<T>(s);
  const LinearTap<T>* cols = rows + s.out_h;
  ForPlanes(ctx, s, 8.0 * s.out_h * s.out_w, [&](int64_t q) {
    const T* xq = x + q * s.in_h * s.in_w;
    T* yq = y + q * s.out_h * s.out_w;
    for (int64_t k = 0; k < s.out_h; ++k) {
      const T* lo = xq + rows[k].lo * s.in_w;
      const T* hi = xq + rows[k].hi * s.in_w;
      const T ly = rows[k].lambda;
      for (int64_t l = 0; l < s.out_w; ++l) {
        const LinearTap<T>& c = cols[l];
        const T top = lo[c.lo] + c.lambda * (lo[c.hi] - lo[c.lo]);
        const T bottom = hi[c.lo] + c.lambda * (hi[c.hi] - hi[c.lo]);
        yq[k * s.out_w + l] = top + ly * (bottom - top);
      }
    }
  });
}

template <typename T>
void BilinearGradKernel(const ExecutionContext& ctx) {
  Tensor* dx_t = ctx.Output(GradSlot("X"));
  if (dx_t == nullptr) return;
  const InterpShape s = GradInterpShape(ctx);
  const T* dy = ctx.Input(GradSlot("Out")).data<T>();
  T* dx = dx_t->mutable_data<T>();
  const LinearTap<T>* rows = RowAndColumnTaps<T>(s);
  const LinearTap<T>* cols = rows + s.out_h;
  ForPlanes(ctx, s, 8.0 * s.out_h * s.out_w, [&](int64_t q) {
    T* dxq = dx + q * s.in_h * s.in_w;
    const T* dyq = dy + q * s.out_h * s.out_w;
    std::fill_n(dxq, s.in_h * s.in_w, T(0));
    for (int64_t k = 0; k < s.out_h; ++k) {
      T* lo = dxq + rows[k].lo * s.in_w;
      T* hi = dxq + rows[k].hi * s.in_w;
      const T ly = rows[k].lambda;
      for (int64_t l = 0; l < s.out_w; ++l) {
        const LinearTap<T>& c = cols[l];
        const T g = dyq[k * s.out_w + l];
        const T top = (T(1) - ly) * g, bottom = ly * g;
        lo[c.lo] += (T(1) - c.lambda) * top;
        lo[c.hi] += c.lambda * top;
        hi[c.lo] += (T(1) - c.lambda) * bottom;
        hi[c.hi] += c.lambda * bottom;
      }
    }
  });
}

template <typename T>
void NearestKernel(const ExecutionContext& ctx) {
  const InterpShape s = PrepareInterpOutput(ctx, HostOutSize(ctx));
  const T* x = ctx.Input("X").data<T>();
  T* y = ctx.Output("Out")->mutable_data<T>();
  const int64_t* rows = NearestTaps(s);
  const int64_t* cols = rows + s.out_h;
  ForPlanes(ctx, s, 1.0 * s.out_h * s.out_w, [&](int64_t q) {
    const T* xq = x + q * s.in_h * s.in_w;
    T* yq = y + q * s.out_h * s.out_w;
    for (int64_t k = 0; k < s.out_h; ++k) {
      const T* row = xq + rows[k] * s.in_w;
      for (int64_t l = 0; l < s.out_w; ++l) yq[k * s.out_w + l] = row[cols[l]];
    }
  });
}

template <typename T>
void NearestGradKernel(const ExecutionContext& ctx) {
  Tensor* dx_t = ctx.Output(GradSlot("X"));
  if (dx_t == nullptr) return;
  const InterpShape s = GradInterpShape(ctx);
  const T* dy = ctx.Input(GradSlot("Out")).data<T>();
  T* dx = dx_t->mutable_data<T>();
  const int64_t* rows = NearestTaps(s);
  const int64_t* cols = rows + s.out_h;
  ForPlanes(ctx, s, 2.0 * s.out_h * s.out_w, [&](int64_t q) {
    T* dxq = dx + q * s.in_h * s.in_w;
    const T* dyq = dy + q * s.out_h * s.out_w;
    std::fill_n(dxq, s.in_h * s.in_w, T(0));
    for (int64_t k = 0; k < s.out_h; ++k) {
      T* row = dxq + rows[k] * s.in_w;
      for (int64_t l = 0; l < s.out_w; ++l)
        row[cols[l]] += dyq[k * s.out_w + l];
    }
  });
}

// The slots and attrs both ops declare, as Fluid's.
OpSchema& DeclareInterp(OpSchema& s, const char* method) {
  return s.Input("X", "images [N, C, H, W], float32 or float64")
      .OptionalInput("OutSize",
                     "int32 [2]: (out_h, out_w) at run time, before scale "
                     "and the attrs")
      .Output("Out", "[N, C, out_h, out_w]")
      .Attr<int32_t>("out_h", 0, "output height, when no scale or OutSize")
      .Attr<int32_t>("out_w", 0, "output width, when no scale or OutSize")
      .Attr<float>("scale", 0.0f,
                   "> 0: out = int(in * scale), before out_h and out_w")
      .Attr<std::string>("interp_method", method, "the sampling")
      .OneOf({method})
      .Attr<bool>("align_corners", true,
                  "corner pixels of input and output align: ratio "
                  "(in - 1) / (out - 1), else in / out")
      .Attr<int32_t>("align_mode", 1,
                     "without align_corners: 0 samples at half-pixel "
                     "centres (bilinear only), 1 at ratio * k")
      .Attr<std::string>("data_layout", "NCHW", "NCHW only");
}

}  // namespace

[[maybe_unused]] static OpSchema& bilinear_interp_schema =
    DeclareInterp(OpRegistry::Global().Register("bilinear_interp"), "bilinear")
        .Doc(
            "Bilinear resize of each plane of NCHW images: an output pixel "
            "blends the four input pixels around its source position.")
        .SetInferShape(InterpInferShape)
        .SetGrad(GradSpec("bilinear_interp_grad")
                     .Inputs({"X"})
                     .OutGrads({"Out"})
                     .InGrads({"X"}))
        .CPUKernel<float>(BilinearKernel<float>)
        .CPUKernel<double>(BilinearKernel<double>);

REGISTER_GRAD_OP(bilinear_interp_grad)
    .Doc(
        "Gradient of bilinear_interp: each Out@GRAD pixel added into its "
        "four input pixels, by the same weights.")
    .SetInferShape(InterpGradInferShape)
    .CPUKernel<float>(BilinearGradKernel<float>)
    .CPUKernel<double>(BilinearGradKernel<double>);

[[maybe_unused]] static OpSchema& nearest_interp_schema =
    DeclareInterp(OpRegistry::Global().Register("nearest_interp"), "nearest")
        .Doc(
            "Nearest-neighbour resize of each plane of NCHW images: an "
            "output pixel copies the input pixel at its source position.")
        .SetInferShape(InterpInferShape)
        .SetGrad(GradSpec("nearest_interp_grad")
                     .Inputs({"X"})
                     .OutGrads({"Out"})
                     .InGrads({"X"}))
        .CPUKernel<float>(NearestKernel<float>)
        .CPUKernel<double>(NearestKernel<double>);

REGISTER_GRAD_OP(nearest_interp_grad)
    .Doc(
        "Gradient of nearest_interp: each Out@GRAD pixel added into the "
        "input pixel it copied.")
    .SetInferShape(InterpGradInferShape)
    .CPUKernel<float>(NearestGradKernel<float>)
    .CPUKernel<double>(NearestGradKernel<double>);

}  // namespace ops
}  // namespace fluid
