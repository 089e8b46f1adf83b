// conditional_block and conditional_block_grad: a sub-block run once or not
// at all (docs/design.md, "Control flow").
//
// conditional_block (Cond, Input -> Out, Scope; attrs sub_block,
// is_scalar_condition) runs block `sub_block` when its condition holds:
// with is_scalar_condition, Cond is one bool [1] and the block runs when it
// is true; without, the block runs when every Cond tensor is non-empty (the
// rows a split_lod_tensor gave a branch). The block runs in a fresh scope,
// a kid of the scope the op runs in: its own vars live there, the outer
// vars it reads (Input) and writes (Out) are found through the parents.
// The scope is kept in the Scope var for the gradient (freed by the next
// run, or by the gradient); when the block did not run, Scope holds none.
//
// conditional_block_grad (Cond, Input, Out, Out@GRAD, Scope -> Input@GRAD;
// attr sub_block: the block's gradient block, built by AppendBackward) runs
// the gradient block in a kid of the forward scope when the forward ran,
// seeded with Out's gradients (zeros for those none reached), and writes
// the Input gradients it computed (zeros for those it did not). When the
// forward did not run, every Input gradient asked for is zeros.
#include "ops/control_flow_helpers.h"
#include "ops/op_helpers.h"
#include "src/framework/block_runner.h"
#include "src/framework/tensor_array.h"

namespace fluid {
namespace ops {
namespace {

// The scope one run of a conditional_block kept (none when the block did
// not run). `parent` owns it.
struct CondBlockScope {
  Scope* parent = nullptr;
  Scope* scope = nullptr;
  void Free() {
    if (scope != nullptr) parent->DeleteKid(scope);
    scope = nullptr;
  }
};

const BlockRunner& Runner(const ExecutionContext& ctx) {
  FLUID_ENFORCE(ctx.block_runner() != nullptr, ctx.type(),
                " runs its sub-block through an executor; its kernel was "
                "called without one");
  return *ctx.block_runner();
}

int SubBlock(const ExecutionContext& ctx, const BlockRunner& runner) {
  const int32_t b = ctx.Attr<int32_t>("sub_block");
  const int n = runner.program().blocks_size();
  FLUID_ENFORCE(b > 0 && b < n, ctx.type(), ": attr sub_block is ", b,
                " but the program's sub-blocks are 1 to ", n - 1);
  return b;
}

const std::vector<std::string>& Args(const ExecutionContext& ctx,
                                     const std::string& slot, bool input) {
  static const std::vector<std::string> kNone;
  const BoundSlot* s =
      input ? ctx.op().FindInput(slot) : ctx.op().FindOutput(slot);
  return s != nullptr ? s->args : kNone;
}

// Whether the block runs: Cond's one bool, or every Cond tensor non-empty.
bool ConditionHolds(const ExecutionContext& ctx) {
  const size_t n = ctx.InputSize("Cond");
  if (ctx.Attr<bool>("is_scalar_condition")) {
    FLUID_ENFORCE(n == 1, ctx.type(), ": with is_scalar_condition, Cond is ",
                  "one bool var, got ", n);
    const Tensor& c = ctx.Input("Cond");
    FLUID_ENFORCE(c.dtype() == DataType::kBool && c.numel() == 1, ctx.type(),
                  ": Cond '", ctx.InputName("Cond"),
                  "' must be one bool with is_scalar_condition, is ",
                  DataTypeName(c.dtype()), " ", c.shape());
    Tensor host;
    host.CopyFrom(c, Place::CPU());
    return host.data<bool>()[0];
  }
  for (size_t k = 0; k < n; ++k) {
    const Variable* v = ctx.InputVar("Cond", k);
    if (v == nullptr || !v->HasValue() || !v->IsTensor()) return false;
    const Tensor& t = v->GetTensor();
    if (!t.initialized() || t.numel() == 0) return false;
  }
  return n > 0;
}

void CondBlockKernel(const ExecutionContext& ctx) {
  const BlockRunner& runner = Runner(ctx);
  const int block = SubBlock(ctx, runner);
  Scope* parent = runner.scope();
  CondBlockScope* kept = nullptr;
  if (ctx.HasOutput("Scope")) {
    kept = ctx.OutputVar("Scope")->GetMutable<CondBlockScope>();
    if (kept->parent != nullptr) kept->Free();  // an earlier run's
    kept->parent = parent;
  }
  if (!ConditionHolds(ctx)) return;
  Scope& scope = parent->NewScope();
  try {
    runner.RunBlock(block, &scope);
  } catch (...) {
    parent->DeleteKid(&scope);
    throw;
  }
  if (kept != nullptr) {
    kept->scope = &scope;
  } else {
    parent->DeleteKid(&scope);
  }
}

void CondBlockInferShape(InferShapeContext* ctx) {
  if (ctx->IsRuntime()) return;  // the kernel checks Cond
  const bool scalar = ctx->Attr<bool>("is_scalar_condition");
  const size_t n = ctx->InputSize("Cond");
  FLUID_ENFORCE(n >= 1, ctx->op_type(), ": Cond names no var");
  if (!scalar) return;
  FLUID_ENFORCE(n == 1, ctx->op_type(), ": with is_scalar_condition, Cond ",
                "is one bool var, got ", n);
  const DataType d = ctx->GetInputDtype("Cond");
  FLUID_ENFORCE(d == DataType::kBool, ctx->op_type(), ": Cond '",
                ctx->InputName("Cond"), "' is ", DataTypeName(d),
                "; with is_scalar_condition it is one bool (less_than(x, y), "
                "...)");
  const int64_t numel = ctx->GetInputShape("Cond").numel();
  FLUID_ENFORCE(numel < 0 || numel == 1, ctx->op_type(), ": Cond '",
                ctx->InputName("Cond"), "' must hold one element, has shape ",
                ctx->GetInputShape("Cond"));
}

// The zero gradient of `like`: a tensor's zeros, an empty array.
Variable ZeroGradOf(const Variable* like, const std::string& name,
                    const Place& place) {
  Variable zero;
  if (like != nullptr && like->HasValue() && !like->IsTensor()) {
    zero.GetMutable<LoDTensorArray>();
    return zero;
  }
  FLUID_ENFORCE(
      like != nullptr && like->HasValue() && like->GetTensor().initialized(),
      "conditional_block_grad: var '", name,
      "', whose gradient is asked for, holds no value");
  const Tensor& t = like->GetTensor();
  *zero.GetMutableTensor() = ZerosAt(t.dtype(), t.shape(), place);
  return zero;
}

void StoreGrad(const Variable& value, const Place& place, Variable* dst) {
  if (value.IsTensor()) {
    dst->GetMutableTensor()->CopyFrom(value.GetTensor(), place);
  } else {
    *MutableTensorArray(dst) = value.Get<LoDTensorArray>();
  }
}

// Runs the gradient block in a kid of the forward scope, seeded with Out's
// gradients; returns the Input gradients it computed, by input position
// (no value: none computed).
std::vector<Variable> RunGradBlock(const ExecutionContext& ctx,
                                   const BlockRunner& runner, int gblock_id,
                                   Scope* fwd_scope) {
  const proto::BlockDesc& gblock = runner.program().blocks(gblock_id);
  const std::vector<std::string>& xs = Args(ctx, "Input", true);
  const std::vector<std::string>& outs = Args(ctx, "Out", true);
  const std::vector<std::string>& douts = Args(ctx, "Out@GRAD", true);
  Scope& gs = fwd_scope->NewScope();
  for (size_t k = 0; k < outs.size(); ++k) {
    const std::string name = GradVarName(outs[k]);
    if (FindVarDesc(gblock, name) == nullptr) continue;
    const Variable* d = k < douts.size() && douts[k] != kEmptyVarName
                            ? ctx.InputVar("Out@GRAD", k)
                            : nullptr;
    if (d != nullptr && d->HasValue()) {
      StoreGrad(*d, d->IsTensor() ? d->GetTensor().place() : ctx.place(),
                gs.Var(name));
    } else {
      *gs.Var(name) =
          ZeroGradOf(fwd_scope->FindVar(outs[k]), outs[k], ctx.place());
    }
  }
  std::vector<Variable> grads(xs.size());
  try {
    runner.RunBlock(gblock_id, &gs);
    for (size_t i = 0; i < xs.size(); ++i) {
      Variable* g = gs.FindLocalVar(GradVarName(xs[i]));
      if (g != nullptr && g->HasValue() &&
          (!g->IsTensor() || g->GetTensor().initialized()))
        grads[i] = std::move(*g);
    }
  } catch (...) {
    fwd_scope->DeleteKid(&gs);
    throw;
  }
  fwd_scope->DeleteKid(&gs);
  return grads;
}

void CondBlockGradKernel(const ExecutionContext& ctx) {
  const BlockRunner& runner = Runner(ctx);
  const int gblock_id = SubBlock(ctx, runner);
  Variable* scope_var = ctx.InputVar("Scope");
  CondBlockScope* kept = nullptr;
  if (scope_var != nullptr && scope_var->HasValue() && !scope_var->IsTensor())
    kept = scope_var->GetMutable<CondBlockScope>();
  const bool ran = kept != nullptr && kept->scope != nullptr;
  std::vector<Variable> grads;
  if (ran) grads = RunGradBlock(ctx, runner, gblock_id, kept->scope);
  const std::vector<std::string>& xs = Args(ctx, "Input", true);
  for (size_t i = 0; i < xs.size() && i < ctx.OutputSize("Input@GRAD"); ++i) {
    if (!ctx.HasOutput("Input@GRAD", i)) continue;
    const Variable value =
        i < grads.size() && grads[i].HasValue()
            ? std::move(grads[i])
            : ZeroGradOf(ctx.InputVar("Input", i), xs[i], ctx.place());
    StoreGrad(value, ctx.place(), ctx.OutputVar("Input@GRAD", i));
  }
  if (ran) kept->Free();
}

}  // namespace

REGISTER_OP(conditional_block)
    .Doc("Runs block sub_block once when Cond holds, else not at all.")
    .DuplicableInput("Cond",
                     "bool [1] (is_scalar_condition), or tensors: the block "
                     "runs when all are non-empty")
    .DuplicableInput("Input", "the outer vars the block reads")
    .DuplicableOutput("Out", "the outer vars the block writes")
    .OptionalOutput("Scope", "the block's scope, kept for the gradient")
    .Attr<int32_t>("sub_block", 1, "the index of the block")
    .InRange(1, kNoUpperBound)
    .Attr<bool>("is_scalar_condition", false,
                "true: Cond is one bool; false: run when Cond is non-empty")
    .SetInferShape(CondBlockInferShape)
    .SetGradMaker([](const proto::OpDesc& op) -> std::vector<proto::OpDesc> {
      FLUID_THROW(ErrorCode::kInternal,
                  "conditional_block's gradient needs the program (its "
                  "block's gradient block): AppendBackward builds it");
    })
    .AnyPlaceKernel(CondBlockKernel);

REGISTER_OP(conditional_block_grad)
    .Doc("The gradient of a conditional_block: its gradient block, or zeros.")
    .DuplicableInput("Cond", "the forward op's Cond")
    .DuplicableInput("Input", "the forward op's Input")
    .DuplicableInput("Out", "the forward op's Out")
    .DuplicableInput("Out@GRAD", "Out's gradients (@EMPTY@: none)")
    .Input("Scope", "the forward op's Scope")
    .DuplicableOutput("Input@GRAD", "Input's gradients (@EMPTY@: not needed)")
    .Attr<int32_t>("sub_block", 1, "the index of the gradient block")
    .InRange(1, kNoUpperBound)
    .Attr<bool>("is_scalar_condition", false, "the forward op's")
    .SetInferShape([](InferShapeContext* ctx) {
      if (ctx->IsRuntime() || !ctx->HasOutput("Input@GRAD")) return;
      for (size_t i = 0; i < ctx->OutputSize("Input@GRAD"); ++i) {
        if (ctx->OutputName("Input@GRAD", i) == kEmptyVarName) continue;
        ctx->SetOutputShape("Input@GRAD", ctx->GetInputShape("Input", i), i);
        ctx->SetOutputDtype("Input@GRAD", ctx->GetInputDtype("Input", i), i);
      }
    })
    .AnyPlaceKernel(CondBlockGradKernel);

}  // namespace ops
}  // namespace fluid
