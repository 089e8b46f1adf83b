#include "src/framework/backward.h"

#include <algorithm>
#include <functional>
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
  proto::VarDesc* v = AddVarDesc(block, name, VarDtype(like), VarShape(like));
  // The gradient of an array is an array.
  if (like.type() == proto::VarDesc::LOD_TENSOR_ARRAY) v->set_type(like.type());
}

// Finds the forward var a gradient is declared like: in the block the grad
// ops go to, or (for a loop body's gradient block) an enclosing one.
using VarFinder = std::function<const proto::VarDesc*(const std::string&)>;

VarFinder InBlock(const proto::BlockDesc* block) {
  return [block](const std::string& name) { return FindVarDesc(*block, name); };
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
void ZeroFillMissingGrads(proto::BlockDesc* block, const VarFinder& find,
                          const proto::OpDesc& g,
                          std::set<std::string>* grads_written,
                          std::vector<proto::OpDesc>* grad_ops) {
  for (const auto& name : OpInputNames(g)) {
    std::string fwd_name = ForwardName(name);
    if (fwd_name.empty() || grads_written->count(name)) continue;
    const proto::VarDesc* fv = find(fwd_name);
    if (fv == nullptr) continue;
    grad_ops->push_back(
        MakeOp("fill_zeros_like", {{"X", {fwd_name}}}, {{"Out", {name}}},
               {{kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward)}}));
    DeclareLike(block, name, *fv);
    grads_written->insert(name);
  }
}

std::map<size_t, std::vector<proto::OpDesc>> SumRepeatedGrads(
    proto::BlockDesc* block, const VarFinder& find,
    std::vector<proto::OpDesc>* grad_ops);
proto::OpDesc MakeWhileGrad(proto::ProgramDesc* program,
                            const proto::OpDesc& fwd,
                            const std::set<std::string>& rg,
                            const std::set<std::string>& written);
proto::OpDesc MakeCondBlockGrad(proto::ProgramDesc* program,
                                const proto::OpDesc& fwd,
                                const std::set<std::string>& rg,
                                const std::set<std::string>& written);

bool IsArrayVar(const proto::VarDesc* v) {
  return v != nullptr && v->type() == proto::VarDesc::LOD_TENSOR_ARRAY;
}

// The gradient of an array is an array its writers (read_from_array_grad)
// add into: before the first one, a create_array empties it (the variable
// keeps its value from the previous run).
void ClearArrayGrads(const VarFinder& find, const proto::OpDesc& g,
                     std::set<std::string>* grads_written,
                     std::vector<proto::OpDesc>* grad_ops) {
  for (const auto& n : OpOutputNames(g)) {
    if (n == kEmptyVarName || grads_written->count(n)) continue;
    if (!IsArrayVar(find(ForwardName(n)))) continue;
    grad_ops->push_back(
        MakeOp("create_array", {}, {{"Out", {n}}},
               {{kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward)}}));
    grads_written->insert(n);
  }
}

// The grad ops, in the order they run: the loss seed, then each op's grad
// ops in reverse order of the forward ops (a while loop's: one while_grad
// and its gradient block, MakeWhileGrad). Marks the loss op with the
// loss role; `grads_written` receives every gradient the grad ops write.
std::vector<proto::OpDesc> MakeGradOps(proto::ProgramDesc* program,
                                       const std::string& loss, int loss_op,
                                       const BackwardPath& path,
                                       const std::set<std::string>& rg,
                                       std::set<std::string>* grads_written) {
  proto::BlockDesc* block = program->mutable_blocks(0);
  std::vector<proto::OpDesc> grad_ops = {SeedLossGrad(block, loss)};
  *grads_written = {GradVarName(loss)};
  for (int i : path.ops) {
    proto::OpDesc* fwd = program->mutable_blocks(0)->mutable_ops(i);
    int role = OpRoleOf(*fwd);
    if (i == loss_op)
      SetOpAttr(fwd, kOpRoleAttr, role | static_cast<int>(OpRole::kLoss));
    std::vector<proto::OpDesc> made;
    if (fwd->type() == "while") {
      made = {MakeWhileGrad(program, *fwd, rg, *grads_written)};
    } else if (fwd->type() == "conditional_block") {
      made = {MakeCondBlockGrad(program, *fwd, rg, *grads_written)};
    } else {
      made = OpRegistry::Global().Get(fwd->type()).grad_maker()(*fwd);
    }
    block = program->mutable_blocks(0);
    for (auto& g : made) {
      SetOpAttr(&g, kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward));
      BlankUnneededGrads(path.needed, &g);
      ZeroFillMissingGrads(block, InBlock(block), g, grads_written, &grad_ops);
      ClearArrayGrads(InBlock(block), g, grads_written, &grad_ops);
      for (const auto& name : OpOutputNames(g))
        if (name != kEmptyVarName) grads_written->insert(name);
      grad_ops.push_back(std::move(g));
    }
  }
  return grad_ops;
}

// The writers of one gradient that are summed together: a run of writers
// between two ops updating it in place (reading and writing it: while_grad
// turns the gradient of a loop-carried var's final value into that of its
// first), which start a new run.
std::vector<std::vector<size_t>> WriterRuns(
    const std::vector<proto::OpDesc>& grad_ops, const std::string& grad,
    const std::vector<size_t>& writers) {
  std::vector<std::vector<size_t>> runs(1);
  for (size_t k : writers) {
    const std::vector<std::string> ins = OpInputNames(grad_ops[k]);
    const bool in_place = std::find(ins.begin(), ins.end(), grad) != ins.end();
    if (in_place && !runs.back().empty()) runs.emplace_back();
    runs.back().push_back(k);
  }
  return runs;
}

// Sums the contributions to gradients written more than once: each writer
// of `grad` writes grad@RENAME@k instead, and a `sum` op adds them up after
// the last one. Returns the sum ops by the index of the grad op they follow.
std::map<size_t, std::vector<proto::OpDesc>> SumRepeatedGrads(
    proto::BlockDesc* block, const VarFinder& find,
    std::vector<proto::OpDesc>* grad_ops) {
  std::map<std::string, std::vector<size_t>> writers;
  for (size_t k = 0; k < grad_ops->size(); ++k)
    for (const auto& n : OpOutputNames((*grad_ops)[k]))
      if (n != kEmptyVarName) writers[n].push_back(k);
  std::map<size_t, std::vector<proto::OpDesc>> sums_after;
  for (auto& kv : writers) {
    const std::string& grad = kv.first;
    // An array's gradient: its writers add into it.
    if (IsArrayVar(find(ForwardName(grad)))) continue;
    int renamed = 0;  // numbered per gradient, across its runs
    for (const std::vector<size_t>& run :
         WriterRuns(*grad_ops, grad, kv.second)) {
      if (run.size() < 2) continue;
      std::vector<std::string> parts;
      for (size_t k : run) {
        // One op may write the same gradient from two slots (x * x).
        for (auto& slot : *(*grad_ops)[k].mutable_outputs()) {
          for (auto& name : *slot.mutable_arguments()) {
            if (name != grad) continue;
            name = grad + "@RENAME@" + std::to_string(renamed++);
            parts.push_back(name);
          }
        }
      }
      const proto::VarDesc* fv = find(ForwardName(grad));
      FLUID_ENFORCE(fv != nullptr, "gradient '", grad, "' has no forward var");
      for (const auto& p : parts) DeclareLike(block, p, *fv);
      sums_after[run.back()].push_back(
          MakeOp("sum", {{"X", parts}}, {{"Out", {grad}}},
                 {{kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward)}}));
    }
  }
  return sums_after;
}

// ---- the gradient of a while loop ----

// The var `name` as block `b` sees it: its own or an enclosing block's.
const proto::VarDesc* FindVisibleVar(const proto::ProgramDesc& program, int b,
                                     const std::string& name) {
  for (; b >= 0; b = program.blocks(b).parent_idx())
    if (const proto::VarDesc* v = FindVarDesc(program.blocks(b), name))
      return v;
  return nullptr;
}

// The body's ops on the path from the outer vars needing a gradient to the
// outer vars the loop writes, last op first, and the vars whose gradient
// they need. A body op reading an outer var after the body wrote it in the
// same step would see, in the gradient, the value the step began with:
// refused.
BackwardPath WhileBodyPath(const proto::ProgramDesc& program, int body,
                           const proto::OpDesc& fwd, std::set<std::string>* rg,
                           const std::string& what = "while loop") {
  auto eligible = [&](const std::string& name) {
    const proto::VarDesc* v = FindVisibleVar(program, body, name);
    return v != nullptr && IsFloat(*v) && !v->stop_gradient();
  };
  const proto::BlockDesc& block = program.blocks(body);
  for (const auto& op : block.ops()) {
    bool any = false;
    for (const auto& n : OpInputNames(op)) any = any || rg->count(n);
    if (!any) continue;
    for (const auto& n : OpOutputNames(op))
      if (eligible(n)) rg->insert(n);
  }
  BackwardPath path;
  for (const auto& o : OpOutput(fwd, "Out"))
    if (rg->count(o)) path.needed.insert(o);
  for (int i = block.ops_size() - 1; i >= 0; --i) {
    const proto::OpDesc& op = block.ops(i);
    bool writes_needed = false, any_in = false;
    for (const auto& n : OpOutputNames(op))
      writes_needed = writes_needed || path.needed.count(n);
    for (const auto& n : OpInputNames(op)) any_in = any_in || rg->count(n);
    if (!writes_needed || !any_in) continue;
    const bool nested =
        op.type() == "while" || op.type() == "conditional_block";
    FLUID_ENFORCE_CODE(nested || OpRegistry::Global().Get(op.type()).has_grad(),
                       ErrorCode::kUnimplemented, "op '", op.type(),
                       "' in the body (block ", body, ") of a ", what,
                       " lies on the gradient's path but has no gradient");
    for (const auto& n : OpInputNames(op)) {
      if (!rg->count(n) || FindVarDesc(block, n) != nullptr) continue;
      for (int j = 0; j < i; ++j) {
        const std::vector<std::string> w = OpOutputNames(block.ops(j));
        FLUID_ENFORCE(std::find(w.begin(), w.end(), n) == w.end(), what,
                      " body (block ", body, "): op #", i, " '", op.type(),
                      "' reads outer var '", n, "' after op #", j, " '",
                      block.ops(j).type(),
                      "' wrote it in the same step; its gradient would read "
                      "the step's first value. Compute into a new var and "
                      "assign it to '",
                      n, "' at the end of the body");
      }
    }
    path.ops.push_back(i);
    for (const auto& n : OpInputNames(op))
      if (rg->count(n)) path.needed.insert(n);
  }
  return path;
}

// Builds the gradient block of block `body` (a new block, its child) from
// `path` (WhileBodyPath) and returns its index: the gradients of the outer
// vars `outs` the path needs are seeded by the running op, as are those of
// the arrays among `xs` (carried, added into).
int BuildGradBlock(proto::ProgramDesc* program, int body,
                   const std::vector<std::string>& xs,
                   const std::vector<std::string>& outs,
                   const std::set<std::string>& body_rg,
                   const BackwardPath& path) {
  const int gidx = program->blocks_size();
  proto::BlockDesc* gblock = program->add_blocks();
  gblock->set_idx(gidx);
  gblock->set_parent_idx(body);
  const VarFinder find = [program, body](const std::string& name) {
    return FindVisibleVar(*program, body, name);
  };
  // What while_grad seeds each step with: the gradients flowing into it,
  // and the gradients of the arrays the body reads (carried, added into).
  std::set<std::string> grads_written;
  for (const auto& o : outs) {
    if (!path.needed.count(o)) continue;
    grads_written.insert(GradVarName(o));
    DeclareLike(gblock, GradVarName(o), *find(o));
  }
  for (const auto& x : xs) {
    if (!body_rg.count(x) || !IsArrayVar(find(x))) continue;
    grads_written.insert(GradVarName(x));
    DeclareLike(gblock, GradVarName(x), *find(x));
  }
  std::vector<proto::OpDesc> grad_ops;
  for (int i : path.ops) {
    // A copy: a nested loop's or block's gradient adds blocks.
    const proto::OpDesc op = program->blocks(body).ops(i);
    std::vector<proto::OpDesc> made;
    if (op.type() == "while") {  // nested: its own gradient block, a kid
      made = {MakeWhileGrad(program, op, body_rg, grads_written)};
    } else if (op.type() == "conditional_block") {
      made = {MakeCondBlockGrad(program, op, body_rg, grads_written)};
    } else {
      made = OpRegistry::Global().Get(op.type()).grad_maker()(op);
    }
    for (auto& g : made) {
      SetOpAttr(&g, kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward));
      BlankUnneededGrads(path.needed, &g);
      ZeroFillMissingGrads(gblock, find, g, &grads_written, &grad_ops);
      ClearArrayGrads(find, g, &grads_written, &grad_ops);
      for (const auto& name : OpOutputNames(g))
        if (name != kEmptyVarName) grads_written.insert(name);
      grad_ops.push_back(std::move(g));
    }
  }
  const auto sums_after = SumRepeatedGrads(gblock, find, &grad_ops);
  for (size_t k = 0; k < grad_ops.size(); ++k) {
    std::vector<const proto::OpDesc*> in_order = {&grad_ops[k]};
    auto it = sums_after.find(k);
    if (it != sums_after.end())
      for (const auto& s : it->second) in_order.push_back(&s);
    for (const proto::OpDesc* g : in_order) {
      for (const auto& n : OpOutputNames(*g)) {
        if (n == kEmptyVarName) continue;
        const proto::VarDesc* fv =
            find(ForwardName(n.substr(0, n.find("@RENAME@"))));
        if (fv != nullptr) DeclareLike(gblock, n, *fv);
      }
      *gblock->add_ops() = *g;
    }
  }

  return gidx;
}

// Builds the gradient block of the body of `fwd` (a new block, the body's
// child) and returns the while_grad op running it. `rg`: the parent's vars
// that carry a gradient; `written`: the gradients the parent's grad ops
// wrote so far (an Out var's gradient nobody wrote is none, @EMPTY@).
proto::OpDesc MakeWhileGrad(proto::ProgramDesc* program,
                            const proto::OpDesc& fwd,
                            const std::set<std::string>& rg,
                            const std::set<std::string>& written) {
  const int body = GetOpAttrAs<int32_t>(fwd, "sub_block");
  FLUID_ENFORCE(body > 0 && body < program->blocks_size(),
                "while op: ", "sub_block ", body,
                " is no block of the program");
  const std::vector<std::string> xs = OpInput(fwd, "X");
  const std::vector<std::string> outs = OpOutput(fwd, "Out");
  const std::vector<std::string> steps = OpOutput(fwd, "StepScopes");
  FLUID_ENFORCE(steps.size() == 1 && steps[0] != kEmptyVarName,
                "while op (block ", body,
                ") has no StepScopes output: its "
                "gradient replays the steps it keeps");
  std::set<std::string> body_rg;
  for (const auto& x : xs)
    if (rg.count(x)) body_rg.insert(x);
  const BackwardPath path = WhileBodyPath(*program, body, fwd, &body_rg);

  const int gidx = BuildGradBlock(program, body, xs, outs, body_rg, path);
  std::vector<std::string> douts, dxs;
  for (const auto& o : outs)
    douts.push_back(path.needed.count(o) && written.count(GradVarName(o))
                        ? GradVarName(o)
                        : kEmptyVarName);
  for (const auto& x : xs)
    dxs.push_back(rg.count(x) ? GradVarName(x) : kEmptyVarName);
  return MakeOp(
      "while_grad",
      {{"X", xs}, {"Out", outs}, {"Out@GRAD", douts}, {"StepScopes", steps}},
      {{"X@GRAD", dxs}}, {{"sub_block", static_cast<int32_t>(gidx)}});
}

// ---- the gradient of a conditional block ----

// Builds the gradient block of the block `fwd` runs (a new block, its
// child) and returns the conditional_block_grad op running it; arguments as
// for MakeWhileGrad. An outer var the block both reads and writes on the
// gradient's path is refused: its gradient would read the value written.
proto::OpDesc MakeCondBlockGrad(proto::ProgramDesc* program,
                                const proto::OpDesc& fwd,
                                const std::set<std::string>& rg,
                                const std::set<std::string>& written) {
  const int body = GetOpAttrAs<int32_t>(fwd, "sub_block");
  FLUID_ENFORCE(body > 0 && body < program->blocks_size(),
                "conditional_block op: sub_block ", body,
                " is no block of the program");
  const std::vector<std::string> xs = OpInput(fwd, "Input");
  const std::vector<std::string> outs = OpOutput(fwd, "Out");
  const std::vector<std::string> scope = OpOutput(fwd, "Scope");
  FLUID_ENFORCE(scope.size() == 1 && scope[0] != kEmptyVarName,
                "conditional_block op (block ", body,
                ") has no Scope output: its gradient runs in the scope the "
                "block ran in");
  std::set<std::string> body_rg;
  for (const auto& x : xs)
    if (rg.count(x)) body_rg.insert(x);
  const BackwardPath path =
      WhileBodyPath(*program, body, fwd, &body_rg, "conditional block");
  for (const auto& o : outs) {
    const bool read = std::find(xs.begin(), xs.end(), o) != xs.end();
    FLUID_ENFORCE_CODE(!read || !path.needed.count(o) || !rg.count(o),
                       ErrorCode::kUnimplemented, "conditional block (block ",
                       body, ") reads and writes outer var '", o,
                       "' on the gradient's path; write the block's result "
                       "into a new var (fluid.layers.cond returns new vars)");
  }
  const int gidx = BuildGradBlock(program, body, xs, outs, body_rg, path);
  std::vector<std::string> douts, dxs;
  for (const auto& o : outs)
    douts.push_back(path.needed.count(o) && written.count(GradVarName(o))
                        ? GradVarName(o)
                        : kEmptyVarName);
  for (const auto& x : xs)
    dxs.push_back(rg.count(x) ? GradVarName(x) : kEmptyVarName);
  const bool scalar = HasOpAttr(fwd, "is_scalar_condition") &&
                      GetOpAttrAs<bool>(fwd, "is_scalar_condition");
  return MakeOp("conditional_block_grad",
                {{"Cond", OpInput(fwd, "Cond")},
                 {"Input", xs},
                 {"Out", outs},
                 {"Out@GRAD", douts},
                 {"Scope", scope}},
                {{"Input@GRAD", dxs}},
                {{"sub_block", static_cast<int32_t>(gidx)},
                 {"is_scalar_condition", scalar}});
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
      MakeGradOps(program, loss, loss_op, path, requires_grad, &grads_written);
  block = program->mutable_blocks(0);
  const std::map<size_t, std::vector<proto::OpDesc>> sums_after =
      SumRepeatedGrads(block, InBlock(block), &grad_ops);
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
