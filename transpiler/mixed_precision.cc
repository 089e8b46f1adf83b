#include "transpiler/mixed_precision.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "src/framework/backward.h"
#include "src/framework/op_registry.h"
#include "src/framework/operator.h"
#include "src/framework/program_desc.h"
#include "transpiler/program_query.h"

namespace fluid {

namespace {

// Fluid's lists, for the ops this product has. Reductions and the
// functions whose float16 results over- or underflow (exp, log, pow, the
// losses, softmax) stay float32; so do lookups (an embedding table is read
// a few rows at a time: casting the whole table each step costs more than
// it saves, and its sparse gradient stays a float32 one).
AmpLists DefaultAmpLists() {
  AmpLists l;
  l.white = {"conv2d", "mul", "matmul", "lstm", "gru", "lstm_unit", "gru_unit"};
  l.black = {"softmax", "softmax_with_cross_entropy", "cross_entropy",
             "sigmoid_cross_entropy_with_logits", "sequence_softmax", "mean",
             "reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
             "reduce_prod", "squared_l2_norm", "exp", "log", "pow",
             "elementwise_pow", "lookup_table", "sequence_pool", "accuracy",
             "auc", "top_k", "cos_sim", "norm", "group_norm", "smooth_l1_loss",
             "linear_chain_crf", "nce", "hierarchical_sigmoid", "crf_decoding",
             // In none of Fluid 1.x's lists, which leaves them float32.
             "conv2d_transpose", "bilinear_interp", "nearest_interp",
             "beam_search", "beam_search_decode"};
  l.gray = {"elementwise_add",
            "elementwise_sub",
            "elementwise_mul",
            "elementwise_div",
            "elementwise_max",
            "elementwise_min",
            "relu",
            "sigmoid",
            "tanh",
            "gelu",
            "leaky_relu",
            "scale",
            "dropout",
            "pool2d",
            "batch_norm",
            "layer_norm",
            "reshape",
            "reshape2",
            "transpose",
            "transpose2",
            "squeeze2",
            "unsqueeze2",
            "stack",
            "unstack",
            "slice",
            "concat",
            "split",
            "sum",
            "assign",
            "clip"};
  // Only the ops this build has: the lists name Fluid's ops, and a user's
  // program can hold only registered ones.
  for (auto* list : {&l.white, &l.black, &l.gray})
    for (auto it = list->begin(); it != list->end();)
      it = OpRegistry::Global().Has(*it) ? std::next(it) : list->erase(it);
  return l;
}

// The slots of an op in the 16-bit type that stay float32.
const std::set<std::string>& Float32Slots(const std::string& type) {
  static const std::map<std::string, std::set<std::string>> kSlots = {
      {"batch_norm",
       {"Scale", "Bias", "Mean", "Variance", "MeanOut", "VarianceOut",
        "SavedMean", "SavedVariance"}},
      {"layer_norm", {"Scale", "Bias", "Mean", "Variance"}},
      // The recurrences keep their bias, initial cell and gate buffers in
      // float32; only the inputs, weights and states they emit are 16-bit.
      {"lstm", {"Bias", "C0", "BatchGate", "BatchCellPreAct"}},
      {"gru", {"Bias", "BatchGate", "BatchHidden"}},
      // The one-step forms keep the state they carry from step to step
      // (and its gradient, which their grad ops read) in float32 too.
      {"lstm_unit", {"C_prev", "C", GradVarName("C")}},
      {"gru_unit",
       {"HiddenPrev", "Bias", "Gate", "Hidden", GradVarName("Hidden")}},
  };
  static const std::set<std::string> kNone;
  auto it = kSlots.find(type);
  return it == kSlots.end() ? kNone : it->second;
}

const char* ShortName(DataType t) {
  switch (t) {
    case DataType::kBFloat16:
      return "bf16";
    case DataType::kFloat16:
      return "fp16";
    default:
      return "fp32";
  }
}

// Whether the op and every op of its gradient have kernels in `low`.
bool HasLowKernels(const proto::OpDesc& op, DataType low) {
  const OpRegistry& reg = OpRegistry::Global();
  bool ok = reg.HasKernel(op.type(), Place::Kind::kCPU, low);
  const OpSchema& schema = reg.Get(op.type());
  if (ok && schema.has_grad())
    for (const proto::OpDesc& g : schema.grad_maker()(op))
      ok = ok && reg.HasKernel(g.type(), Place::Kind::kCPU, low);
  return ok;
}

// A float var of the types the rewrite moves between (float32 and `low`),
// held as a dense tensor.
bool IsMovable(const proto::VarDesc* v, DataType low) {
  if (v == nullptr || v->type() != proto::VarDesc::TENSOR) return false;
  const DataType t = VarDtype(*v);
  return t == DataType::kFloat32 || t == low;
}

// Whether the op writes a persistable float var outside its float32 slots
// (which must keep its type; an integer counter, like dropout's step, does
// not change type).
bool WritesPersistable(const proto::BlockDesc& block, const proto::OpDesc& op) {
  const std::set<std::string>& f32 = Float32Slots(op.type());
  for (const auto& slot : op.outputs()) {
    if (f32.count(slot.parameter())) continue;
    for (const auto& name : slot.arguments()) {
      const proto::VarDesc* v = FindVarDesc(block, name);
      if (v != nullptr && v->persistable() && IsFloatDtype(VarDtype(*v)))
        return true;
    }
  }
  return false;
}

enum class Mode { kKeep, kLow, kFloat32 };

// Rewrites forward ops one at a time into a new op list over `block`.
class ForwardRewriter {
 public:
  ForwardRewriter(proto::BlockDesc* block, const AmpLists& lists, DataType low)
      : block_(block), lists_(lists), low_(low) {}

  void Add(proto::OpDesc op, std::vector<proto::OpDesc>* out) {
    const Mode mode = ModeOf(op);
    if (mode != Mode::kKeep) {
      bool changed = false;
      const std::set<std::string>& f32 = Float32Slots(op.type());
      for (auto& slot : *op.mutable_inputs()) {
        const bool keep32 =
            mode == Mode::kFloat32 || f32.count(slot.parameter());
        const DataType want = keep32 ? DataType::kFloat32 : low_;
        for (auto& name : *slot.mutable_arguments()) {
          const proto::VarDesc* v = FindVarDesc(*block_, name);
          if (!IsMovable(v, low_) || VarDtype(*v) == want) continue;
          name = CastOf(name, want, out);
          changed = true;
        }
      }
      if (changed || mode == Mode::kLow) InferShapeAtCompileTime(op, block_);
    }
    for (const std::string& n : OpOutputNames(op)) Written(n);
    out->push_back(std::move(op));
  }

 private:
  Mode ModeOf(const proto::OpDesc& op) const {
    const std::set<std::string>& f32 = Float32Slots(op.type());
    bool any_float = false, any_low = false;
    for (const auto& slot : op.inputs()) {
      for (const auto& name : slot.arguments()) {
        const proto::VarDesc* v = FindVarDesc(*block_, name);
        if (v == nullptr || !IsFloatDtype(VarDtype(*v))) continue;
        if (!IsMovable(v, low_)) return Mode::kKeep;  // float64: as it is
        if (f32.count(slot.parameter())) continue;
        any_float = true;
        any_low = any_low || VarDtype(*v) == low_;
      }
    }
    if (!any_float) return Mode::kKeep;
    const std::string& t = op.type();
    if (lists_.black.count(t)) return Mode::kFloat32;
    const bool white = lists_.white.count(t) != 0;
    const bool gray = lists_.gray.count(t) != 0 && any_low;
    if (!white && !gray) return Mode::kFloat32;
    if (!HasLowKernels(op, low_) || WritesPersistable(*block_, op))
      return Mode::kFloat32;
    return Mode::kLow;
  }

  // The var holding `var` in type `to`: the cast made earlier, or a new
  // one appended to `out`.
  std::string CastOf(const std::string& var, DataType to,
                     std::vector<proto::OpDesc>* out) {
    const auto key = std::make_pair(var, to);
    auto it = casts_.find(key);
    if (it != casts_.end()) return it->second;
    const proto::VarDesc& src = GetVarDesc(*block_, var);
    std::string name = var + ".cast_" + ShortName(to);
    for (int k = 1; FindVarDesc(*block_, name) != nullptr; ++k)
      name = var + ".cast_" + ShortName(to) + "_" + std::to_string(k);
    proto::VarDesc* v = AddVarDesc(block_, name, to, VarShape(src));
    v->set_lod_level(src.lod_level());
    v->set_stop_gradient(src.stop_gradient());
    proto::OpDesc cast =
        MakeOp("cast", {{"X", {var}}}, {{"Out", {name}}},
               {{"in_dtype", static_cast<int32_t>(VarDtype(src))},
                {"out_dtype", static_cast<int32_t>(to)},
                {kOpRoleAttr, static_cast<int32_t>(OpRole::kForward)}});
    InferShapeAtCompileTime(cast, block_);
    out->push_back(std::move(cast));
    casts_.emplace(key, name);
    return name;
  }

  // `var` was written: its casts hold old values.
  void Written(const std::string& var) {
    for (auto it = casts_.begin(); it != casts_.end();)
      it = it->first.first == var ? casts_.erase(it) : std::next(it);
  }

  proto::BlockDesc* block_;
  const AmpLists& lists_;
  const DataType low_;
  std::map<std::pair<std::string, DataType>, std::string> casts_;
};

bool IsForwardOp(const proto::OpDesc& op) {
  return !HasRole(op, OpRole::kBackward) && !HasRole(op, OpRole::kOptimize) &&
         !HasRole(op, OpRole::kCollective);
}

// Rewrites the first `count` ops of block 0 (the forward pass) in place;
// the rest are dropped.
void RewriteForwardOps(proto::ProgramDesc* program, int count,
                       const AmpLists& lists, DataType low) {
  proto::BlockDesc* block = program->mutable_blocks(0);
  std::vector<proto::OpDesc> fwd(block->ops().begin(),
                                 block->ops().begin() + count);
  block->clear_ops();
  ForwardRewriter rewriter(block, lists, low);
  std::vector<proto::OpDesc> out;
  for (auto& op : fwd) {
    // The loss role is AppendBackward's to set again.
    SetOpAttr(&op, kOpRoleAttr,
              OpRoleOf(op) & ~static_cast<int>(OpRole::kLoss));
    rewriter.Add(std::move(op), &out);
  }
  for (auto& op : out) *block->add_ops() = std::move(op);
}

void CheckBlocks(const proto::ProgramDesc& program, const std::string& what) {
  FLUID_ENFORCE_CODE(program.blocks_size() == 1, ErrorCode::kUnimplemented,
                     "mixed precision rewrites one-block programs; ", what,
                     " has ", program.blocks_size(), " blocks");
}

// The ops of a training program, by phase: [0, backward) forward,
// [backward, rest) backward, [rest, end) optimizer. Another order is an
// error naming the op out of place.
std::pair<int, int> Phases(const proto::BlockDesc& block) {
  int i = 0;
  const int n = block.ops_size();
  while (i < n && IsForwardOp(block.ops(i))) ++i;
  const int backward = i;
  while (i < n && HasRole(block.ops(i), OpRole::kBackward)) ++i;
  const int rest = i;
  for (; i < n; ++i)
    FLUID_ENFORCE(
        !IsForwardOp(block.ops(i)) && !HasRole(block.ops(i), OpRole::kBackward),
        "mixed precision: op ", i, " '", block.ops(i).type(), "' is a ",
        IsForwardOp(block.ops(i)) ? "forward" : "backward",
        " op after the optimizer's ops; the rewrite takes "
        "programs in forward, backward, optimize order");
  FLUID_ENFORCE(backward < n,
                "mixed precision: the program has no backward pass; "
                "rewrite a training program (after minimize), or use "
                "MixedPrecisionForward for an evaluation program");
  return {backward, rest};
}

// Forward vars that carry no gradient in `block`'s backward ops [b, r):
// the regenerated backward pass must not give them one either.
std::set<std::string> NoGradVars(const proto::BlockDesc& block, int b, int r) {
  std::set<std::string> written;
  for (int i = b; i < r; ++i)
    for (const auto& n : OpOutputNames(block.ops(i))) written.insert(n);
  std::set<std::string> no_grad;
  for (int i = 0; i < b; ++i)
    for (const auto* names : {&block.ops(i).inputs(), &block.ops(i).outputs()})
      for (const auto& slot : *names)
        for (const auto& n : slot.arguments()) {
          const proto::VarDesc* v = FindVarDesc(block, n);
          if (v != nullptr && IsFloatDtype(VarDtype(*v)) &&
              !written.count(GradVarName(n)))
            no_grad.insert(n);
        }
  return no_grad;
}

// Removes the var descs only the backward ops [b, r) wrote (gradients):
// the regenerated pass declares its own.
void DropGradientVars(proto::BlockDesc* block, int b, int r) {
  std::set<std::string> grads;
  for (int i = b; i < r; ++i)
    for (const auto& n : OpOutputNames(block->ops(i))) grads.insert(n);
  for (int i = 0; i < b; ++i)
    for (const auto& n : OpOutputNames(block->ops(i))) grads.erase(n);
  auto* vars = block->mutable_vars();
  for (int i = vars->size() - 1; i >= 0; --i)
    if (grads.count(vars->Get(i).name()) && !vars->Get(i).persistable())
      vars->DeleteSubrange(i, 1);
}

std::string FreshName(const proto::BlockDesc& block, const std::string& base) {
  std::string name = base;
  for (int k = 1; FindVarDesc(block, name) != nullptr; ++k)
    name = base + "_" + std::to_string(k);
  return name;
}

// A persistable [1] var in main and startup, filled in startup. Its name
// is fixed (the executors and the Python package read it): a program with
// a var of that name already is refused.
std::string AddState(proto::TrainingJob* job, const std::string& name,
                     DataType dtype, float value) {
  FLUID_ENFORCE(FindVarDesc(job->main().blocks(0), name) == nullptr,
                "mixed precision: the program already has a variable named ",
                Quote(name), ", which fp16 loss scaling adds; rename it");
  AddVarDesc(job->mutable_main()->mutable_blocks(0), name, dtype, Shape{1},
             /*persistable=*/true)
      ->set_stop_gradient(true);
  proto::BlockDesc* sb = job->mutable_startup()->mutable_blocks(0);
  if (FindVarDesc(*sb, name) == nullptr)
    AddVarDesc(sb, name, dtype, Shape{1}, /*persistable=*/true);
  *sb->add_ops() = MakeOp("fill_constant", {}, {{"Out", {name}}},
                          {{"shape", std::vector<int64_t>{1}},
                           {"value", value},
                           {"dtype", static_cast<int32_t>(dtype)}});
  return name;
}

// The loss, multiplied by a new persistable loss scaling: returns the
// scaled loss, which the backward pass then differentiates.
std::string ScaleLoss(proto::TrainingJob* job, const std::string& loss,
                      const proto::AmpConfig& config, std::string* scaling) {
  proto::BlockDesc* block = job->mutable_main()->mutable_blocks(0);
  const proto::VarDesc& lv = GetVarDesc(*block, loss);
  FLUID_ENFORCE(VarDtype(lv) == DataType::kFloat32, "mixed precision: loss ",
                Quote(loss), " is ", VarDtype(lv), "; fp16 loss scaling ",
                "needs a float32 loss");
  *scaling = AddState(job, kLossScalingVar, DataType::kFloat32,
                      config.init_loss_scaling());
  block = job->mutable_main()->mutable_blocks(0);
  const std::string scaled = FreshName(*block, loss + ".scaled");
  AddVarDesc(block, scaled, DataType::kFloat32, VarShape(lv));
  proto::OpDesc mul =
      MakeOp("elementwise_mul", {{"X", {loss}}, {"Y", {*scaling}}},
             {{"Out", {scaled}}},
             {{kOpRoleAttr, static_cast<int32_t>(OpRole::kForward)}});
  InferShapeAtCompileTime(mul, block);
  *block->add_ops() = std::move(mul);
  return scaled;
}

// check_finite_and_unscale (and, dynamic, update_loss_scaling) over the
// updated gradients, appended to main: returns the found-infinite flag.
std::string AppendUnscale(proto::TrainingJob* job,
                          const std::vector<std::string>& grads,
                          const std::string& scaling,
                          const proto::AmpConfig& config) {
  // Persistable, so that whoever ran the step can tell it was skipped.
  const std::string found = AddState(job, kFoundInfVar, DataType::kInt32, 0.0f);
  proto::BlockDesc* block = job->mutable_main()->mutable_blocks(0);
  const int32_t role = static_cast<int32_t>(OpRole::kOptimize);
  proto::OpDesc unscale = MakeOp(
      "check_finite_and_unscale", {{"X", grads}, {"Scale", {scaling}}},
      {{"Out", grads}, {"FoundInfinite", {found}}}, {{kOpRoleAttr, role}});
  InferShapeAtCompileTime(unscale, block);
  *block->add_ops() = std::move(unscale);
  if (!config.use_dynamic_loss_scaling()) return found;
  const std::string good = AddState(job, kGoodStepsVar, DataType::kInt32, 0.0f);
  const std::string bad = AddState(job, kBadStepsVar, DataType::kInt32, 0.0f);
  block = job->mutable_main()->mutable_blocks(0);
  proto::OpDesc update =
      MakeOp("update_loss_scaling",
             {{"X", grads},
              {"FoundInfinite", {found}},
              {"PrevLossScaling", {scaling}},
              {"InGoodSteps", {good}},
              {"InBadSteps", {bad}}},
             {{"Out", grads},
              {"LossScaling", {scaling}},
              {"OutGoodSteps", {good}},
              {"OutBadSteps", {bad}}},
             {{"incr_every_n_steps", config.incr_every_n_steps()},
              {"decr_every_n_nan_or_inf", config.decr_every_n_nan_or_inf()},
              {"incr_ratio", config.incr_ratio()},
              {"decr_ratio", config.decr_ratio()},
              {kOpRoleAttr, role}});
  InferShapeAtCompileTime(update, block);
  *block->add_ops() = std::move(update);
  return found;
}

// The gradients the update ops of `rest` read.
std::vector<std::string> UpdatedGrads(const std::vector<proto::OpDesc>& rest) {
  std::vector<std::string> grads;
  for (const auto& op : rest)
    if (IsUpdateOp(op)) {
      const std::vector<std::string> pv = OpRoleVarOf(op);
      if (pv.size() == 2 &&
          std::find(grads.begin(), grads.end(), pv[1]) == grads.end())
        grads.push_back(pv[1]);
    }
  return grads;
}

std::string OnlyLoss(const proto::ProgramDesc& main) {
  const std::vector<std::string> losses = LossVars(main);
  FLUID_ENFORCE(losses.size() == 1, "mixed precision: the program must ",
                "differentiate one loss, it differentiates ", losses.size());
  return losses[0];
}

// The float32 slots of a forward op or of its gradient op (whose input
// slots carry the forward op's names).
const std::set<std::string>& Float32SlotsOfAny(const std::string& type) {
  const std::string suffix = "_grad";
  if (type.size() > suffix.size() &&
      type.compare(type.size() - suffix.size(), suffix.size(), suffix) == 0)
    return Float32Slots(type.substr(0, type.size() - suffix.size()));
  return Float32Slots(type);
}

// The type op #i computes in: that of its float inputs outside the float32
// slots, which must all agree (and those slots must be float32). kInt32
// when it reads no float input.
DataType RunType(const proto::BlockDesc& block, int i, DataType low) {
  const proto::OpDesc& op = block.ops(i);
  const std::set<std::string>& f32 = Float32SlotsOfAny(op.type());
  DataType run = DataType::kInt32;
  for (const auto& slot : op.inputs())
    for (const auto& name : slot.arguments()) {
      const proto::VarDesc* v = FindVarDesc(block, name);
      if (!IsMovable(v, low)) continue;
      const DataType t = VarDtype(*v);
      if (f32.count(slot.parameter())) {
        FLUID_ENFORCE(t == DataType::kFloat32, "mixed precision: op ", i, " '",
                      op.type(), "' reads ", Quote(name), " (", t, ") as ",
                      slot.parameter(), ", which must be float32");
        continue;
      }
      FLUID_ENFORCE(run == DataType::kInt32 || run == t, "mixed precision: op ",
                    i, " '", op.type(), "' mixes ", run, " and ", t,
                    " inputs (", Quote(name), " in ", slot.parameter(), ")");
      run = t;
    }
  return run;
}

void LintForwardOp(const proto::BlockDesc& block, int i, const AmpLists& lists,
                   DataType low, DataType run) {
  const proto::OpDesc& op = block.ops(i);
  if (lists.black.count(op.type()))
    FLUID_ENFORCE(run != low, "mixed precision: op ", i, " '", op.type(),
                  "' is on the float32 list but runs in ", low);
  if (lists.white.count(op.type()) && run == DataType::kFloat32 &&
      HasLowKernels(op, low) && !WritesPersistable(block, op))
    FLUID_THROW(ErrorCode::kInvalidArgument, "mixed precision: op ", i, " '",
                op.type(), "' is on the ", low, " list but is fed float32");
}

// No cast reads a cast; no var is cast twice to one type between writes.
void LintCasts(const proto::BlockDesc& block) {
  std::set<std::string> cast_outputs;
  std::map<std::pair<std::string, int32_t>, int> made;
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    if (!IsForwardOp(op)) break;
    if (op.type() == "cast") {
      const std::string in = OpInput(op, "X").at(0);
      FLUID_ENFORCE(!cast_outputs.count(in), "mixed precision: op ", i,
                    " casts ", Quote(in), ", itself a cast");
      const auto key =
          std::make_pair(in, GetOpAttrAs<int32_t>(op, "out_dtype"));
      FLUID_ENFORCE(!made.count(key), "mixed precision: op ", i, " casts ",
                    Quote(in), " again (op ", made[key], " did)");
      made.emplace(key, i);
      cast_outputs.insert(OpOutput(op, "Out").at(0));
    }
    for (const auto& n : OpOutputNames(op))
      for (auto it = made.begin(); it != made.end();)
        it = it->first.first == n && op.type() != "cast" ? made.erase(it)
                                                         : std::next(it);
  }
}

// Updates read float32 parameters and gradients; with fp16, each updated
// gradient is unscaled before the first optimizer op reads it.
void LintUpdates(const proto::BlockDesc& block, bool fp16) {
  std::set<std::string> unscaled;
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    if (op.type() == "check_finite_and_unscale")
      for (const auto& g : OpInput(op, "X")) unscaled.insert(g);
    if (!IsUpdateOp(op)) continue;
    const std::vector<std::string> pv = OpRoleVarOf(op);
    for (const auto& n : pv) {
      const proto::VarDesc* v = FindVarDesc(block, n);
      FLUID_ENFORCE(v == nullptr || VarDtype(*v) == DataType::kFloat32 ||
                        VarDtype(*v) == DataType::kFloat64,
                    "mixed precision: op ", i, " '", op.type(), "' updates ",
                    "with ", Quote(n), " in ", VarDtype(*v),
                    "; parameters and their gradients stay float32");
    }
    if (fp16 && pv.size() == 2)
      FLUID_ENFORCE(unscaled.count(pv[1]), "mixed precision: op ", i, " '",
                    op.type(), "' reads the gradient ", Quote(pv[1]),
                    " before check_finite_and_unscale divides it by the ",
                    "loss scaling");
  }
}

}  // namespace

AmpLists MakeAmpLists(const proto::AmpConfig& config) {
  AmpLists l = DefaultAmpLists();
  const OpRegistry& reg = OpRegistry::Global();
  for (const std::string& op : config.custom_white_list())
    FLUID_ENFORCE(std::find(config.custom_black_list().begin(),
                            config.custom_black_list().end(),
                            op) == config.custom_black_list().end(),
                  "mixed precision: op ", Quote(op), " is in both ",
                  "custom_white_list and custom_black_list");
  for (const auto* custom :
       {&config.custom_white_list(), &config.custom_black_list()})
    for (const std::string& op : *custom)
      FLUID_ENFORCE_CODE(reg.Has(op), ErrorCode::kNotFound,
                         "mixed precision: the custom list names op ",
                         Quote(op), ", which does not exist");
  for (const std::string& op : config.custom_white_list()) {
    l.black.erase(op);
    l.gray.erase(op);
    l.white.insert(op);
  }
  for (const std::string& op : config.custom_black_list()) {
    l.white.erase(op);
    l.gray.erase(op);
    l.black.insert(op);
  }
  return l;
}

DataType AmpDtype(const proto::AmpConfig& config) {
  if (config.dtype() == "bf16") return DataType::kBFloat16;
  if (config.dtype() == "fp16") return DataType::kFloat16;
  FLUID_THROW(ErrorCode::kInvalidArgument, "mixed precision: dtype must be ",
              "bf16 or fp16, got ", Quote(config.dtype()));
}

proto::ProgramDesc MixedPrecisionForward(const proto::ProgramDesc& program,
                                         const proto::AmpConfig& config) {
  CheckProgram(program, "program");
  CheckBlocks(program, "the program");
  proto::ProgramDesc out = program;
  if (!out.mixed_precision().empty()) return out;
  for (const auto& op : program.blocks(0).ops())
    FLUID_ENFORCE(IsForwardOp(op), "mixed precision: ", op.type(),
                  " is not a forward op; MixedPrecisionForward takes an ",
                  "evaluation program");
  RewriteForwardOps(&out, program.blocks(0).ops_size(), MakeAmpLists(config),
                    AmpDtype(config));
  out.set_mixed_precision(config.dtype());
  return out;
}

proto::TrainingJob MixedPrecisionRewrite(const proto::TrainingJob& job,
                                         const proto::AmpConfig& config) {
  CheckJob(job, "job");
  CheckBlocks(job.main(), "main");
  const std::string& stamped = job.main().mixed_precision();
  if (!stamped.empty()) {
    FLUID_ENFORCE(stamped == config.dtype(), "mixed precision: the program ",
                  "was rewritten for ", stamped, ", not ", config.dtype());
    return job;
  }
  const AmpLists lists = MakeAmpLists(config);
  const DataType low = AmpDtype(config);
  const std::string loss = OnlyLoss(job.main());
  proto::TrainingJob out = job;
  proto::BlockDesc* block = out.mutable_main()->mutable_blocks(0);
  const auto [b, r] = Phases(*block);
  const std::set<std::string> no_grad = NoGradVars(*block, b, r);
  const std::vector<proto::OpDesc> rest(block->ops().begin() + r,
                                        block->ops().end());
  DropGradientVars(block, b, r);
  RewriteForwardOps(out.mutable_main(), b, lists, low);
  const bool fp16 = low == DataType::kFloat16;
  std::string scaling;
  const std::string target =
      fp16 ? ScaleLoss(&out, loss, config, &scaling) : loss;
  AppendBackward(out.mutable_main(), target, no_grad);
  const std::vector<std::string> grads = UpdatedGrads(rest);
  std::string found;
  if (fp16 && !grads.empty())
    found = AppendUnscale(&out, grads, scaling, config);
  block = out.mutable_main()->mutable_blocks(0);
  for (proto::OpDesc op : rest) {
    if (!found.empty() && config.use_dynamic_loss_scaling() && IsUpdateOp(op))
      SetOpAttr(&op, kOpSkipIfAttr, found);
    *block->add_ops() = std::move(op);
  }
  out.mutable_main()->set_mixed_precision(config.dtype());
  if (out.has_test() && out.test().blocks_size() > 0)
    *out.mutable_test() = MixedPrecisionForward(out.test(), config);
  LintMixedPrecision(out.main(), config);
  return out;
}

void LintMixedPrecision(const proto::ProgramDesc& main,
                        const proto::AmpConfig& config) {
  FLUID_ENFORCE(main.mixed_precision() == config.dtype(),
                "mixed precision: ", "the program is stamped ",
                Quote(main.mixed_precision()), ", not ", config.dtype());
  const AmpLists lists = MakeAmpLists(config);
  const DataType low = AmpDtype(config);
  const proto::BlockDesc& block = main.blocks(0);
  for (int i = 0; i < block.ops_size(); ++i) {
    const DataType run = RunType(block, i, low);
    if (IsForwardOp(block.ops(i))) LintForwardOp(block, i, lists, low, run);
  }
  for (const auto& v : block.vars())
    FLUID_ENFORCE(!v.persistable() || !IsHalfDtype(VarDtype(v)),
                  "mixed precision: persistable ", Quote(v.name()), " is ",
                  VarDtype(v), "; parameters and state stay float32");
  LintCasts(block);
  LintUpdates(block, low == DataType::kFloat16);
}

}  // namespace fluid
