// coalesce_tensor: lays the Input tensors out as views of one contiguous
// buffer (FusedOutput), in order, so that one collective covers them all
// with no copies. It only writes (the tensors need no value yet), so it
// can run before the ops that compute them.
//
// The sizes come from the `numels` attr (set by the transpiler from the
// declared shapes), because gradients have no value before the first
// backward pass. Kernels that later write those vars through mutable_data
// write straight into the buffer. Running it again is cheap: views already
// in place are left alone.
#include "ops/op_helpers.h"
#include "src/framework/memory.h"

namespace fluid {
namespace ops {
namespace {

void CoalesceInferShape(InferShapeContext* ctx) {
  const auto& numels = ctx->Attr<std::vector<int64_t>>("numels");
  FLUID_ENFORCE(numels.size() == ctx->OutputSize("Output"),
                "coalesce_tensor: ", numels.size(), " sizes for ",
                ctx->OutputSize("Output"), " tensors");
  int64_t total = 0;
  for (int64_t n : numels) {
    FLUID_ENFORCE(n >= 0, "coalesce_tensor: negative size ", n);
    total += n;
  }
  if (!ctx->IsRuntime()) {
    ctx->SetOutputShape("FusedOutput", Shape{total});
    ctx->SetOutputDtype("FusedOutput",
                        static_cast<DataType>(ctx->Attr<int32_t>("dtype")));
  }
}

void CoalesceKernel(const ExecutionContext& ctx) {
  const auto& numels = ctx.Attr<std::vector<int64_t>>("numels");
  const DataType dtype = static_cast<DataType>(ctx.Attr<int32_t>("dtype"));
  const size_t elem = SizeOf(dtype);
  int64_t total = 0;
  for (int64_t n : numels) total += n;
  Tensor* fused = ctx.Output("FusedOutput");
  if (!fused->initialized() || fused->dtype() != dtype ||
      fused->numel() != total) {
    fused->set_dtype(dtype);
    fused->Resize(Shape{total});
    ZeroBytes(ctx.place(), fused->raw_mutable_data(ctx.place()), total * elem);
  }
  // Optional shapes: per Output its rank, then its dims.
  const auto& shapes = ctx.Attr<std::vector<int64_t>>("shapes");
  size_t at = 0;
  size_t offset = fused->offset();
  for (size_t i = 0; i < numels.size(); ++i) {
    Tensor* t = ctx.Output("Output", i);
    Shape declared;
    if (at < shapes.size()) {
      const int64_t rank = shapes[at++];
      declared = Shape(std::vector<int64_t>(shapes.begin() + at,
                                            shapes.begin() + at + rank));
      at += rank;
    }
    const bool in_place = t->buffer() == fused->buffer() &&
                          t->offset() == offset && t->dtype() == dtype &&
                          t->numel() == numels[i];
    if (!in_place) {
      // A tensor shaped already (with or without memory) keeps its shape;
      // else it takes the one `shapes` gives, or is flat.
      Shape shape = t->shape().rank() > 0 && t->numel() == numels[i]
                        ? t->shape()
                    : declared.rank() > 0 && declared.numel() == numels[i]
                        ? declared
                        : Shape{numels[i]};
      Tensor old = *t;
      t->ShareBuffer(fused->buffer(), offset, dtype, shape);
      // A var that already held values keeps them.
      if (old.initialized() && old.numel() == numels[i] && old.dtype() == dtype)
        CopyBytes(ctx.place(), t->raw_mutable_data(ctx.place()), old.place(),
                  old.raw_data(), old.bytes());
    }
    offset += numels[i] * elem;
  }
}

}  // namespace

REGISTER_OP(coalesce_tensor)
    .Doc("Makes the Input vars views of one contiguous FusedOutput buffer.")
    .DuplicableOutput("Output", "the tensors to lay out together")
    .Output("FusedOutput", "the contiguous buffer")
    .Attr<int32_t>("dtype", static_cast<int32_t>(DataType::kFloat32),
                   "element type of every tensor")
    .InRange(0, 3)
    .Attr<std::vector<int64_t>>("numels", {}, "element count of each input")
    .Attr<std::vector<int64_t>>("shapes", {},
                                "optional: each Output's rank, then its "
                                "dims, for an Output not shaped yet")
    .KernelDtypeFrom("FusedOutput")
    .SetInferShape(CoalesceInferShape)
    .AnyPlaceKernel(CoalesceKernel);

}  // namespace ops
}  // namespace fluid
