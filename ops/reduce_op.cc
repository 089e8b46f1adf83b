// reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod: Out = X
// reduced over the dims `dim` (negative counts from the end), or over every
// dim when reduce_all; keep_dim keeps the reduced dims as 1s. Reducing every
// dim without keep_dim gives Out of shape [1], as in Fluid.
//
// Gradients: see ReduceGradAt (reduce_op.h). For max and min every element
// tied with the result gets the whole gradient (Fluid's rule; the sum of X's
// gradient is then the tie count times Out's). reduce_prod's gradient is
// the product of the other elements even where an element is zero (Fluid
// divides Out by the element there and gives inf or nan).
#include "ops/reduce_op.h"

#include <string>
#include <vector>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

// Which dims of `x` the op reduces, from its attrs, checked.
std::vector<bool> ReducedDims(const std::string& op, const std::string& x_name,
                              const Shape& x, const AttributeMap& attrs) {
  const auto& dims = GetAttr<std::vector<int32_t>>(attrs, "dim", op);
  const bool all = GetAttr<bool>(attrs, "reduce_all", op);
  const int rank = x.rank();
  FLUID_ENFORCE(rank >= 1, op, ": X '", x_name, "' has no dims");
  std::vector<bool> reduced(rank, all);
  if (all) return reduced;
  FLUID_ENFORCE(!dims.empty(), op, ": attr dim is empty; name the dims of X '",
                x_name, "' ", x, " to reduce, or set reduce_all");
  for (int32_t d : dims) {
    FLUID_ENFORCE(d >= -rank && d < rank, op, ": attr dim ",
                  Shape(dims.begin(), dims.end()), " holds ", d,
                  ", out of range for X '", x_name, "' ", x, " (allowed: [",
                  -rank, ", ", rank, "))");
    const int k = d < 0 ? d + rank : d;
    FLUID_ENFORCE(!reduced[k], op, ": attr dim ",
                  Shape(dims.begin(), dims.end()), " names dim ", k, " of X '",
                  x_name, "' ", x, " twice");
    reduced[k] = true;
  }
  return reduced;
}

void ReduceInferShape(InferShapeContext* ctx) {
  const Shape x = ctx->GetInputShape("X");
  const std::vector<bool> reduced =
      ReducedDims(ctx->op_type(), ctx->InputName("X"), x, ctx->attrs());
  const bool keep = ctx->Attr<bool>("keep_dim");
  Shape out;
  for (int d = 0; d < x.rank(); ++d) {
    if (!reduced[d]) {
      out.push_back(x[d]);
    } else if (keep) {
      out.push_back(1);
    }
  }
  if (out.rank() == 0) out.push_back(1);
  ctx->SetOutputShape("Out", out);
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
}

// X as [count, outs] reduced over its rows (dim 0 of a matrix, the outer
// dims of any tensor): each chunk of Out is accumulated a row at a time, so
// that X is read in order; every element of Out still takes its rows in
// ReduceOne's order, with the same result.
template <ReduceKind kKind, typename T>
void ReduceColumns(const CPUDeviceContext& dev, const ReduceIndex& index,
                   const T* x, T* out) {
  using A = ReduceAcc<T>;
  const int64_t stride = index.reduced_strides[0];
  ParallelFor(dev, index.outs, static_cast<double>(index.count),
              [&](int64_t b, int64_t e) {
                std::vector<A> acc(static_cast<size_t>(e - b));
                for (int64_t o = b; o < e; ++o)
                  acc[o - b] = ReduceStart<kKind, A>(static_cast<A>(x[o]));
                for (int64_t r = 0; r < index.count; ++r) {
                  const T* row = x + r * stride;
                  for (int64_t o = b; o < e; ++o)
                    acc[o - b] = ReduceCombine<kKind, A>(
                        acc[o - b], static_cast<A>(row[o]));
                }
                for (int64_t o = b; o < e; ++o)
                  out[o] = ReduceFinish<kKind, T>(acc[o - b], index.count);
              });
}

template <ReduceKind kKind, typename T>
void ReduceKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const ReduceIndex index = MakeReduceIndex(ctx, x);
  const T* xd = x.data<T>();
  T* out = ctx.Output("Out")->mutable_data<T>();
  if (index.count > 0 && index.reduced_rank == 1 && index.kept_rank == 1 &&
      index.kept_strides[0] == 1) {
    ReduceColumns<kKind, T>(ctx.device(), index, xd, out);
    return;
  }
  ParallelFor(ctx.device(), index.outs, static_cast<double>(index.count),
              [&](int64_t b, int64_t e) {
                for (int64_t o = b; o < e; ++o)
                  out[o] = ReduceOne<kKind, T>(index, xd, o);
              });
}

void ReduceGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("X", GradSlot("X"));
}

template <ReduceKind kKind, typename T>
void ReduceGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const Tensor& x = ctx.Input("X");
  ReduceGradAt<kKind, T> at;
  at.index = MakeReduceIndex(ctx, x);
  at.x = x.data<T>();
  at.dout = GetReduceOutGrad(ctx, at.index).template data<T>();
  if (kKind == ReduceKind::kMax || kKind == ReduceKind::kMin)
    at.out = ctx.Input("Out").data<T>();
  std::vector<ProdStats<T>> stats;
  if (kKind == ReduceKind::kProd) {
    stats.resize(static_cast<size_t>(at.index.outs));
    ParallelFor(ctx.device(), at.index.outs,
                static_cast<double>(at.index.count), [&](int64_t b, int64_t e) {
                  for (int64_t o = b; o < e; ++o)
                    stats[o] = ProdStatsOf(at.index, at.x, o);
                });
    at.stats = stats.data();
  }
  T* d = dx->mutable_data<T>();
  ParallelFor(ctx.device(), dx->numel(), 2.0 * at.index.x_rank,
              [&](int64_t b, int64_t e) {
                for (int64_t i = b; i < e; ++i) d[i] = at(i);
              });
}

// The schema shared by the five ops and their gradients; the gradient of
// max, min and prod also reads Out.
template <ReduceKind kKind>
OpSchema& RegisterReduce(const std::string& type, const std::string& doc,
                         bool with_ints) {
  const bool reads_out = kKind == ReduceKind::kMax ||
                         kKind == ReduceKind::kMin ||
                         kKind == ReduceKind::kProd;
  GradSpec grad(type + "_grad");
  grad.Inputs({"X"}).OutGrads({"Out"}).InGrads({"X"});
  if (reads_out) grad.Outputs({"Out"});
  OpSchema& s =
      OpRegistry::Global()
          .Register(type)
          .Doc(doc)
          .Input("X", "the tensor to reduce")
          .Output("Out", "X reduced")
          .Attr<std::vector<int32_t>>("dim", {0},
                                      "dims to reduce, each in [-rank, rank)")
          .Attr<bool>("keep_dim", false, "keep the reduced dims as 1s")
          .Attr<bool>("reduce_all", false, "reduce every dim (dim unread)")
          .SetInferShape(ReduceInferShape)
          .SetGrad(grad);
  s.CPUKernel<float>(ReduceKernel<kKind, float>);
  s.CPUKernel<double>(ReduceKernel<kKind, double>);
  if (with_ints) {
    s.CPUKernel<int32_t>(ReduceKernel<kKind, int32_t>);
    s.CPUKernel<int64_t>(ReduceKernel<kKind, int64_t>);
  }
  OpSchema& g = OpRegistry::Global()
                    .RegisterGrad(type + "_grad")
                    .Doc("X@GRAD of " + type + " (reduce_op.h, ReduceGradAt).")
                    .SetInferShape(ReduceGradInferShape);
  g.CPUKernel<float>(ReduceGradKernel<kKind, float>);
  g.CPUKernel<double>(ReduceGradKernel<kKind, double>);
  return s;
}

}  // namespace

ReduceIndex MakeReduceIndex(const ExecutionContext& ctx, const Tensor& x) {
  const Shape& s = x.shape();
  const std::vector<bool> reduced =
      ReducedDims(ctx.type(), ctx.InputName("X"), s, ctx.op().attrs());
  ReduceIndex index;
  index.x_rank = s.rank();
  int64_t strides[Shape::kMaxRank] = {0};
  int64_t x_stride = 1, out_stride = 1;
  for (int d = s.rank() - 1; d >= 0; --d) {
    index.x_dims[d] = s[d];
    index.out_strides[d] = reduced[d] ? 0 : out_stride;
    if (!reduced[d]) out_stride *= s[d];
    strides[d] = x_stride;
    x_stride *= s[d];
  }
  for (int d = 0; d < s.rank(); ++d) {
    // A dim of the same kind as the one before it joins it (row-major: the
    // joined dim steps by the inner one's stride).
    const bool join = d > 0 && reduced[d] == reduced[d - 1];
    int& rank = reduced[d] ? index.reduced_rank : index.kept_rank;
    int64_t* dims = reduced[d] ? index.reduced_dims : index.kept_dims;
    int64_t* dim_strides =
        reduced[d] ? index.reduced_strides : index.kept_strides;
    if (join) {
      dims[rank - 1] *= s[d];
    } else {
      dims[rank++] = s[d];
    }
    dim_strides[rank - 1] = strides[d];
    (reduced[d] ? index.count : index.outs) *= s[d];
  }
  const bool sum_like =
      ctx.type() == "reduce_sum" || ctx.type() == "reduce_prod" ||
      ctx.type() == "reduce_sum_grad" || ctx.type() == "reduce_prod_grad";
  FLUID_ENFORCE(index.count > 0 || sum_like || index.outs == 0, ctx.type(),
                ": X '", ctx.InputName("X"), "' ", s,
                " has no elements along the reduced dims");
  return index;
}

const Tensor& GetReduceOutGrad(const ExecutionContext& ctx,
                               const ReduceIndex& index) {
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(dout.numel() == index.outs, ctx.type(), ": Out@GRAD '",
                ctx.InputName(GradSlot("Out")), "' ", dout.shape(),
                " must hold ", index.outs,
                " elements (one per element of Out)");
  return dout;
}

[[maybe_unused]] static OpSchema& reduce_sum_schema =
    RegisterReduce<ReduceKind::kSum>("reduce_sum",
                                     "Out = the sum of X over dims.", true);
[[maybe_unused]] static OpSchema& reduce_mean_schema =
    RegisterReduce<ReduceKind::kMean>("reduce_mean",
                                      "Out = the mean of X over dims.", false);
[[maybe_unused]] static OpSchema& reduce_max_schema =
    RegisterReduce<ReduceKind::kMax>(
        "reduce_max", "Out = the largest element of X over dims.", true);
[[maybe_unused]] static OpSchema& reduce_min_schema =
    RegisterReduce<ReduceKind::kMin>(
        "reduce_min", "Out = the smallest element of X over dims.", true);
[[maybe_unused]] static OpSchema& reduce_prod_schema =
    RegisterReduce<ReduceKind::kProd>(
        "reduce_prod", "Out = the product of X over dims.", true);

}  // namespace ops
}  // namespace fluid
