#include "transpiler/collective_transpiler.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <set>

#include "src/framework/hash.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/control_flow_lint.h"
#include "transpiler/distributed_job.h"
#include "transpiler/gradient_merge.h"
#include "transpiler/local_rewrites.h"
#include "transpiler/passes/pass.h"
#include "transpiler/pipeline.h"
#include "transpiler/recompute.h"
#include "transpiler/strategy.h"
#include "transpiler/tensor_parallel.h"

namespace fluid {

extern const Pass kBucketingPass, kAllReducePass, kCompressionPass,
    kSyncBatchNormPass, kStartupBroadcastPass, kShardUpdatesPass,
    kGradientMergePass;

namespace {

// The collective rewrite, in order.
const std::vector<const Pass*>& CollectivePasses() {
  static const std::vector<const Pass*> passes = {
      &kBucketingPass,     &kAllReducePass,        &kCompressionPass,
      &kSyncBatchNormPass, &kStartupBroadcastPass, &kShardUpdatesPass,
      &kGradientMergePass,
  };
  return passes;
}

}  // namespace

std::vector<std::string> CollectivePassNames(
    const proto::DistributedStrategy& strategy) {
  std::vector<std::string> names;
  for (const Pass* p : CollectivePasses())
    if (p->applies(strategy)) names.push_back(p->name);
  return names;
}

proto::TrainingJob CollectiveTranspile(
    const proto::TrainingJob& job, const proto::DistributedStrategy& strategy,
    int nranks, int rank) {
  FLUID_ENFORCE(nranks >= 1, "nranks must be >= 1, got ", nranks);
  CheckJob(job, "job");
  const JobForm form = FormOf(job.main());
  FLUID_ENFORCE(form == JobForm::kLocal, "the job is already distributed (",
                JobFormName(form), "); transpile the plain program");
  ValidateStrategy(strategy, &job);
  proto::DistributedStrategy canonical = CanonicalStrategy(strategy);
  // Mixed precision sends its gradients in its 16-bit type (reduced or
  // reduce-scattered), unless the strategy says how they travel.
  if (canonical.amp() && !strategy.has_grad_compression())
    canonical.set_grad_compression(canonical.amp_configs().dtype());
  const int tp = TensorParallelDegree(canonical, nranks);
  if (tp > 1) RefuseWithTensorParallel(job, canonical);
  proto::TrainingJob local = LocalRewrites(job, canonical);
  if (tp > 1) {
    *local.mutable_strategy() = canonical;
    local = TensorParallelRewrite(local, tp);
  }
  const int pp = PipelineStages(canonical, nranks);
  if (pp > 1) {
    *local.mutable_strategy() = canonical;
    local = PipelineStageJob(PipelineRewrite(local), StageOf(rank, nranks, pp));
  }
  // The data-parallel passes see the data-parallel group.
  PassContext ctx{local, canonical, nranks / (tp * pp), {}};
  proto::TrainingJob out = local;
  std::vector<const Pass*> ran;
  for (const Pass* p : CollectivePasses()) {
    if (!p->applies(canonical)) continue;
    p->run(&ctx, &out);
    ran.push_back(p);
  }
  *out.mutable_strategy() = canonical;
  for (proto::ProgramDesc* p : {out.mutable_main(), out.mutable_startup()}) {
    if (tp > 1 || pp > 1) UseDataParallelRing(p);
    SetForm(p, JobForm::kCollective);
    p->set_nranks(nranks);
    p->set_structure_hash(StructureHash(*p));
  }
  for (const Pass* p : ran)
    if (p->lint != nullptr) p->lint(ctx, out);
  if (tp > 1) LintTensorParallel(out, tp);
  LintControlFlow(out.main());
  return out;
}

uint64_t StructureHash(const proto::ProgramDesc& program) {
  proto::ProgramDesc copy = program;
  copy.clear_structure_hash();
  // Where the user's code built each op is no part of the structure: ranks
  // running one script from different paths hold the same program.
  ClearOpAnnotations(&copy);
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream sos(&bytes);
    google::protobuf::io::CodedOutputStream cos(&sos);
    cos.SetSerializationDeterministic(true);
    copy.SerializeToCodedStream(&cos);
  }
  return Fnv1a64(bytes);
}

std::vector<std::string> RunningStatVars(const proto::ProgramDesc& main) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& op : main.blocks(0).ops()) {
    // A recompute replay writes its statistics to scratch copies.
    if (op.type() != "batch_norm" || HasOpAttr(op, kRecomputeSegmentAttr))
      continue;
    for (const char* slot : {"MeanOut", "VarianceOut"})
      for (const auto& n : OpOutput(op, slot))
        if (seen.insert(n).second) out.push_back(n);
  }
  // Gradient merge's accumulators: each rank's sum of its own micro-steps'
  // gradients. Their average on every rank merges to the same gradient
  // (the merge allreduces them, and allreduce is linear), so a checkpoint
  // of the average resumes mid-accumulation on any rank.
  for (const auto& v : main.blocks(0).vars())
    if (v.persistable() && IsGradMergeAccumulator(v.name()))
      out.push_back(v.name());
  return out;
}

proto::ProgramDesc StatSyncProgram(const proto::ProgramDesc& main) {
  proto::ProgramDesc out = NewProgram();
  proto::BlockDesc* block = out.mutable_blocks(0);
  const proto::BlockDesc& src = main.blocks(0);
  for (const std::string& name : RunningStatVars(main)) {
    const proto::VarDesc* v = FindVarDesc(src, name);
    FLUID_ENFORCE(v != nullptr && v->persistable(), "the running statistic '",
                  name,
                  "' of a batch_norm op must be a declared persistable "
                  "var");
    *block->add_vars() = *v;
    *block->add_ops() =
        WithRole(MakeOp("c_allreduce", {{"X", {name}}}, {{"Out", {name}}},
                        {{"reduce_type", std::string("avg")}}),
                 OpRole::kCollective);
  }
  return out;
}

bool HasStartupBroadcasts(const proto::ProgramDesc& startup) {
  for (const auto& op : startup.blocks(0).ops())
    if (op.type() == "c_broadcast") return true;
  return false;
}

proto::ProgramDesc StartupWithBroadcasts(const proto::ProgramDesc& startup) {
  proto::ProgramDesc out = startup;
  if (HasStartupBroadcasts(startup)) return out;
  proto::BlockDesc* st = out.mutable_blocks(0);
  for (const auto& v : startup.blocks(0).vars()) {
    if (!v.persistable()) continue;
    *st->add_ops() =
        WithRole(MakeOp("c_broadcast", {{"X", {v.name()}}},
                        {{"Out", {v.name()}}}, {{"root", int32_t{0}}}),
                 OpRole::kCollective);
  }
  return out;
}

}  // namespace fluid
