// hierarchical_sigmoid: Fluid's hierarchical sigmoid loss. Each row i of X
// [N, D] follows a path from the root of a binary tree to its class; at
// each node n of the path, with code bit c (which child the path takes),
//   z = X[i] . W[n] + Bias[n],  loss = softplus(z) - c * z
// (the binary cross-entropy of sigmoid(z) against c), and Out[i] [N, 1] is
// the sum over the path. PreOut [N, L] holds softplus(z) at each step of
// the path (0 past its end); the gradient reads it.
//
// The default tree (path_table and path_code absent) is Fluid's complete
// binary tree over num_classes leaves, with num_classes - 1 inner nodes
// (the rows of W): class k is the heap position k + num_classes; its path
// visits, from the bottom up, j = 0, 1, ... while the position shifted
// right by j + 1 is not 0: node ((k + num_classes) >> (j + 1)) - 1 with
// code bit ((k + num_classes) >> j) & 1. L is the longest path, the
// position of the highest set bit of num_classes - 1. A custom tree gives
// each row its nodes (PathTable [N, L], ending at the first negative entry)
// and codes (PathCode [N, L], 0 or 1).
//
// Fluid's op also adds log(2) for every step past a shorter path's end, a
// constant with no gradient; here Out is the sum over the path alone.
//
// Gradients for X, W and Bias; with is_sparse, W@GRAD is sparse rows
// (SelectedRows) holding the nodes the batch's paths visit, each once, in
// ascending order.
#include "ops/hierarchical_sigmoid_op.h"

#include <algorithm>
#include <string>

#include "ops/op_helpers.h"
#include "ops/sampled_rows.h"

namespace fluid {
namespace ops {

int64_t HsigmoidCodeLength(int64_t num_classes) {
  int64_t bits = 0;
  for (uint64_t v = static_cast<uint64_t>(num_classes - 1); v != 0; v >>= 1)
    ++bits;
  return bits;
}

namespace {

bool DimsAgree(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

// The default tree's path of class k into row `row` of `p`.
void DefaultPath(int64_t k, int64_t num_classes, int64_t row,
                 HsigmoidPaths* p) {
  const uint64_t pos = static_cast<uint64_t>(k + num_classes);
  for (int64_t j = 0; (pos >> (j + 1)) != 0; ++j) {
    p->node[row * p->length + j] = static_cast<int64_t>(pos >> (j + 1)) - 1;
    p->bit[row * p->length + j] = static_cast<int64_t>((pos >> j) & 1);
  }
}

void CustomPaths(const ExecutionContext& ctx, const Tensor& table,
                 const Tensor& code, HsigmoidPaths* p) {
  const int64_t* t = table.data<int64_t>();
  const int64_t* c = code.data<int64_t>();
  for (int64_t i = 0; i < p->rows; ++i) {
    for (int64_t j = 0; j < p->length; ++j) {
      const int64_t e = i * p->length + j;
      if (t[e] < 0) break;
      FLUID_ENFORCE(t[e] < p->nodes, ctx.type(), ": PathTable '",
                    ctx.InputName("PathTable"), "' holds node ", t[e], " at [",
                    i, ", ", j, "], outside [0, ", p->nodes,
                    ") (the rows of W '", ctx.InputName("W"), "')");
      FLUID_ENFORCE(c[e] == 0 || c[e] == 1, ctx.type(), ": PathCode '",
                    ctx.InputName("PathCode"), "' holds ", c[e], " at [", i,
                    ", ", j, "]; a code on the path must be 0 or 1");
      p->node[e] = t[e];
      p->bit[e] = c[e];
    }
  }
}

}  // namespace

HsigmoidPaths ReadHsigmoidPaths(const ExecutionContext& ctx,
                                const Tensor& label, const Tensor* table,
                                const Tensor* code) {
  const Tensor& x = ctx.Input("X");
  HsigmoidPaths p;
  p.rows = x.shape()[0];
  p.dim = x.shape()[1];
  p.nodes = ctx.Input("W").shape()[0];
  const int64_t num_classes = ctx.Attr<int32_t>("num_classes");
  p.length = table ? table->shape()[1] : HsigmoidCodeLength(num_classes);
  p.node.assign(p.rows * p.length, -1);
  p.bit.assign(p.rows * p.length, 0);
  if (table != nullptr) {
    CustomPaths(ctx, *table, *code, &p);
    return p;
  }
  FLUID_ENFORCE(label.numel() == p.rows, ctx.type(), ": Label '",
                ctx.InputName("Label"), "' ", label.shape(), " must hold ",
                p.rows, " classes, one per row of X");
  const int64_t* k = label.data<int64_t>();
  for (int64_t i = 0; i < p.rows; ++i) {
    FLUID_ENFORCE(k[i] >= 0 && k[i] < num_classes, ctx.type(), ": Label '",
                  ctx.InputName("Label"), "' holds class ", k[i],
                  " at position ", i, ", outside [0, ", num_classes,
                  ") (num_classes)");
    DefaultPath(k[i], num_classes, i, &p);
  }
  return p;
}

namespace {

// Checks the inputs and attrs; returns L, the path length (-1: unknown).
int64_t CheckHsigmoidInputs(InferShapeContext* ctx) {
  const std::string& op = ctx->op_type();
  const Shape x = ctx->GetInputShape("X");
  const DataType dt = ctx->GetInputDtype("X");
  FLUID_ENFORCE(x.rank() == 2, op, ": X '", ctx->InputName("X"),
                "' must be [N, D], got ", x);
  FLUID_ENFORCE(dt == DataType::kFloat32 || dt == DataType::kFloat64, op,
                ": X '", ctx->InputName("X"),
                "' must be float32 or float64, got ", DataTypeName(dt));
  const bool custom = ctx->HasInput("PathTable");
  FLUID_ENFORCE(custom == ctx->HasInput("PathCode"), op,
                ": PathTable and PathCode go together (a custom tree); only ",
                custom ? "PathTable" : "PathCode", " is given");
  const int64_t num_classes = ctx->Attr<int32_t>("num_classes");
  FLUID_ENFORCE(custom || num_classes >= 2, op, ": num_classes ", num_classes,
                " must be at least 2 for the default tree");
  const Shape w = ctx->GetInputShape("W");
  const int64_t nodes = custom ? -1 : num_classes - 1;
  FLUID_ENFORCE(w.rank() == 2 && DimsAgree(w[0], nodes) &&
                    DimsAgree(w[1], x[1]) && ctx->GetInputDtype("W") == dt,
                op, ": W '", ctx->InputName("W"), "' must be ",
                DataTypeName(dt), " [",
                custom ? std::string("nodes") : std::to_string(nodes), ", ",
                x[1], "]", custom ? "" : " (num_classes - 1 inner nodes)",
                ", got ", DataTypeName(ctx->GetInputDtype("W")), " ", w);
  const Shape label = ctx->GetInputShape("Label");
  FLUID_ENFORCE(ctx->GetInputDtype("Label") == DataType::kInt64 &&
                    (label.rank() == 1 ||
                     (label.rank() == 2 && DimsAgree(label[1], 1))) &&
                    DimsAgree(label[0], x[0]),
                op, ": Label '", ctx->InputName("Label"),
                "' must be int64 [N] or [N, 1] with N = ", x[0], ", got ",
                DataTypeName(ctx->GetInputDtype("Label")), " ", label);
  if (ctx->HasInput("Bias")) {
    const Shape b = ctx->GetInputShape("Bias");
    FLUID_ENFORCE(
        ctx->GetInputDtype("Bias") == dt &&
            (b.rank() == 1 || (b.rank() == 2 && DimsAgree(b[1], 1))) &&
            DimsAgree(b[0], w[0]),
        op, ": Bias '", ctx->InputName("Bias"), "' must be ", DataTypeName(dt),
        " [", w[0], ", 1] (one per row of W), got ",
        DataTypeName(ctx->GetInputDtype("Bias")), " ", b);
  }
  if (!custom) return HsigmoidCodeLength(num_classes);
  const Shape t = ctx->GetInputShape("PathTable");
  const Shape c = ctx->GetInputShape("PathCode");
  for (const char* slot : {"PathTable", "PathCode"}) {
    const Shape s = ctx->GetInputShape(slot);
    FLUID_ENFORCE(ctx->GetInputDtype(slot) == DataType::kInt64 &&
                      s.rank() == 2 && DimsAgree(s[0], x[0]),
                  op, ": ", slot, " '", ctx->InputName(slot),
                  "' must be int64 [N, L] with N = ", x[0], ", got ",
                  DataTypeName(ctx->GetInputDtype(slot)), " ", s);
  }
  FLUID_ENFORCE(DimsAgree(t[1], c[1]), op, ": PathTable '",
                ctx->InputName("PathTable"), "' ", t, " and PathCode '",
                ctx->InputName("PathCode"), "' ", c,
                " must have the same path length");
  return t[1];
}

void HsigmoidInferShape(InferShapeContext* ctx) {
  const int64_t length = CheckHsigmoidInputs(ctx);
  const int64_t rows = ctx->GetInputShape("X")[0];
  const DataType dt = ctx->GetInputDtype("X");
  ctx->SetOutputShape("Out", Shape({rows, 1}));
  ctx->SetOutputDtype("Out", dt);
  ctx->SetOutputShape("PreOut", Shape({rows, length}));
  ctx->SetOutputDtype("PreOut", dt);
}

void HsigmoidGradInferShape(InferShapeContext* ctx) {
  CheckHsigmoidInputs(ctx);
  ctx->ShareShape("X", GradSlot("X"));
  if (ctx->HasOutput(GradSlot("W"))) {
    if (ctx->Attr<bool>("is_sparse")) ctx->SetOutputSelectedRows(GradSlot("W"));
    ctx->ShareShape("W", GradSlot("W"));
  }
  if (ctx->HasInput("Bias")) ctx->ShareShape("Bias", GradSlot("Bias"));
}

const Tensor* OptionalInput(const ExecutionContext& ctx, const char* slot) {
  return ctx.HasInput(slot) ? &ctx.Input(slot) : nullptr;
}

HsigmoidPaths PathsOf(const ExecutionContext& ctx) {
  return ReadHsigmoidPaths(ctx, ctx.Input("Label"),
                           OptionalInput(ctx, "PathTable"),
                           OptionalInput(ctx, "PathCode"));
}

template <typename T>
void HsigmoidKernel(const ExecutionContext& ctx) {
  const HsigmoidPaths p = PathsOf(ctx);
  const T* x = ctx.Input("X").data<T>();
  const T* w = ctx.Input("W").data<T>();
  const Tensor* bias_t = OptionalInput(ctx, "Bias");
  const T* bias = bias_t ? bias_t->data<T>() : nullptr;
  T* out = ctx.Output("Out")->mutable_data<T>(Shape({p.rows, 1}));
  T* pre = ctx.Output("PreOut")->mutable_data<T>(Shape({p.rows, p.length}));
  ParallelFor(ctx.device(), p.rows, 2.0 * p.length * p.dim,
              [&](int64_t lo, int64_t hi) {
                for (int64_t i = lo; i < hi; ++i) {
                  T sum = 0;
                  for (int64_t j = 0; j < p.length; ++j) {
                    const int64_t e = i * p.length + j, n = p.node[e];
                    if (n < 0) {
                      pre[e] = T(0);
                      continue;
                    }
                    T z = bias ? bias[n] : T(0);
                    for (int64_t k = 0; k < p.dim; ++k)
                      z += x[i * p.dim + k] * w[n * p.dim + k];
                    pre[e] = HsigmoidSoftplus(z);
                    sum += HsigmoidNodeLoss(pre[e], z, p.bit[e]);
                  }
                  out[i] = sum;
                }
              });
}

template <typename T>
void HsigmoidTableGrad(const ExecutionContext& ctx, const char* slot,
                       bool sparse, const TouchedRows& t,
                       const std::vector<T>& g, const T* x, int64_t width,
                       int64_t per_row) {
  if (!ctx.HasOutput(GradSlot(slot)) || !ctx.HasInput(slot)) return;
  TableGrad<T> dst = AllocTableGrad<T>(
      ctx, GradSlot(slot), ctx.Input(slot).shape(), t.merge, sparse);
  std::fill_n(dst.values, dst.numel, T(0));
  ParallelFor(ctx.device(), t.merge.size(), 2.0 * width * per_row,
              [&](int64_t lo, int64_t hi) {
                AccumulateTouchedRows(t, dst.dst_rows, g.data(), x, width,
                                      per_row, dst.values, lo, hi);
              });
}

template <typename T>
void HsigmoidGradKernel(const ExecutionContext& ctx) {
  const HsigmoidPaths p = PathsOf(ctx);
  const Tensor& pre_t = ctx.Input("PreOut");
  const Tensor& dout_t = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(
      pre_t.shape() == Shape({p.rows, p.length}) && dout_t.numel() == p.rows,
      ctx.type(), ": PreOut '", ctx.InputName("PreOut"), "' ", pre_t.shape(),
      " and Out@GRAD '", ctx.InputName(GradSlot("Out")), "' ", dout_t.shape(),
      " must be [", p.rows, ", ", p.length, "] and [", p.rows,
      ", 1], as the forward run's");
  const T* pre = pre_t.data<T>();
  const T* dout = dout_t.data<T>();
  std::vector<T> g(p.rows * p.length, T(0));
  for (int64_t e = 0; e < p.rows * p.length; ++e)
    if (p.node[e] >= 0)
      g[e] = HsigmoidNodeGrad(pre[e], p.bit[e]) * dout[e / p.length];
  const T* x = ctx.Input("X").data<T>();
  const T* w = ctx.Input("W").data<T>();
  if (ctx.HasOutput(GradSlot("X"))) {
    T* dx = ctx.Output(GradSlot("X"))->mutable_data<T>(ctx.Input("X").shape());
    ParallelFor(ctx.device(), p.rows, 2.0 * p.length * p.dim,
                [&](int64_t lo, int64_t hi) {
                  for (int64_t i = lo; i < hi; ++i) {
                    T* row = dx + i * p.dim;
                    std::fill_n(row, p.dim, T(0));
                    for (int64_t j = 0; j < p.length; ++j) {
                      const int64_t e = i * p.length + j, n = p.node[e];
                      if (n < 0) continue;
                      for (int64_t k = 0; k < p.dim; ++k)
                        row[k] += g[e] * w[n * p.dim + k];
                    }
                  }
                });
  }
  const TouchedRows t = CollectTouchedRows(p.node.data(), p.rows * p.length);
  HsigmoidTableGrad<T>(ctx, "W", ctx.Attr<bool>("is_sparse"), t, g, x, p.dim,
                       p.length);
  HsigmoidTableGrad<T>(ctx, "Bias", false, t, g, nullptr, 1, p.length);
}

}  // namespace

REGISTER_OP(hierarchical_sigmoid)
    .Doc(
        "Hierarchical sigmoid loss: Out [N, 1], the sum of the binary "
        "cross-entropies of the nodes on each row's path through a binary "
        "tree over the classes.")
    .Input("X", "[N, D]")
    .Input("W", "[nodes, D]: num_classes - 1 rows for the default tree")
    .Input("Label", "int64 [N] or [N, 1]: the classes")
    .OptionalInput("PathTable",
                   "int64 [N, L]: each row's nodes (a custom tree), ending "
                   "at the first negative entry")
    .OptionalInput("PathCode", "int64 [N, L]: each node's code bit, 0 or 1")
    .OptionalInput("Bias", "[nodes, 1]")
    .Output("Out", "[N, 1]")
    .Output("PreOut", "[N, L]: softplus of each node's logit, 0 off path")
    .Attr<int32_t>("num_classes", 2,
                   "the leaves of the default tree (at least 2)")
    .Attr<bool>("is_sparse", false, "W@GRAD as sparse rows (SelectedRows)")
    .SetInferShape(HsigmoidInferShape)
    .SetGrad(GradSpec("hierarchical_sigmoid_grad")
                 .Inputs({"X", "W", "Label", "PathTable", "PathCode", "Bias"})
                 .Outputs({"PreOut"})
                 .OutGrads({"Out"})
                 .InGrads({"X", "W", "Bias"}))
    .CPUKernel<float>(HsigmoidKernel<float>)
    .CPUKernel<double>(HsigmoidKernel<double>);

REGISTER_GRAD_OP(hierarchical_sigmoid_grad)
    .Doc(
        "Gradients of hierarchical_sigmoid for X, W and Bias; W's as sparse "
        "rows with is_sparse.")
    .SetInferShape(HsigmoidGradInferShape)
    .CPUKernel<float>(HsigmoidGradKernel<float>)
    .CPUKernel<double>(HsigmoidGradKernel<double>);

}  // namespace ops
}  // namespace fluid
