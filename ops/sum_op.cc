// sum: Out = X[0] + X[1] + ... + X[n-1], inputs of equal shape. The
// autodiff accumulates every gradient with more than one contribution with
// this op, so it runs once per such gradient per step and is written to
// stream each input exactly once. int32 and int64 terms (counts, such as a
// pipeline's accuracy counts summed over its micro-batches) add exactly.
//
// Sparse terms (SelectedRows, from lookup_table with is_sparse): when every
// input is sparse, Out is sparse too, the concatenation of their rows (a
// table shared by several lookups gets one sparse gradient); when sparse
// and dense terms mix, Out is dense, the dense terms summed and the sparse
// rows added in. bfloat16 and float16 terms (dense only) are added in
// float and rounded once.
#include "ops/sum_op.h"

#include <algorithm>

#include "ops/half_cpu.h"
#include "ops/op_helpers.h"
#include "src/framework/memory.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace ops {

template <typename T>
int CheckSumInputs(const ExecutionContext& ctx, const Tensor& out,
                   const T* out_data) {
  const size_t num = ctx.InputSize("X");
  int aliased = 0;
  for (size_t i = 0; i < num; ++i) {
    const Tensor& x = ctx.Input("X", i);
    FLUID_ENFORCE(x.numel() == out.numel(), "sum: input X[", i, "] '",
                  ctx.InputName("X", i), "' has shape ", x.shape(),
                  " but Out '", ctx.OutputName("Out"), "' has shape ",
                  out.shape());
    if (x.data<T>() == out_data) ++aliased;
  }
  return aliased;
}

template int CheckSumInputs<float>(const ExecutionContext&, const Tensor&,
                                   const float*);
template int CheckSumInputs<double>(const ExecutionContext&, const Tensor&,
                                    const double*);
template int CheckSumInputs<bfloat16>(const ExecutionContext&, const Tensor&,
                                      const bfloat16*);
template int CheckSumInputs<float16>(const ExecutionContext&, const Tensor&,
                                     const float16*);
template int CheckSumInputs<int32_t>(const ExecutionContext&, const Tensor&,
                                     const int32_t*);
template int CheckSumInputs<int64_t>(const ExecutionContext&, const Tensor&,
                                     const int64_t*);

bool AnySparseInput(const ExecutionContext& ctx) {
  for (size_t i = 0; i < ctx.InputSize("X"); ++i)
    if (ctx.InputVar("X", i)->IsSelectedRows()) return true;
  return false;
}

void ConcatSparseInputs(const ExecutionContext& ctx) {
  const size_t num = ctx.InputSize("X");
  std::vector<const SelectedRows*> xs;
  int64_t total = 0;
  for (size_t i = 0; i < num; ++i) {
    const Variable* v = ctx.InputVar("X", i);
    FLUID_ENFORCE(v->IsSelectedRows(), "sum: input X[", i, "] '",
                  ctx.InputName("X", i), "' is dense while X[0] '",
                  ctx.InputName("X", 0), "' holds sparse rows");
    xs.push_back(&v->Get<SelectedRows>());
    FLUID_ENFORCE(xs[i]->dense_shape() == xs[0]->dense_shape(), "sum: input X[",
                  i, "] '", ctx.InputName("X", i), "' stands for shape ",
                  xs[i]->dense_shape(), " but X[0] '", ctx.InputName("X", 0),
                  "' for ", xs[0]->dense_shape());
    total += static_cast<int64_t>(xs[i]->rows().size());
  }
  SelectedRows* out = ctx.OutputVar("Out")->GetMutableSelectedRows();
  for (const SelectedRows* x : xs)
    FLUID_ENFORCE(x != out, "sum: Out '", ctx.OutputName("Out"),
                  "' may not be one of its sparse inputs");
  Shape shape = xs[0]->value().shape();
  shape[0] = total;
  Tensor* value = out->mutable_value();
  value->set_dtype(xs[0]->value().dtype());
  value->Resize(shape);
  char* dst = static_cast<char*>(value->raw_mutable_data(ctx.place()));
  out->set_height(xs[0]->height());
  out->mutable_rows()->clear();
  for (const SelectedRows* x : xs) {
    out->mutable_rows()->insert(out->mutable_rows()->end(), x->rows().begin(),
                                x->rows().end());
    const size_t bytes = x->rows().empty() ? 0 : x->value().bytes();
    if (bytes > 0)
      CopyBytes(ctx.place(), dst, x->value().place(), x->value().raw_data(),
                bytes);
    dst += bytes;
  }
}

namespace {

// Sparse and dense terms: Out = the dense terms' sum plus every sparse row,
// added in input order.
template <typename T>
void MixedSum(const ExecutionContext& ctx) {
  Tensor* out = ctx.Output("Out");
  std::vector<const SelectedRows*> sparse;
  std::vector<const T*> dense;
  for (size_t i = 0; i < ctx.InputSize("X"); ++i) {
    const Variable* v = ctx.InputVar("X", i);
    if (v->IsSelectedRows()) {
      sparse.push_back(&v->Get<SelectedRows>());
      if (out->shape().rank() == 0) out->Resize(sparse.back()->dense_shape());
    } else {
      dense.push_back(v->GetTensor().data<T>());
      FLUID_ENFORCE(v != ctx.OutputVar("Out"), "sum: Out '",
                    ctx.OutputName("Out"),
                    "' may not be one of its inputs when some are sparse");
    }
  }
  T* o = out->mutable_data<T>();
  const int64_t n = out->numel();
  std::fill_n(o, n, T(0));
  for (const T* d : dense)
    for (int64_t i = 0; i < n; ++i) o[i] += d[i];
  for (const SelectedRows* sr : sparse) {
    FLUID_ENFORCE(sr->dense_shape() == out->shape(), "sum: a sparse input ",
                  "stands for shape ", sr->dense_shape(), " but Out '",
                  ctx.OutputName("Out"), "' has shape ", out->shape());
    CheckRowsInRange(*sr, "sum: a sparse input");
    const int64_t w = sr->row_width();
    const T* v = sr->value().data<T>();
    for (size_t k = 0; k < sr->rows().size(); ++k)
      for (int64_t j = 0; j < w; ++j) o[sr->rows()[k] * w + j] += v[k * w + j];
  }
}

// Elements per tile: the output tile stays in L1 while every input is added
// into it, so Out is written to memory once however many inputs there are.
constexpr int64_t kSumTile = 2048;

template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

void SumInferShape(InferShapeContext* ctx) {
  const size_t n = ctx->InputSize("X");
  FLUID_ENFORCE(n >= 1, "sum: needs at least one input X");
  bool all_sparse = true;
  for (size_t i = 0; i < n; ++i)
    all_sparse = all_sparse && ctx->IsSelectedRowsInput("X", i);
  if (all_sparse) ctx->SetOutputSelectedRows("Out");
  // Out's rows are X[0]'s: it takes X[0]'s LoD (read first: Out may be X[0]).
  const LoD lod = ctx->InputLoD("X", 0);
  const int lod_level = ctx->InputLoDLevel("X", 0);
  Shape out = ctx->GetInputShape("X", 0);
  const DataType dtype = ctx->GetInputDtype("X", 0);
  for (size_t i = 1; i < n; ++i) {
    Shape s = ctx->GetInputShape("X", i);
    bool ok = s.rank() == out.rank();
    for (int d = 0; ok && d < s.rank(); ++d) {
      ok = s[d] < 0 || out[d] < 0 || s[d] == out[d];
      if (ok && out[d] < 0) out[d] = s[d];  // learn unknown dims
    }
    FLUID_ENFORCE(ok, "sum: input X[", i, "] '", ctx->InputName("X", i),
                  "' has shape ", s, " but X[0] '", ctx->InputName("X", 0),
                  "' has shape ", ctx->GetInputShape("X", 0));
    FLUID_ENFORCE(ctx->GetInputDtype("X", i) == dtype, "sum: input X[", i,
                  "] '", ctx->InputName("X", i), "' is ",
                  ctx->GetInputDtype("X", i), " but X[0] '",
                  ctx->InputName("X", 0), "' is ", dtype);
  }
  ctx->SetOutputShape("Out", out);
  ctx->SetOutputDtype("Out", dtype);
  if (!all_sparse) {
    ctx->SetOutputLoD("Out", lod);
    ctx->SetOutputLoDLevel("Out", lod_level);
  }
}

// The dense sum of 16-bit terms: each tile of Out is the float sum of every
// input's tile, rounded once. An input bound to Out is read like any
// other: a tile is written only after all its terms were read.
template <typename T>
void HalfSum(const ExecutionContext& ctx) {
  const size_t num = ctx.InputSize("X");
  Tensor* out = ctx.Output("Out");
  const int64_t numel = out->numel();
  T* o = out->mutable_data<T>();
  CheckSumInputs(ctx, *out, o);
  ParallelFor(ctx.device(), numel, static_cast<double>(num),
              [&](int64_t begin, int64_t end) {
                float acc[kSumTile], x[kSumTile];
                for (int64_t b = begin; b < end; b += kSumTile) {
                  const int64_t len = std::min(kSumTile, end - b);
                  std::fill_n(acc, len, 0.0f);
                  for (size_t j = 0; j < num; ++j) {
                    ToFloats(ctx.Input("X", j).data<T>() + b, x, len);
                    for (int64_t i = 0; i < len; ++i) acc[i] += x[i];
                  }
                  FromFloats(static_cast<const float*>(acc), o + b, len);
                }
              });
}

// The dense sum of float, double or integer terms.
template <typename T>
void DenseSum(const ExecutionContext& ctx) {
  const size_t num = ctx.InputSize("X");
  Tensor* out = ctx.Output("Out");
  const int64_t numel = out->numel();
  T* o = out->mutable_data<T>();
  // Out may be one of the inputs (in-place accumulation): such inputs are
  // counted and folded in first, so no input is read after Out overwrote it.
  const int aliased = CheckSumInputs(ctx, *out, o);
  // Inputs are added a group at a time (pointers on the stack, no heap), so
  // Out goes through memory once per kGroup inputs.
  constexpr int kGroup = 8;
  size_t next = 0;
  bool first = true;
  while (first || next < num) {
    const T* xs[kGroup];
    int cnt = 0;
    while (next < num && cnt < kGroup) {
      const T* p = ctx.Input("X", next++).data<T>();
      if (p != o) xs[cnt++] = p;
    }
    const bool init = first;
    first = false;
    if (cnt == 0 && !(init && aliased > 1)) continue;
    ParallelFor(ctx.device(), numel, static_cast<double>(cnt + 1),
                [&](int64_t begin, int64_t end) {
                  for (int64_t b = begin; b < end; b += kSumTile) {
                    const int64_t len = std::min(kSumTile, end - b);
                    ArrayMap<T> acc(o + b, len);
                    int j = 0;
                    if (init && aliased == 0) {
                      acc = ConstArrayMap<T>(xs[0] + b, len);
                      j = 1;
                    } else if (init && aliased > 1) {
                      acc *= static_cast<T>(aliased);
                    }
                    for (; j < cnt; ++j)
                      acc += ConstArrayMap<T>(xs[j] + b, len);
                  }
                });
  }
}

template <typename T>
void SumKernel(const ExecutionContext& ctx) {
  if constexpr (IsHalfType<T>::value) {
    FLUID_ENFORCE_CODE(!AnySparseInput(ctx), ErrorCode::kUnimplemented,
                       "sum: Out '", ctx.OutputName("Out"),
                       "': sparse terms are summed in float32 or float64 "
                       "only, not ",
                       DataTypeName(DataTypeOf<T>::value));
    HalfSum<T>(ctx);
  } else {
    if (AnySparseInput(ctx)) {
      if (ctx.OutputVar("Out")->IsSelectedRows())
        return ConcatSparseInputs(ctx);
      return MixedSum<T>(ctx);
    }
    DenseSum<T>(ctx);
  }
}

// Every input receives Out@GRAD unchanged, emitted as one scale-by-1 op per
// input so that each copy can be dropped on its own when its gradient is
// not needed.
std::vector<proto::OpDesc> SumGradMaker(const proto::OpDesc& fwd) {
  const std::string dout = GradVarName(OpOutput(fwd, "Out").at(0));
  std::vector<proto::OpDesc> ops;
  for (const auto& x : OpInput(fwd, "X")) {
    ops.push_back(
        MakeOp("scale", {{"X", {dout}}}, {{"Out", {GradVarName(x)}}},
               {{"scale", 1.0f},
                {"bias", 0.0f},
                {kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward)}}));
  }
  return ops;
}

}  // namespace

REGISTER_OP(sum)
    .Doc("Out = the elementwise sum of the inputs X, all of one shape.")
    .DuplicableInput("X", "the terms, one or more, of equal shape and dtype")
    .Output("Out", "their sum; may be one of the inputs (in-place)")
    .SetInferShape(SumInferShape)
    .SetGradMaker(SumGradMaker)
    .CPUKernel<float>(SumKernel<float>)
    .CPUKernel<double>(SumKernel<double>)
    .CPUKernel<bfloat16>(SumKernel<bfloat16>)
    .CPUKernel<float16>(SumKernel<float16>)
    .CPUKernel<int32_t>(SumKernel<int32_t>)
    .CPUKernel<int64_t>(SumKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
