#include "src/framework/backward.h"

#include <map>

#include "src/framework/op_registry.h"
#include "src/framework/operator.h"
#include "src/framework/program_desc.h"
#include "src/framework/prune.h"

namespace fluid {

namespace {

bool IsFloat(const proto::VarDesc& v) { return IsFloatDtype(VarDtype(v)); }

// The forward var a gradient name refers to ("w@GRAD" -> "w"), or "".
std::string ForwardName(const std::string& grad) {
  const std::string suffix = kGradSuffix;
  if (grad.size() > suffix.size() &&
      grad.compare(grad.size() - suffix.size(), suffix.size(), suffix) == 0)
    return grad.substr(0, grad.size() - suffix.size());
  return "";
}

void DeclareLike(proto::BlockDesc* block, const std::string& name,
                 const proto::VarDesc& like) {
  if (FindVarDesc(*block, name) != nullptr) return;
  AddVarDesc(block, name, VarDtype(like), VarShape(like));
}

// Checks that `loss` is a one-element float var of `block` and returns the
// index of the last op writing it.
int FindLossOp(const proto::BlockDesc& block, const std::string& loss) {
  const proto::VarDesc* loss_var = FindVarDesc(block, loss);
  FLUID_ENFORCE_CODE(loss_var != nullptr, ErrorCode::kNotFound, "loss '", loss,
                     "' is not a variable of the program");
  FLUID_ENFORCE(IsFloat(*loss_var), "loss '", loss,
                "' must be a floating-point var");
  int64_t loss_numel = VarShape(*loss_var).numel();
  FLUID_ENFORCE(loss_numel == 1, "loss '", loss,
                "' must hold exactly one element, its shape is ",
                VarShape(*loss_var));

  int loss_op = -1;
  for (int i = 0; i < block.ops_size(); ++i)
    for (const auto& n : OpOutputNames(block.ops(i)))
      if (n == loss) loss_op = i;
  FLUID_ENFORCE(loss_op >= 0, "no op computes the loss '", loss, "'");
  return loss_op;
}

// Forward pass over the first `num_fwd_ops` ops: the vars that carry a
// gradient at all. Those nobody computes start it (trainable parameters and
// non-persistable inputs); whatever an op computes from one carries it too.
std::set<std::string> VarsRequiringGrad(const proto::BlockDesc& block,
                                        int num_fwd_ops,
                                        const std::set<std::string>& no_grad) {
  auto eligible = [&](const std::string& name) {
    const proto::VarDesc* v = FindVarDesc(block, name);
    return v != nullptr && IsFloat(*v) && !v->stop_gradient() &&
           !no_grad.count(name);
  };
  std::set<std::string> produced;
  for (int i = 0; i < num_fwd_ops; ++i)
    for (const auto& n : OpOutputNames(block.ops(i))) produced.insert(n);
  std::set<std::string> requires_grad;
  for (const auto& v : block.vars()) {
    if (!eligible(v.name()) || produced.count(v.name())) continue;
    if (!v.persistable() || v.trainable()) requires_grad.insert(v.name());
  }
  for (int i = 0; i < num_fwd_ops; ++i) {
    const proto::OpDesc& op = block.ops(i);
    bool any = false;
    for (const auto& n : OpInputNames(op)) any = any || requires_grad.count(n);
    if (!any) continue;
    for (const auto& n : OpOutputNames(op))
      if (eligible(n)) requires_grad.insert(n);
  }
  return requires_grad;
}

// The ops lying between a var needing a gradient and the loss, and the vars
// whose gradient they need.
struct BackwardPath {
  std::vector<int> ops;  // from the loss op back
  std::set<std::string> needed;
};

// Backward sweep from the loss op: every op on the path must have a
// gradient.
BackwardPath FindBackwardPath(const proto::BlockDesc& block,
                              const std::string& loss, int loss_op,
                              const std::set<std::string>& requires_grad) {
  BackwardPath path;
  path.needed = {loss};
  for (int i = loss_op; i >= 0; --i) {
    const proto::OpDesc& op = block.ops(i);
    bool writes_needed = false;
    for (const auto& n : OpOutputNames(op))
      writes_needed = writes_needed || path.needed.count(n);
    if (!writes_needed) continue;
    bool any_in = false;
    for (const auto& n : OpInputNames(op))
      any_in = any_in || requires_grad.count(n);
    if (!any_in) continue;
    const OpSchema& schema = OpRegistry::Global().Get(op.type());
    FLUID_ENFORCE_CODE(schema.has_grad(), ErrorCode::kUnimplemented, "op '",
                       op.type(), "' lies between the parameters and the ",
                       "loss '", loss, "' but has no gradient");
    path.ops.push_back(i);
    for (const auto& n : OpInputNames(op))
      if (requires_grad.count(n)) path.needed.insert(n);
  }
  return path;
}

// The op seeding loss@GRAD = 1, with loss@GRAD declared.
proto::OpDesc SeedLossGrad(proto::BlockDesc* block, const std::string& loss) {
  const proto::VarDesc& loss_var = *FindVarDesc(*block, loss);
  proto::OpDesc fill =
      MakeOp("fill_constant", {}, {{"Out", {GradVarName(loss)}}},
             {{"shape", VarShape(loss_var).ToVector()},
              {"value", 1.0f},
              {"dtype", static_cast<int32_t>(VarDtype(loss_var))},
              {kOpRoleAttr, OpRole::kBackward | OpRole::kLoss}});
  DeclareLike(block, GradVarName(loss), loss_var);
  return fill;
}

// Gradients nobody needs are not computed: their output slots in `g` are
// bound to @EMPTY@.
void BlankUnneededGrads(const std::set<std::string>& needed, proto::OpDesc* g) {
  for (auto& slot : *g->mutable_outputs()) {
    for (auto& name : *slot.mutable_arguments()) {
      std::string fwd_name = ForwardName(name);
      if (!fwd_name.empty() && !needed.count(fwd_name)) name = kEmptyVarName;
    }
  }
}

// A grad input of `g` no earlier grad op produced (an output unused by the
// loss) is zero: appends to `grad_ops` the fill_zeros_like writing it.
void ZeroFillMissingGrads(proto::BlockDesc* block, const proto::OpDesc& g,
                          std::set<std::string>* grads_written,
                          std::vector<proto::OpDesc>* grad_ops) {
  for (const auto& name : OpInputNames(g)) {
    std::string fwd_name = ForwardName(name);
    if (fwd_name.empty() || grads_written->count(name)) continue;
    const proto::VarDesc* fv = FindVarDesc(*block, fwd_name);
    if (fv == nullptr) continue;
    grad_ops->push_back(
        MakeOp("fill_zeros_like", {{"X", {fwd_name}}}, {{"Out", {name}}},
               {{kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward)}}));
    DeclareLike(block, name, *fv);
    grads_written->insert(name);
  }
}

// The grad ops, in the order they run: the loss seed, then each op's grad
// ops in reverse order of the forward ops. Marks the loss op with the loss
// role; `grads_written` receives every gradient the grad ops write.
std::vector<proto::OpDesc> MakeGradOps(proto::BlockDesc* block,
                                       const std::string& loss, int loss_op,
                                       const BackwardPath& path,
                                       std::set<std::string>* grads_written) {
  std::vector<proto::OpDesc> grad_ops = {SeedLossGrad(block, loss)};
  *grads_written = {GradVarName(loss)};
  for (int i : path.ops) {
    proto::OpDesc* fwd = block->mutable_ops(i);
    int role = OpRoleOf(*fwd);
    if (i == loss_op)
      SetOpAttr(fwd, kOpRoleAttr, role | static_cast<int>(OpRole::kLoss));
    std::vector<proto::OpDesc> made =
        OpRegistry::Global().Get(fwd->type()).grad_maker()(*fwd);
    for (auto& g : made) {
      SetOpAttr(&g, kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward));
      BlankUnneededGrads(path.needed, &g);
      ZeroFillMissingGrads(block, g, grads_written, &grad_ops);
      for (const auto& name : OpOutputNames(g))
        if (name != kEmptyVarName) grads_written->insert(name);
      grad_ops.push_back(std::move(g));
    }
  }
  return grad_ops;
}

// Sums the contributions to gradients written more than once: each writer
// of `grad` writes grad@RENAME@k instead, and a `sum` op adds them up after
// the last one. Returns the sum ops by the index of the grad op they follow.
std::map<size_t, std::vector<proto::OpDesc>> SumRepeatedGrads(
    proto::BlockDesc* block, std::vector<proto::OpDesc>* grad_ops) {
  std::map<std::string, std::vector<size_t>> writers;
  for (size_t k = 0; k < grad_ops->size(); ++k)
    for (const auto& n : OpOutputNames((*grad_ops)[k]))
      if (n != kEmptyVarName) writers[n].push_back(k);
  std::map<size_t, std::vector<proto::OpDesc>> sums_after;
  for (auto& kv : writers) {
    if (kv.second.size() < 2) continue;
    const std::string& grad = kv.first;
    std::vector<std::string> parts;
    for (size_t j = 0; j < kv.second.size(); ++j) {
      proto::OpDesc& w = (*grad_ops)[kv.second[j]];
      // One op may write the same gradient from two slots (x * x).
      for (auto& slot : *w.mutable_outputs()) {
        for (auto& name : *slot.mutable_arguments()) {
          if (name != grad) continue;
          std::string part = grad + "@RENAME@" + std::to_string(parts.size());
          name = part;
          parts.push_back(part);
        }
      }
    }
    const proto::VarDesc* fv = FindVarDesc(*block, ForwardName(grad));
    FLUID_ENFORCE(fv != nullptr, "gradient '", grad, "' has no forward var");
    for (const auto& p : parts) DeclareLike(block, p, *fv);
    sums_after[kv.second.back()].push_back(
        MakeOp("sum", {{"X", parts}}, {{"Out", {grad}}},
               {{kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward)}}));
  }
  return sums_after;
}

// The trainable parameters that carry a gradient.
std::set<std::string> TrainableParams(
    const proto::BlockDesc& block, const std::set<std::string>& requires_grad) {
  std::set<std::string> params;
  for (const auto& v : block.vars())
    if (v.persistable() && v.trainable() && requires_grad.count(v.name()))
      params.insert(v.name());
  return params;
}

// Appends `g` to `block`, declaring every gradient it writes with its
// forward var's shape and tagging the op writing a parameter's gradient with
// op_role_var, then runs its shape inference.
void AppendGradOp(proto::BlockDesc* block, proto::OpDesc g,
                  const std::set<std::string>& params) {
  for (const auto& n : OpOutputNames(g)) {
    if (n == kEmptyVarName) continue;
    std::string base = n.substr(0, n.find("@RENAME@"));
    std::string fwd_name = ForwardName(base);
    const proto::VarDesc* fv = FindVarDesc(*block, fwd_name);
    if (fv != nullptr) DeclareLike(block, n, *fv);
    if (n == base && params.count(fwd_name))
      SetOpAttr(&g, kOpRoleVarAttr, std::vector<std::string>{fwd_name, n});
  }
  *block->add_ops() = g;
  InferShapeAtCompileTime(block->ops(block->ops_size() - 1), block);
}

// Appends the grad ops, each sum op right after the grad op it follows.
void AppendGradOps(
    proto::BlockDesc* block, const std::vector<proto::OpDesc>& grad_ops,
    const std::map<size_t, std::vector<proto::OpDesc>>& sums_after,
    const std::set<std::string>& params) {
  for (size_t k = 0; k < grad_ops.size(); ++k) {
    AppendGradOp(block, grad_ops[k], params);
    auto it = sums_after.find(k);
    if (it == sums_after.end()) continue;
    for (const proto::OpDesc& sum : it->second)
      AppendGradOp(block, sum, params);
  }
}

// The (parameter, gradient) pairs in declaration order, for the parameters
// whose gradient some grad op writes.
ParamGradList ParamGradPairs(const proto::BlockDesc& block,
                             const std::set<std::string>& params,
                             const std::set<std::string>& grads_written) {
  ParamGradList pairs;
  for (const auto& v : block.vars()) {
    if (!params.count(v.name())) continue;
    if (grads_written.count(GradVarName(v.name())))
      pairs.emplace_back(v.name(), GradVarName(v.name()));
  }
  return pairs;
}

}  // namespace

ParamGradList AppendBackward(proto::ProgramDesc* program,
                             const std::string& loss,
                             const std::set<std::string>& no_grad) {
  FLUID_ENFORCE(program != nullptr && program->blocks_size() > 0,
                "AppendBackward: empty program");
  proto::BlockDesc* block = program->mutable_blocks(0);
  const int loss_op = FindLossOp(*block, loss);
  const std::set<std::string> requires_grad =
      VarsRequiringGrad(*block, loss_op + 1, no_grad);
  const BackwardPath path =
      FindBackwardPath(*block, loss, loss_op, requires_grad);
  std::set<std::string> grads_written;
  std::vector<proto::OpDesc> grad_ops =
      MakeGradOps(block, loss, loss_op, path, &grads_written);
  const std::map<size_t, std::vector<proto::OpDesc>> sums_after =
      SumRepeatedGrads(block, &grad_ops);
  const std::set<std::string> params = TrainableParams(*block, requires_grad);
  AppendGradOps(block, grad_ops, sums_after, params);
  return ParamGradPairs(*block, params, grads_written);
}

namespace {

bool InTestMode(const proto::OpDesc& op) {
  if (HasOpAttr(op, "is_test")) return GetOpAttrAs<bool>(op, "is_test");
  AttributeMap attrs = OpRegistry::Global().Get(op.type()).ResolveAttrs(op);
  return GetAttr<bool>(attrs, "is_test", op.type());
}

}  // namespace

bool IsTrainingOnlyOp(const proto::OpDesc& op, const proto::BlockDesc& block) {
  const int train = static_cast<int>(OpRole::kBackward) |
                    static_cast<int>(OpRole::kOptimize) |
                    static_cast<int>(OpRole::kCollective);
  if (OpRoleOf(op) & train) return true;
  // Programs written without roles: judge by what the op does.
  const std::string& type = op.type();
  if (type.rfind("c_", 0) == 0 || type == "send" || type == "recv" ||
      type == "coalesce_tensor")
    return true;
  const std::vector<std::string> outs = OpOutputNames(op);
  for (const std::string& out : outs)
    if (!ForwardName(out).empty()) return true;
  // Its training mode trains (moves running statistics, draws masks); its
  // inference mode, even if it writes a persistable var, does not.
  if (HasTestMode(op)) return !InTestMode(op);
  for (const std::string& out : outs) {
    const proto::VarDesc* v = FindVarDesc(block, out);
    if (v != nullptr && v->persistable()) return true;
  }
  return false;
}

proto::ProgramDesc CloneForTest(const proto::ProgramDesc& program) {
  FLUID_ENFORCE(program.blocks_size() > 0, "CloneForTest: no blocks");
  proto::ProgramDesc out = program;
  // Forward only: nothing left to share with other ranks.
  out.clear_distribution();
  proto::BlockDesc* block = out.mutable_blocks(0);
  block->clear_ops();
  std::set<std::string> used;
  const proto::BlockDesc& src = program.blocks(0);
  for (const auto& src_op : src.ops()) {
    proto::OpDesc op = src_op;
    if (HasTestMode(op)) SetOpAttr(&op, "is_test", true);
    if (IsTrainingOnlyOp(op, src)) continue;
    *block->add_ops() = op;
    for (const auto& n : OpInputNames(op)) used.insert(n);
    for (const auto& n : OpOutputNames(op)) used.insert(n);
  }
  block->clear_vars();
  for (const auto& v : src.vars())
    if (v.persistable() || used.count(v.name())) *block->add_vars() = v;
  return out;
}

bool IsTrainingProgram(const proto::ProgramDesc& program) {
  const int optimize = static_cast<int>(OpRole::kOptimize);
  for (const auto& op : program.blocks(0).ops())
    if (OpRoleOf(op) & optimize) return true;
  return false;
}

std::vector<std::string> LossVars(const proto::ProgramDesc& program) {
  const int seed = OpRole::kBackward | OpRole::kLoss;
  const std::string suffix = kGradSuffix;
  std::vector<std::string> out;
  for (const auto& op : program.blocks(0).ops()) {
    if ((OpRoleOf(op) & seed) != seed) continue;
    for (const auto& n : OpOutputNames(op))
      if (n.size() > suffix.size() &&
          n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
        out.push_back(n.substr(0, n.size() - suffix.size()));
  }
  return out;
}

void CheckEvaluationProgram(const proto::ProgramDesc& program,
                            const std::string& what) {
  FLUID_ENFORCE(program.blocks_size() > 0, what, " has no blocks");
  const proto::BlockDesc& block = program.blocks(0);
  for (int i = 0; i < block.ops_size(); ++i) {
    FLUID_ENFORCE(!IsTrainingOnlyOp(block.ops(i), block), what, " holds op ", i,
                  " '", block.ops(i).type(), "' (", OpToString(block.ops(i)),
                  "), which trains or communicates; evaluation runs forward "
                  "ops only");
  }
}

}  // namespace fluid
