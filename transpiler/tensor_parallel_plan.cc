// The tensor-parallel plan: which regions of the forward pass split (see
// tensor_parallel.h for the rules). Regions grow from each fc-like mul
// (a seed) by following its split output forward; a batched matmul that
// needs its other operand split pulls the column-parallel mul upstream of
// it into the region. A region that meets an op no rule accepts is
// dropped whole and its layers stay replicated.
#include <algorithm>
#include <deque>

#include "src/framework/enforce.h"
#include "src/framework/program_desc.h"
#include "transpiler/program_query.h"
#include "transpiler/recompute.h"
#include "transpiler/tensor_parallel.h"

namespace fluid {

bool IsSplitUnaryOp(const std::string& type) {
  static const std::set<std::string> ops = {
      "relu",  "gelu",       "tanh",     "sigmoid",  "scale", "cast", "elu",
      "relu6", "leaky_relu", "softsign", "softplus", "swish", "silu", "square",
      "abs",   "exp",        "log",      "sqrt",     "assign"};
  return ops.count(type) > 0;
}

namespace {

bool IsElementwise(const std::string& type) {
  return type == "elementwise_add" || type == "elementwise_sub" ||
         type == "elementwise_mul" || type == "elementwise_div";
}

int32_t IntAttr(const proto::OpDesc& op, const std::string& name,
                int32_t fallback) {
  return HasOpAttr(op, name) ? GetOpAttrAs<int32_t>(op, name) : fallback;
}

bool IsForwardOp(const proto::OpDesc& op) {
  return !HasRole(op, OpRole::kBackward) && !HasRole(op, OpRole::kOptimize) &&
         !HasRole(op, OpRole::kCollective);
}

// The forward ops of block 0, who reads and who writes each var.
struct Graph {
  const proto::BlockDesc& block;
  std::map<std::string, std::vector<int>> readers;
  std::map<std::string, int> writer;
  std::set<std::string> params;
  std::set<std::string> keep_whole;  // the user's overrides

  Graph(const proto::ProgramDesc& main, const std::set<std::string>& whole)
      : block(main.blocks(0)), keep_whole(whole) {
    for (const auto& pg : OptimizedParams(main)) params.insert(pg.first);
    for (int i = 0; i < block.ops_size(); ++i) {
      const proto::OpDesc& op = block.ops(i);
      if (!IsForwardOp(op)) continue;
      std::set<std::string> seen;
      for (const auto& n : OpInputNames(op))
        if (seen.insert(n).second) readers[n].push_back(i);
      for (const auto& n : OpOutputNames(op)) writer[n] = i;
    }
  }
  Shape ShapeOf(const std::string& var) const {
    return VarShape(GetVarDesc(block, var));
  }
  const proto::OpDesc& Op(int i) const { return block.ops(i); }
  // The parameter `var` is, or is a cast of (mixed precision's copies);
  // "" otherwise.
  std::string ParamOf(const std::string& var) const {
    if (params.count(var)) return var;
    auto w = writer.find(var);
    if (w == writer.end() || Op(w->second).type() != "cast") return "";
    return ParamOf(OpInput(Op(w->second), "X")[0]);
  }
};

// The axis of `out` (a reshape of `in`) that a split of `in`'s axis `a`
// becomes: the one where the trailing dims hold the same elements, both
// split evenly. -1 when there is none.
int ReshapedAxis(const Shape& in, int a, const Shape& out, int tp) {
  const int64_t suffix = in.Product(a, in.rank());
  if (suffix <= 0 || in[a] % tp != 0) return -1;
  for (int j = 0; j < out.rank(); ++j)
    if (out.Product(j, out.rank()) == suffix && out[j] % tp == 0) return j;
  return -1;
}

// The out shape of a reshape op, the attr's 0s copying in's dims.
Shape ReshapeTarget(const proto::OpDesc& op, const Shape& in) {
  std::vector<int64_t> spec = GetOpAttrAs<std::vector<int64_t>>(op, "shape");
  for (size_t i = 0; i < spec.size(); ++i)
    if (spec[i] == 0 && static_cast<int>(i) < in.rank()) spec[i] = in[i];
  return Shape(spec);
}

class RegionGrower {
 public:
  RegionGrower(const Graph& g, int tp, const TensorParallelPlan& taken)
      : g_(g), tp_(tp), taken_(taken) {}

  // Grows the region of column-parallel seed `op`; false (with why()) when
  // the region cannot split.
  bool Grow(int op) {
    if (!StartColumn(op)) return false;
    return Drain();
  }
  const TensorParallelPlan& region() const { return r_; }
  const std::string& why() const { return why_; }

 private:
  bool Fail(const std::string& why) {
    if (why_.empty()) why_ = why;
    return false;
  }

  bool Drain() {
    while (!queue_.empty()) {
      const std::string var = queue_.front();
      queue_.pop_front();
      auto rd = g_.readers.find(var);
      if (rd == g_.readers.end()) continue;
      for (int op : rd->second)
        if (!Visit(op, var)) return false;
    }
    return true;
  }

  // Records `var` split along `axis` and queues its readers; false when
  // it is split along another axis already, or does not divide.
  bool MarkSplit(const std::string& var, int axis) {
    auto it = r_.split.find(var);
    if (it != r_.split.end()) {
      if (it->second == axis) return true;
      return Fail("'" + var + "' would be split along two axes");
    }
    if (taken_.split.count(var))
      return Fail("'" + var + "' is in another region");
    const Shape s = g_.ShapeOf(var);
    if (axis < 0 || axis >= s.rank())
      return Fail("'" + var + "' has no axis " + std::to_string(axis));
    if (s[axis] > 0 && s[axis] % tp_ != 0)
      return Fail("dim " + std::to_string(axis) + " of '" + var + "' (" +
                  std::to_string(s[axis]) + ") does not divide by " +
                  std::to_string(tp_));
    r_.split[var] = axis;
    queue_.push_back(var);
    return true;
  }

  // A parameter (or its cast) split along `axis`, with the casts between.
  bool MarkParam(const std::string& var, int axis) {
    if (!MarkSplit(var, axis)) return false;
    const std::string p = g_.ParamOf(var);
    if (p == var) {
      if (g_.keep_whole.count(p))
        return Fail("'" + p + "' is kept whole (keep_whole)");
      r_.params.insert(p);
      return true;
    }
    return MarkParam(OpInput(g_.Op(g_.writer.at(var)), "X")[0], axis);
  }

  bool IsWeight(const std::string& y) const {
    return !g_.ParamOf(y).empty() && g_.ShapeOf(y).rank() == 2;
  }

  bool StartColumn(int op) {
    const proto::OpDesc& d = g_.Op(op);
    const std::string x = OpInput(d, "X")[0], y = OpInput(d, "Y")[0];
    if (r_.split.count(x)) return Fail("a column seed with a split input");
    r_.column.insert(op);
    return MarkParam(y, 1) &&
           MarkSplit(OpOutput(d, "Out")[0], IntAttr(d, "x_num_col_dims", 1));
  }

  bool VisitMul(int op, const std::string& var, int axis) {
    const proto::OpDesc& d = g_.Op(op);
    const std::string x = OpInput(d, "X")[0], y = OpInput(d, "Y")[0];
    if (var == y) {
      if (r_.column.count(op) || r_.row.count(op)) return true;
      return Fail("split weight '" + var + "' is read by another mul");
    }
    if (!IsWeight(y))
      return Fail("'" + var + "' reaches a mul by a non-weight");
    if (axis != IntAttr(d, "x_num_col_dims", 1))
      return Fail("'" + var + "' reaches a mul split along a kept axis");
    r_.row.insert(op);
    return MarkParam(y, 0);
  }

  // The axis of the other operand of an elementwise op aligned with axis
  // `a` of X (Fluid's broadcast: Y's dims match X's from `axis` on), -1
  // when Y does not cover it.
  int AlignedAxis(const proto::OpDesc& d, int a) const {
    const int rx = g_.ShapeOf(OpInput(d, "X")[0]).rank();
    const int ry = g_.ShapeOf(OpInput(d, "Y")[0]).rank();
    int start = IntAttr(d, "axis", -1);
    if (start < 0) start = rx - ry;
    const int j = a - start;
    return j >= 0 && j < ry ? j : -1;
  }

  bool VisitElementwise(int op, const std::string& var, int axis) {
    const proto::OpDesc& d = g_.Op(op);
    const std::string x = OpInput(d, "X")[0], y = OpInput(d, "Y")[0];
    const std::string out = OpOutput(d, "Out")[0];
    if (var == y && !r_.split.count(x))
      return Fail("split '" + y + "' is broadcast into whole '" + x + "'");
    const int xa = r_.split.at(x);
    const int j = AlignedAxis(d, xa);
    if (j >= 0 && !r_.split.count(y)) {
      if (!g_.ParamOf(y).empty()) {
        if (!MarkParam(y, j)) return false;
      } else if (g_.ShapeOf(y)[j] != 1) {
        if (!Pull(y, j)) return false;
      }
    }
    if (j >= 0 && r_.split.count(y) && r_.split.at(y) != j)
      return Fail("'" + x + "' and '" + y + "' are split along other axes");
    if (j < 0 && r_.split.count(y))
      return Fail("'" + y + "' is split along an axis '" + x + "' broadcasts");
    return MarkSplit(out, xa);
  }

  bool VisitMatmul(int op, const std::string& var, int axis) {
    const proto::OpDesc& d = g_.Op(op);
    const std::string x = OpInput(d, "X")[0], y = OpInput(d, "Y")[0];
    const int rank = g_.ShapeOf(var).rank();
    if (axis >= rank - 2 || g_.ShapeOf(x).rank() != g_.ShapeOf(y).rank())
      return Fail("'" + var + "' reaches a matmul split along a matrix axis");
    const std::string other = var == x ? y : x;
    if (!r_.split.count(other) && !Pull(other, axis)) return false;
    if (r_.split.at(other) != axis)
      return Fail("the operands of a matmul split along other axes");
    return MarkSplit(OpOutput(d, "Out")[0], axis);
  }

  bool VisitReshape(int op, const std::string& var, int axis) {
    const proto::OpDesc& d = g_.Op(op);
    const Shape in = g_.ShapeOf(var);
    const Shape target = ReshapeTarget(d, in);
    const int j = ReshapedAxis(in, axis, target, tp_);
    if (j < 0) return Fail("a reshape of '" + var + "' moves its split");
    const auto spec = GetOpAttrAs<std::vector<int64_t>>(d, "shape");
    if (spec[j] > 0) r_.reshapes[op] = {j, spec[j] / tp_};
    return MarkSplit(OpOutput(d, "Out")[0], j);
  }

  // A softmax cross entropy over logits split along their classes (the
  // last axis): the region's end, the loss whole on every rank.
  bool VisitLoss(int op, const std::string& var, int axis) {
    const proto::OpDesc& d = g_.Op(op);
    if (var != OpInput(d, "Logits")[0])
      return Fail("split '" + var + "' is the label of a cross entropy");
    if (HasOpAttr(d, "soft_label") && GetOpAttrAs<bool>(d, "soft_label"))
      return Fail("split '" + var + "' reaches a cross entropy of soft labels");
    if (axis != g_.ShapeOf(var).rank() - 1)
      return Fail("split '" + var + "' reaches a cross entropy along a kept " +
                  "axis");
    const auto softmax = OpOutput(d, "Softmax");
    if (!softmax.empty() && g_.readers.count(softmax[0]))
      return Fail("the softmax of split '" + var + "' is read by op " +
                  g_.Op(g_.readers.at(softmax[0])[0]).type());
    r_.losses.insert(op);
    return softmax.empty() || MarkSplit(softmax[0], axis);
  }

  bool VisitTranspose(int op, int axis) {
    const proto::OpDesc& d = g_.Op(op);
    const auto perm = GetOpAttrAs<std::vector<int32_t>>(d, "axis");
    for (size_t k = 0; k < perm.size(); ++k)
      if (perm[k] == axis)
        return MarkSplit(OpOutput(d, "Out")[0], static_cast<int>(k));
    return Fail("a transpose without the split axis");
  }

  bool Visit(int op, const std::string& var) {
    if (taken_.column.count(op) || taken_.row.count(op))
      return Fail("a mul of another region");
    const proto::OpDesc& d = g_.Op(op);
    const std::string& type = d.type();
    const int axis = r_.split.at(var);
    if (type == "mul") return VisitMul(op, var, axis);
    if (IsElementwise(type)) return VisitElementwise(op, var, axis);
    if (type == "matmul") return VisitMatmul(op, var, axis);
    if (type == "reshape") return VisitReshape(op, var, axis);
    if (type == "transpose") return VisitTranspose(op, axis);
    if (type == "softmax_with_cross_entropy") return VisitLoss(op, var, axis);
    if (type == "softmax") {
      int a = IntAttr(d, "axis", -1);
      if (a < 0) a += g_.ShapeOf(var).rank();
      if (a == axis) return Fail("a softmax along the split axis");
      return MarkSplit(OpOutput(d, "Out")[0], axis);
    }
    if (IsSplitUnaryOp(type) && OpInputNames(d).size() == 1)
      return MarkSplit(OpOutput(d, "Out")[0], axis);
    return Fail("split '" + var + "' reaches op " + type);
  }

  // Makes `var` split along `axis` by splitting the mul upstream of it
  // (through the single-input ops and bias adds that lead there).
  bool Pull(const std::string& var, int axis) {
    auto w = g_.writer.find(var);
    if (w == g_.writer.end())
      return Fail("'" + var + "' has no forward writer");
    const proto::OpDesc& d = g_.Op(w->second);
    const std::string& type = d.type();
    const std::string in = OpInputNames(d).empty() ? "" : OpInput(d, "X")[0];
    if (type == "mul" && IsWeight(OpInput(d, "Y")[0]) &&
        axis == IntAttr(d, "x_num_col_dims", 1) && !r_.row.count(w->second)) {
      if (!StartColumn(w->second) || !Drain()) return false;
    } else if (type == "transpose") {
      const auto perm = GetOpAttrAs<std::vector<int32_t>>(d, "axis");
      if (!Pull(in, perm[axis])) return false;
    } else if (type == "reshape") {
      const Shape from = g_.ShapeOf(in);
      const int j = ReshapedAxis(ReshapeTarget(d, from), axis, from, tp_);
      if (j < 0 || !Pull(in, j)) return Fail("a reshape of '" + var + "'");
    } else if (IsSplitUnaryOp(type) ||
               (IsElementwise(type) &&
                !g_.ParamOf(OpInput(d, "Y")[0]).empty())) {
      if (!Pull(in, axis)) return false;
    } else {
      return Fail("'" + var + "' (from " + type + ") cannot be split");
    }
    if (!r_.split.count(var) || r_.split.at(var) != axis)
      return Fail("'" + var + "' does not split along axis " +
                  std::to_string(axis));
    return true;
  }

  const Graph& g_;
  const int tp_;
  const TensorParallelPlan& taken_;
  TensorParallelPlan r_;
  std::deque<std::string> queue_;
  std::string why_;
};

// The embeddings that split by rows: a dense lookup of a parameter table
// no other forward op reads, whose rows divide by tp.
void PlanEmbeddings(const Graph& g, int tp, TensorParallelPlan* plan) {
  for (int i = 0; i < g.block.ops_size(); ++i) {
    const proto::OpDesc& op = g.Op(i);
    if (op.type() != "lookup_table" || !IsForwardOp(op)) continue;
    const std::string w = OpInput(op, "W")[0];
    const Shape shape = g.ShapeOf(w);
    const bool sparse =
        HasOpAttr(op, "is_sparse") && GetOpAttrAs<bool>(op, "is_sparse");
    const bool kept = g.keep_whole.count(w) > 0;
    if (!g.params.count(w) || shape.rank() != 2 || shape[0] % tp != 0 ||
        sparse || kept || plan->split.count(w) || g.readers.at(w).size() != 1) {
      plan->unsplit.push_back("the embedding '" + w + "': " +
                              (kept     ? std::string("kept whole (keep_whole)")
                               : sparse ? std::string("sparse gradients")
                                        : "not a table of rows dividing by " +
                                              std::to_string(tp) +
                                              " read by this lookup only"));
      continue;
    }
    plan->embeddings.insert(i);
    plan->split[w] = 0;
    plan->params.insert(w);
  }
}

// Recompute's replays (transpiler/recompute.h) of split ops split as their
// originals do: each replay op (it writes <var>@RECOMPUTE copies) joins
// its original's set, a replayed reshape changes its shape attr alike, and
// each copy of a split value is split along the same axis.
void AddReplays(const Graph& g, TensorParallelPlan* plan) {
  const std::string suffix = kRecomputeSuffix;
  auto original = [&](const std::string& n) {
    const bool copy =
        n.size() > suffix.size() &&
        n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
    return copy ? n.substr(0, n.size() - suffix.size()) : std::string();
  };
  for (int i = 0; i < g.block.ops_size(); ++i) {
    const proto::OpDesc& op = g.Op(i);
    if (!HasOpAttr(op, kRecomputeSegmentAttr)) continue;
    const auto outs = OpOutputNames(op);
    const std::string base = outs.empty() ? "" : original(outs[0]);
    auto w = g.writer.find(base);
    if (w == g.writer.end()) continue;
    const int o = w->second;
    for (std::set<int>* set :
         {&plan->column, &plan->row, &plan->embeddings, &plan->losses})
      if (set->count(o)) set->insert(i);
    auto rs = plan->reshapes.find(o);
    if (rs != plan->reshapes.end()) plan->reshapes[i] = rs->second;
  }
  for (const auto& v : g.block.vars()) {
    auto it = plan->split.find(original(v.name()));
    if (it != plan->split.end()) plan->split[v.name()] = it->second;
  }
}

void Merge(const TensorParallelPlan& r, TensorParallelPlan* plan) {
  plan->split.insert(r.split.begin(), r.split.end());
  plan->column.insert(r.column.begin(), r.column.end());
  plan->row.insert(r.row.begin(), r.row.end());
  plan->losses.insert(r.losses.begin(), r.losses.end());
  plan->reshapes.insert(r.reshapes.begin(), r.reshapes.end());
  plan->params.insert(r.params.begin(), r.params.end());
}

}  // namespace

TensorParallelPlan PlanTensorParallel(const proto::ProgramDesc& main, int tp,
                                      const std::set<std::string>& keep_whole) {
  FLUID_ENFORCE(tp >= 2, "tensor parallelism needs tp >= 2, got ", tp);
  const Graph g(main, keep_whole);
  for (const std::string& p : keep_whole)
    FLUID_ENFORCE(g.params.count(p),
                  "DistributedStrategy.tensor_parallel_configs.keep_whole "
                  "names '",
                  p, "', which is no parameter the program trains");
  TensorParallelPlan plan;
  std::set<int> tried;
  for (int i = 0; i < g.block.ops_size(); ++i) {
    const proto::OpDesc& op = g.Op(i);
    if (op.type() != "mul" || !IsForwardOp(op) || plan.column.count(i) ||
        plan.row.count(i) || tried.count(i))
      continue;
    const std::string y = OpInput(op, "Y")[0];
    if (g.ParamOf(y).empty() || g.ShapeOf(y).rank() != 2 ||
        plan.split.count(OpInput(op, "X")[0]))
      continue;
    RegionGrower grower(g, tp, plan);
    const TensorParallelPlan& region = grower.region();
    if (grower.Grow(i) && (!region.row.empty() || !region.losses.empty())) {
      Merge(grower.region(), &plan);
      continue;
    }
    tried.insert(grower.region().column.begin(), grower.region().column.end());
    tried.insert(i);
    plan.unsplit.push_back("the fc of '" + y + "': " +
                           (grower.why().empty()
                                ? "no row-parallel mul or loss ends it"
                                : grower.why()));
  }
  PlanEmbeddings(g, tp, &plan);
  AddReplays(g, &plan);
  if (plan.column.empty() && plan.embeddings.empty()) {
    std::string why;
    for (const auto& u : plan.unsplit) why += "\n  " + u;
    FLUID_THROW(
        ErrorCode::kInvalidArgument, "tensor parallelism over ", tp,
        " ranks: no layer of the program can be split (tensor parallelism "
        "splits pairs of fc layers whose split activations meet no "
        "other op);",
        why.empty() ? std::string(" the program has no fc layer") : why);
  }
  return plan;
}

}  // namespace fluid
