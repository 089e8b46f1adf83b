#include "transpiler/gradient_merge.h"

#include <map>
#include <set>
#include <vector>

#include "src/framework/loss_scaling_state.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/pipeline.h"
#include "transpiler/program_query.h"
#include "transpiler/sharding.h"
#include "transpiler/tensor_parallel.h"

namespace fluid {

namespace {

constexpr const char* kPrefix = "gradient merge: ";
// The learning-rate schedules' step counter (src/builder/lr_schedules.h's
// kLrCounter; the transpiler does not depend on the builder).
constexpr const char* kLrCounter = "@LR_DECAY_COUNTER@";

std::string SkipOf(const proto::OpDesc& op) {
  return HasOpAttr(op, kOpSkipIfAttr)
             ? GetOpAttrAs<std::string>(op, kOpSkipIfAttr)
             : std::string();
}

proto::OpDesc Skipped(proto::OpDesc op, const std::string& flag) {
  SetOpAttr(&op, kOpSkipIfAttr, flag);
  return op;
}

// A persistable of main, zeroed by startup.
void AddZeroedState(proto::TrainingJob* job, const std::string& name,
                    DataType dtype, const Shape& shape) {
  for (proto::ProgramDesc* p : {job->mutable_main(), job->mutable_startup()}) {
    FLUID_ENFORCE(FindVarDesc(p->blocks(0), name) == nullptr, kPrefix,
                  "the program already has a variable named ", Quote(name),
                  ", which gradient merge adds; rename it");
    AddVarDesc(p->mutable_blocks(0), name, dtype, shape, true)
        ->set_stop_gradient(true);
  }
  *job->mutable_startup()->mutable_blocks(0)->add_ops() =
      MakeOp("fill_constant", {}, {{"Out", {name}}},
             {{"shape", shape.ToVector()},
              {"value", 0.0f},
              {"dtype", static_cast<int32_t>(dtype)}});
}

void AddFlag(proto::BlockDesc* block, const std::string& name, DataType dtype) {
  FLUID_ENFORCE(FindVarDesc(*block, name) == nullptr, kPrefix,
                "the program already has a variable named ", Quote(name),
                ", which gradient merge adds; rename it");
  AddVarDesc(block, name, dtype, Shape{1})->set_stop_gradient(true);
}

// The updated gradients, checked: dense, float, written by the backward
// pass. Returns (param, grad) pairs.
std::vector<std::pair<std::string, std::string>> MergedGradients(
    const proto::ProgramDesc& main) {
  const proto::BlockDesc& block = main.blocks(0);
  const auto pairs = OptimizedParams(main);
  FLUID_ENFORCE(!pairs.empty(), kPrefix,
                "the program updates no parameter (call the optimizer's "
                "minimize first)");
  for (const auto& [param, grad] : pairs) {
    const proto::VarDesc& g = GetVarDesc(block, grad);
    FLUID_ENFORCE_CODE(
        g.type() != proto::VarDesc::SELECTED_ROWS, ErrorCode::kUnimplemented,
        kPrefix, "the gradient ", Quote(grad), " of ", Quote(param),
        " holds sparse rows (a layer built with is_sparse=True: embedding, "
        "nce, hsigmoid), which are not accumulated; build that layer with "
        "is_sparse=False, or turn gradient merge off");
    const DataType t = VarDtype(g);
    FLUID_ENFORCE(t == DataType::kFloat32, kPrefix, "the gradient ",
                  Quote(grad), " is ", DataTypeName(t),
                  "; only float32 gradients are accumulated");
    FLUID_ENFORCE(LastBackwardWrite(block, grad) >= 0, kPrefix,
                  "no backward op writes the gradient ", Quote(grad), " of ",
                  Quote(param));
  }
  return pairs;
}

// The three ops that follow the last backward write of `grad`.
std::vector<proto::OpDesc> MergeOps(const std::string& grad) {
  const std::string acc = GradMergeAccumulator(grad);
  return {
      WithRole(MakeOp("elementwise_add", {{"X", {acc}}, {"Y", {grad}}},
                      {{"Out", {acc}}}),
               OpRole::kBackward),
      Skipped(WithRole(MakeOp("elementwise_mul",
                              {{"X", {acc}}, {"Y", {kGradMergeScaleVar}}},
                              {{"Out", {grad}}}),
                       OpRole::kBackward),
              kGradMergeSkipVar),
      Skipped(
          WithRole(MakeOp("fill_zeros_like", {{"X", {acc}}}, {{"Out", {acc}}}),
                   OpRole::kBackward),
          kGradMergeSkipVar),
  };
}

proto::OpDesc StepOp(const proto::GradientMergeConfig& config, bool fp16) {
  std::vector<std::pair<std::string, std::vector<std::string>>> outs = {
      {"StepOut", {kGradMergeStepVar}},
      {"SkipUpdate", {kGradMergeSkipVar}},
      {"SkipStart", {kGradMergeStartVar}},
      {"Scale", {kGradMergeScaleVar}}};
  if (fp16) outs.push_back({"FoundInfinite", {kFoundInfVar}});
  return WithRole(
      MakeOp("gradient_merge_step", {{"Step", {kGradMergeStepVar}}}, outs,
             {{"k_steps", config.k_steps()}, {"avg", config.avg()}}),
      OpRole::kForward);
}

// Whether an op of `block` skips on fp16's found_infinite (dynamic loss
// scaling).
bool SkipsOnFoundInf(const proto::BlockDesc& block) {
  for (const auto& op : block.ops())
    if (SkipOf(op) == kFoundInfVar) return true;
  return false;
}

bool IsLrCounter(const proto::OpDesc& op) {
  return op.type() == "increment" && WritesVar(op, kLrCounter);
}

// Main's ops, rewritten: the step op first, each gradient's merge after its
// last backward write, the optimize ops and the schedule's counter guarded.
void RewriteOps(proto::TrainingJob* job, const proto::GradientMergeConfig& c,
                const std::vector<std::pair<std::string, std::string>>& pairs,
                bool fp16, bool dynamic) {
  proto::BlockDesc* block = job->mutable_main()->mutable_blocks(0);
  const proto::BlockDesc src = *block;
  std::map<int, std::vector<std::string>> merge_after;
  for (const auto& pg : pairs)
    merge_after[LastBackwardWrite(src, pg.second)].push_back(pg.second);
  block->clear_ops();
  *block->add_ops() = StepOp(c, fp16);
  for (int i = 0; i < src.ops_size(); ++i) {
    proto::OpDesc op = src.ops(i);
    const bool unscale = op.type() == "check_finite_and_unscale";
    if (IsLrCounter(op)) {
      op = Skipped(op, kGradMergeStartVar);
    } else if (HasRole(op, OpRole::kOptimize)) {
      const std::string skip = SkipOf(op);
      FLUID_ENFORCE(skip.empty() || skip == kFoundInfVar, kPrefix, "the ",
                    op.type(), " op #", i, " already skips on ", Quote(skip));
      op =
          Skipped(op, skip.empty() ? kGradMergeSkipVar : kGradMergeSkipFp16Var);
    }
    *block->add_ops() = std::move(op);
    if (dynamic && unscale)
      *block->add_ops() = WithRole(MakeOp("gradient_merge_skip",
                                          {{"SkipUpdate", {kGradMergeSkipVar}},
                                           {"FoundInfinite", {kFoundInfVar}}},
                                          {{"Out", {kGradMergeSkipFp16Var}}}),
                                   OpRole::kOptimize);
    auto m = merge_after.find(i);
    if (m == merge_after.end()) continue;
    for (const auto& g : m->second)
      for (proto::OpDesc& merge : MergeOps(g)) *block->add_ops() = merge;
  }
}

// The config of the gradient_merge_step op of `main`, if it has one.
const proto::OpDesc* StepOpOf(const proto::ProgramDesc& main) {
  for (const auto& op : main.blocks(0).ops())
    if (op.type() == "gradient_merge_step") return &op;
  return nullptr;
}

}  // namespace

std::string GradMergeAccumulator(const std::string& grad) {
  return grad + kGradMergeSuffix;
}

bool IsGradMergeAccumulator(const std::string& var) {
  const std::string suffix = kGradMergeSuffix;
  return var.size() > suffix.size() &&
         var.compare(var.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int GradientMergeSteps(const proto::ProgramDesc& main) {
  const proto::OpDesc* op = StepOpOf(main);
  return op == nullptr ? 0 : GetOpAttrAs<int32_t>(*op, "k_steps");
}

proto::TrainingJob GradientMergeRewrite(
    const proto::TrainingJob& job, const proto::GradientMergeConfig& config) {
  FLUID_ENFORCE(config.k_steps() >= 1,
                "DistributedStrategy.gradient_merge_configs.k_steps must be "
                ">= 1, got ",
                config.k_steps());
  CheckJob(job, "job");
  if (const proto::OpDesc* done = StepOpOf(job.main())) {
    const int k = GetOpAttrAs<int32_t>(*done, "k_steps");
    const bool avg = GetOpAttrAs<bool>(*done, "avg");
    FLUID_ENFORCE(k == config.k_steps() && avg == config.avg(), kPrefix,
                  "the program was already rewritten for k_steps ", k, " avg ",
                  avg, ", not k_steps ", config.k_steps(), " avg ",
                  config.avg());
    return job;
  }
  if (config.k_steps() == 1) return job;
  const auto pairs = MergedGradients(job.main());
  const bool fp16 = FindVarDesc(job.main().blocks(0), kFoundInfVar) != nullptr;
  const bool dynamic = fp16 && SkipsOnFoundInf(job.main().blocks(0));
  proto::TrainingJob out = job;
  AddZeroedState(&out, kGradMergeStepVar, DataType::kInt64, Shape{1});
  proto::BlockDesc* block = out.mutable_main()->mutable_blocks(0);
  AddFlag(block, kGradMergeSkipVar, DataType::kInt32);
  AddFlag(block, kGradMergeStartVar, DataType::kInt32);
  AddFlag(block, kGradMergeScaleVar, DataType::kFloat32);
  if (dynamic) AddFlag(block, kGradMergeSkipFp16Var, DataType::kInt32);
  for (const auto& [param, grad] : pairs) {
    const proto::VarDesc& p = GetVarDesc(job.main().blocks(0), param);
    AddZeroedState(&out, GradMergeAccumulator(grad),
                   VarDtype(GetVarDesc(job.main().blocks(0), grad)),
                   VarShape(p));
  }
  RewriteOps(&out, config, pairs, fp16, dynamic);
  LintGradientMerge(out.main());
  return out;
}

namespace {

// Index of the first op of `type` writing `out` and reading `in`, or -1.
int FindOp(const proto::BlockDesc& block, const std::string& type,
           const std::string& in, const std::string& out) {
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    if (op.type() == type && ReadsVar(op, in) && WritesVar(op, out)) return i;
  }
  return -1;
}

// One gradient's accumulate, merge and zero ops, in order around the
// backward pass and the optimizer.
void LintMerge(const proto::BlockDesc& block, const std::string& grad) {
  const std::string acc = GradMergeAccumulator(grad);
  const proto::VarDesc* a = FindVarDesc(block, acc);
  FLUID_ENFORCE(a != nullptr && a->persistable(), kPrefix, "the gradient ",
                Quote(grad), " has no persistable accumulator ", Quote(acc));
  const int add = FindOp(block, "elementwise_add", grad, acc);
  const int merge = FindOp(block, "elementwise_mul", acc, grad);
  const int zero = FindOp(block, "fill_zeros_like", acc, acc);
  FLUID_ENFORCE(add >= 0 && merge > add && zero > merge, kPrefix,
                "the gradient ", Quote(grad), " is not accumulated into ",
                Quote(acc), ", merged and zeroed in that order");
  FLUID_ENFORCE(SkipOf(block.ops(add)).empty(), kPrefix, "the accumulation ",
                "of ", Quote(grad), " (op #", add, ") skips on ",
                Quote(SkipOf(block.ops(add))),
                "; it must run on every micro-step");
  for (int at : {merge, zero})
    FLUID_ENFORCE(SkipOf(block.ops(at)) == kGradMergeSkipVar, kPrefix, "the ",
                  block.ops(at).type(), " op #", at, " of ", Quote(grad),
                  " runs on every micro-step; it must skip on ",
                  kGradMergeSkipVar);
  for (int i = add + 1; i < block.ops_size(); ++i)
    FLUID_ENFORCE(i == merge || !HasRole(block.ops(i), OpRole::kBackward) ||
                      !WritesVar(block.ops(i), grad),
                  kPrefix, "the backward op #", i, " (", block.ops(i).type(),
                  ") writes ", Quote(grad), " after its accumulation (op #",
                  add, ")");
  const int read = FirstOptimizeRead(block, grad);
  FLUID_ENFORCE(read > merge, kPrefix, "the ", TypeAt(block, read), " op #",
                read, " reads ", Quote(grad), " before it is merged (op #",
                merge, ")");
}

// The skip flag `op` (#i) must carry, or "" when it runs every micro-step.
std::string WantedSkip(const proto::OpDesc& op, int combine_at, int i) {
  if (IsLrCounter(op)) return kGradMergeStartVar;
  if (op.type() == "gradient_merge_skip" || op.type() == "gradient_merge_step")
    return "";
  // The merge ops of a gradient: LintMerge checks them.
  for (const auto& n : OpOutputNames(op))
    if (IsGradMergeAccumulator(n)) return SkipOf(op);
  for (const auto& n : OpInputNames(op))
    if (IsGradMergeAccumulator(n) && !HasRole(op, OpRole::kOptimize))
      return SkipOf(op);
  if (HasRole(op, OpRole::kOptimize))
    return SkipOf(op) == kGradMergeSkipFp16Var && combine_at >= 0 &&
                   combine_at < i
               ? kGradMergeSkipFp16Var
               : kGradMergeSkipVar;
  if (IsDataCollective(op)) return kGradMergeSkipVar;
  return "";
}

}  // namespace

void LintGradientMerge(const proto::ProgramDesc& main) {
  const proto::BlockDesc& block = main.blocks(0);
  int step_at = -1, combine_at = -1;
  for (int i = 0; i < block.ops_size(); ++i) {
    const std::string& t = block.ops(i).type();
    if (t == "gradient_merge_skip") combine_at = i;
    if (t != "gradient_merge_step") continue;
    FLUID_ENFORCE(step_at < 0, kPrefix, "two gradient_merge_step ops (#",
                  step_at, " and #", i, ")");
    step_at = i;
  }
  FLUID_ENFORCE(step_at >= 0, kPrefix,
                "the program has no gradient_merge_step");
  const std::set<std::string> flags = {kGradMergeSkipVar, kGradMergeStartVar,
                                       kGradMergeScaleVar};
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    for (const auto& n : OpInputNames(op))
      FLUID_ENFORCE(!flags.count(n) || i > step_at, kPrefix, "the ", op.type(),
                    " op #", i, " reads ", Quote(n),
                    " before gradient_merge_step (op #", step_at,
                    ") writes it");
    const std::string want = WantedSkip(op, combine_at, i);
    const std::string have = SkipOf(op);
    if (want == have) continue;
    FLUID_ENFORCE(!IsDataCollective(op), kPrefix, "the ", op.type(), " op #", i,
                  " moves data between ranks on every micro-step; it "
                  "must run on merged steps only (op_skip_if = ",
                  kGradMergeSkipVar, ")");
    FLUID_THROW(ErrorCode::kInvalidArgument, kPrefix, "the ", op.type(),
                " op #", i, " skips on ", Quote(have), " but must skip on ",
                Quote(want),
                want == kGradMergeStartVar
                    ? " (the schedule advances once per merged step)"
                    : " (an optimize op runs on merged steps only)");
  }
  std::set<std::string> grads;
  for (const auto& v : block.vars())
    if (IsGradMergeAccumulator(v.name()))
      grads.insert(v.name().substr(
          0, v.name().size() - std::string(kGradMergeSuffix).size()));
  for (const auto& g : grads) LintMerge(block, g);
  if (IsSharded(main)) return;  // the updates read gradient shards
  for (const auto& pg : OptimizedParams(main))
    FLUID_ENFORCE(grads.count(pg.second), kPrefix, "the gradient ",
                  Quote(pg.second), " of ", Quote(pg.first),
                  " is updated without being accumulated");
}

bool IsDataCollective(const proto::OpDesc& op) {
  // Tensor parallelism's sums of activations and of their gradients belong
  // to each micro-step's passes (its sums of a clip's norms are optimize
  // ops, which skip as such).
  if (HasOpAttr(op, kTpRoleAttr)) return false;
  // A pipeline's waits for its sends and its broadcast of the last stage's
  // results belong to every step too.
  if (IsPipelineStepCollective(op)) return false;
  const std::string& t = op.type();
  if (t == "c_wait")
    return !HasOpAttr(op, "idle_ok") || !GetOpAttrAs<bool>(op, "idle_ok");
  return t == "c_allreduce" || t == "c_reducescatter" ||
         t == "c_sparse_allreduce" || t == "c_allgather" ||
         t == "c_broadcast" || t == "c_barrier";
}

}  // namespace fluid
