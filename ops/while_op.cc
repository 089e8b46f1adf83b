// while and while_grad: loops over a sub-block (docs/design.md, "Control
// flow").
//
// while (X, Condition -> Out, StepScopes; attrs sub_block, is_test) runs
// block `sub_block` while the bool [1] Condition holds, each iteration in a
// fresh step scope, a kid of the scope the op runs in: the block's own vars
// live there, outer vars (X read, Out written) are found through the
// parents. Unless is_test, the step scopes are kept (in the StepScopes var)
// for the gradient, and each keeps a copy of the outer vars the body both
// reads and writes (loop-carried, like a counter or a state h) as they were
// when the step began: the values the step's gradient reads.
//
// while_grad (X, Out, Out@GRAD, StepScopes -> X@GRAD; attr sub_block: the
// body's gradient block, built by AppendBackward) replays the steps in
// reverse, running the gradient block in a kid of each step scope. The
// gradient of a loop-carried var flows from one step to the one before; the
// gradients of the vars the body only reads (parameters) are summed over
// the steps, and the gradient of an array is carried through every step.
// X@GRAD is written once, after the last step: outside the loop a
// parameter's gradient is produced once. Each step scope is freed once its
// gradient has run.
#include <map>
#include <set>

#include "ops/control_flow_helpers.h"
#include "ops/op_helpers.h"
#include "src/framework/block_runner.h"
#include "src/framework/tensor_array.h"

namespace fluid {
namespace ops {
namespace {

// The step scopes one run of a while op kept, as its StepScopes var holds
// them. The scopes are kids of `parent`, which owns them.
struct StepScopes {
  Scope* parent = nullptr;
  std::vector<Scope*> scopes;
  void Free() {
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it)
      parent->DeleteKid(*it);
    scopes.clear();
  }
};

const BlockRunner& RunnerOf(const ExecutionContext& ctx) {
  FLUID_ENFORCE(ctx.block_runner() != nullptr, ctx.type(),
                " runs its sub-block through an executor; its kernel was "
                "called without one");
  return *ctx.block_runner();
}

int SubBlockOf(const ExecutionContext& ctx, const BlockRunner& runner) {
  const int32_t b = ctx.Attr<int32_t>("sub_block");
  const int n = runner.program().blocks_size();
  FLUID_ENFORCE(b > 0 && b < n, ctx.type(), ": attr sub_block is ", b,
                " but the program's sub-blocks are 1 to ", n - 1);
  return b;
}

bool ReadCondition(const ExecutionContext& ctx) {
  const Tensor& c = ctx.Input("Condition");
  FLUID_ENFORCE(c.dtype() == DataType::kBool && c.numel() == 1, ctx.type(),
                ": Condition '", ctx.InputName("Condition"),
                "' must be one bool, is ", DataTypeName(c.dtype()), " ",
                c.shape());
  Tensor host;
  host.CopyFrom(c, Place::CPU());
  return host.data<bool>()[0];
}

const std::vector<std::string>& SlotArgs(const ExecutionContext& ctx,
                                         const std::string& slot, bool input) {
  static const std::vector<std::string> kNone;
  const BoundSlot* s =
      input ? ctx.op().FindInput(slot) : ctx.op().FindOutput(slot);
  return s != nullptr ? s->args : kNone;
}

// A copy of `var`'s value that later writes to `var` leave alone.
Variable Snapshot(const Variable& var) {
  Variable copy;
  if (!var.HasValue()) return copy;
  if (var.IsTensor()) {
    const Tensor& t = var.GetTensor();
    Tensor* c = copy.GetMutableTensor();
    if (t.initialized()) {
      c->CopyFrom(t, t.place());
    } else {
      *c = Tensor(t.dtype(), t.shape());
    }
    return copy;
  }
  // Arrays: their tensors are replaced, never written in place.
  *copy.GetMutable<LoDTensorArray>() = var.Get<LoDTensorArray>();
  return copy;
}

void WhileKernel(const ExecutionContext& ctx) {
  const BlockRunner& runner = RunnerOf(ctx);
  const int block = SubBlockOf(ctx, runner);
  const bool keep = !ctx.Attr<bool>("is_test") && ctx.HasOutput("StepScopes");
  Scope* parent = runner.scope();
  StepScopes* steps = nullptr;
  if (ctx.HasOutput("StepScopes")) {
    steps = ctx.OutputVar("StepScopes")->GetMutable<StepScopes>();
    if (steps->parent != nullptr) steps->Free();  // an earlier run's
    steps->parent = parent;
  }
  // The loop-carried vars: read and written by the body.
  const std::vector<std::string>& outs = SlotArgs(ctx, "Out", false);
  const std::set<std::string> written(outs.begin(), outs.end());
  std::vector<std::string> carried;
  for (const std::string& x : SlotArgs(ctx, "X", true))
    if (written.count(x) && parent->FindVar(x) != nullptr) carried.push_back(x);
  while (ReadCondition(ctx)) {
    Scope& step = parent->NewScope();
    std::vector<Variable> saved;
    if (keep)
      for (const std::string& name : carried)
        saved.push_back(Snapshot(*parent->FindVar(name)));
    try {
      runner.RunBlock(block, &step);
    } catch (...) {
      parent->DeleteKid(&step);
      throw;
    }
    if (!keep) {
      parent->DeleteKid(&step);
      continue;
    }
    for (size_t k = 0; k < carried.size(); ++k)
      *step.Var(carried[k]) = std::move(saved[k]);
    steps->scopes.push_back(&step);
  }
}

void WhileInferShape(InferShapeContext* ctx) {
  const DataType d = ctx->GetInputDtype("Condition");
  FLUID_ENFORCE(d == DataType::kBool, ctx->op_type(), ": Condition '",
                ctx->InputName("Condition"), "' is ", DataTypeName(d),
                "; a loop condition is one bool (less_than(i, n), ...)");
  const int64_t n = ctx->GetInputShape("Condition").numel();
  FLUID_ENFORCE(n < 0 || n == 1, ctx->op_type(), ": Condition '",
                ctx->InputName("Condition"), "' must hold one element, has ",
                "shape ", ctx->GetInputShape("Condition"));
}

}  // namespace

namespace {

// A var's value as the zero gradient of `like` (a tensor's zeros, an empty
// array).
Variable ZeroGradLike(const Variable* like, const Place& place) {
  Variable zero;
  if (like != nullptr && like->HasValue() && !like->IsTensor()) {
    zero.GetMutable<LoDTensorArray>();
    return zero;
  }
  FLUID_ENFORCE(like != nullptr && like->GetTensor().initialized(),
                "while_grad: a var the loop's gradient needs holds no value");
  const Tensor& t = like->GetTensor();
  *zero.GetMutableTensor() = ZerosAt(t.dtype(), t.shape(), place);
  return zero;
}

// The gradient state of one while_grad run: by gradient name as the
// gradient block knows it ("v@GRAD"), the gradient flowing into the step
// about to run (loop-carried and written vars) or summed over the steps run
// (vars only read).
struct LoopGrads {
  std::map<std::string, Variable> flowing;
  std::map<std::string, Variable> summed;
};

// Moves the flowing gradients into `gs`, with zeros for every Out var whose
// gradient the block reads and none flows, shaped like the value the step
// wrote: what `after` holds (the next step's scope, with its snapshot of a
// loop-carried var as that step began, or the parent after the last step).
void SeedStep(const std::vector<std::string>& outs,
              const proto::BlockDesc& gblock, const Scope* after, Scope* gs,
              const Place& place, LoopGrads* g) {
  for (auto& [name, value] : g->flowing)
    if (FindVarDesc(gblock, name) != nullptr) *gs->Var(name) = std::move(value);
  g->flowing.clear();
  for (const std::string& v : outs) {
    const std::string name = GradVarName(v);
    if (FindVarDesc(gblock, name) == nullptr) continue;
    Variable* seeded = gs->FindLocalVar(name);
    if (seeded == nullptr || !seeded->HasValue())
      *gs->Var(name) = ZeroGradLike(after->FindVar(v), place);
  }
}

// Takes the step's gradients out of `gs`: a loop-carried var's (and an
// array's, read or written) flows on to the step before; a read-only var's
// is summed.
void CollectStep(const std::vector<std::string>& xs,
                 const std::vector<std::string>& outs,
                 const std::set<std::string>& out_set,
                 const std::set<std::string>& block_writes, Scope* gs,
                 LoopGrads* g) {
  // An array written by the body (not read): each step writes its own
  // slots, so the array's gradient is carried to the steps before.
  for (const std::string& v : outs) {
    Variable* var = gs->FindLocalVar(GradVarName(v));
    if (var != nullptr && var->HasValue() && !var->IsTensor())
      g->flowing[GradVarName(v)] = std::move(*var);
  }
  for (const std::string& v : xs) {
    const std::string name = GradVarName(v);
    Variable* var = gs->FindLocalVar(name);
    if (var == nullptr || !var->HasValue()) continue;
    const bool array = !var->IsTensor();
    if (out_set.count(v) || array) {
      if (block_writes.count(name) || array) g->flowing[name] = std::move(*var);
      continue;
    }
    if (!block_writes.count(name) || !var->GetTensor().initialized()) continue;
    auto it = g->summed.find(name);
    if (it == g->summed.end()) {
      g->summed[name] = Snapshot(*var);
    } else {
      AccumulateInto(var->GetTensor(), it->second.GetMutableTensor(),
                     "while_grad: the sum of " + Quote(name) + " over steps");
    }
  }
}

}  // namespace

void WhileGradKernel(const ExecutionContext& ctx) {
  const BlockRunner& runner = RunnerOf(ctx);
  const int gblock_id = SubBlockOf(ctx, runner);
  const proto::BlockDesc& gblock = runner.program().blocks(gblock_id);
  Variable* steps_var = ctx.InputVar("StepScopes");
  FLUID_ENFORCE(
      steps_var != nullptr && steps_var->HasValue() && !steps_var->IsTensor(),
      ctx.type(), ": StepScopes '", ctx.InputName("StepScopes"),
      "' holds no steps: the forward while ran with is_test, or "
      "did not run");
  StepScopes& steps = *steps_var->GetMutable<StepScopes>();
  const std::vector<std::string>& xs = SlotArgs(ctx, "X", true);
  const std::vector<std::string>& outs = SlotArgs(ctx, "Out", true);
  const std::vector<std::string>& douts = SlotArgs(ctx, "Out@GRAD", true);
  const std::set<std::string> out_set(outs.begin(), outs.end());
  std::set<std::string> block_writes;
  for (const auto& op : gblock.ops())
    for (const auto& n : OpOutputNames(op)) block_writes.insert(n);
  LoopGrads g;
  for (size_t k = 0; k < douts.size() && k < outs.size(); ++k) {
    if (douts[k] == kEmptyVarName) continue;
    const Variable* d = ctx.InputVar("Out@GRAD", k);
    if (d != nullptr && d->HasValue())
      g.flowing[GradVarName(outs[k])] = Snapshot(*d);
  }
  // Each step's scope is freed once the step before it is seeded: its
  // snapshots are what that step wrote.
  for (size_t t = steps.scopes.size(); t-- > 0;) {
    Scope* step = steps.scopes[t];
    const bool last = t + 1 == steps.scopes.size();
    Scope& gs = step->NewScope();
    SeedStep(outs, gblock, last ? steps.parent : steps.scopes[t + 1], &gs,
             ctx.place(), &g);
    if (!last) {
      steps.parent->DeleteKid(steps.scopes.back());
      steps.scopes.pop_back();
    }
    runner.RunBlock(gblock_id, &gs);
    CollectStep(xs, outs, out_set, block_writes, &gs, &g);
    step->DeleteKid(&gs);
  }
  steps.Free();  // the first step's
  for (size_t i = 0; i < xs.size() && i < ctx.OutputSize("X@GRAD"); ++i) {
    if (!ctx.HasOutput("X@GRAD", i)) continue;
    const std::string name = GradVarName(xs[i]);
    Variable* dx = ctx.OutputVar("X@GRAD", i);
    Variable* found = nullptr;
    if (!out_set.count(xs[i]) && g.summed.count(name)) found = &g.summed[name];
    if (found == nullptr && g.flowing.count(name)) found = &g.flowing[name];
    const Variable value =
        found != nullptr ? std::move(*found)
                         : ZeroGradLike(ctx.InputVar("X", i), ctx.place());
    if (value.IsTensor()) {
      dx->GetMutableTensor()->CopyFrom(value.GetTensor(), ctx.place());
    } else {
      *MutableTensorArray(dx) = value.Get<LoDTensorArray>();
    }
  }
}

REGISTER_OP(while)
    .Doc("Runs block sub_block while Condition holds, a step scope each.")
    .DuplicableInput("X", "the outer vars the body reads")
    .Input("Condition", "bool [1]: whether to run the body (again)")
    .DuplicableOutput("Out", "the outer vars the body writes")
    .OptionalOutput("StepScopes", "the step scopes kept for the gradient")
    .Attr<int32_t>("sub_block", 1, "the index of the body's block")
    .InRange(1, kNoUpperBound)
    .Attr<bool>("is_test", false, "true: free each step scope at once")
    .SetInferShape(WhileInferShape)
    .SetGradMaker([](const proto::OpDesc& op) -> std::vector<proto::OpDesc> {
      FLUID_THROW(ErrorCode::kInternal,
                  "while's gradient needs the program (its body's gradient "
                  "block): AppendBackward builds it");
    })
    .AnyPlaceKernel(WhileKernel);

REGISTER_OP(while_grad)
    .Doc("The gradient of a while loop: its gradient block, steps reversed.")
    .DuplicableInput("X", "the forward op's X")
    .DuplicableInput("Out", "the forward op's Out")
    .DuplicableInput("Out@GRAD", "Out's gradients (@EMPTY@: none)")
    .Input("StepScopes", "the forward op's step scopes")
    .DuplicableOutput("X@GRAD", "X's gradients (@EMPTY@: not needed)")
    .Attr<int32_t>("sub_block", 1, "the index of the gradient block")
    .InRange(1, kNoUpperBound)
    .SetInferShape([](InferShapeContext* ctx) {
      if (ctx->IsRuntime() || !ctx->HasOutput("X@GRAD")) return;
      for (size_t i = 0; i < ctx->OutputSize("X@GRAD"); ++i) {
        if (ctx->OutputName("X@GRAD", i) == kEmptyVarName) continue;
        ctx->SetOutputShape("X@GRAD", ctx->GetInputShape("X", i), i);
        ctx->SetOutputDtype("X@GRAD", ctx->GetInputDtype("X", i), i);
      }
    })
    .AnyPlaceKernel(WhileGradKernel);

}  // namespace ops
}  // namespace fluid
