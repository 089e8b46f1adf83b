// Allreduce insertion: per bucket, its reduction (c_allreduce averaging
// the ranks' gradients; c_reducescatter under sharding stage 2;
// c_sparse_allreduce for a sparse gradient) and the c_wait that every op on
// the optimizer's side reading it comes after. With overlap_allreduce a
// bucket's reduction starts right after the last backward op writing it
// and its wait sits before the first op reading it; without, all of them
// sit just before the first optimize op. The lint (LintCollective) checks
// that every gradient is reduced exactly once, in between.
#include <cmath>
#include <map>

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "src/framework/wire_format.h"
#include "transpiler/collective_transpiler.h"
#include "transpiler/passes/pass.h"
#include "transpiler/program_query.h"
#include "transpiler/strategy.h"

namespace fluid {

namespace {

// Where each bucket's allreduce and wait go, as indices into the original
// op list: allreduce after op `after[k]`, wait before op `before[k]` (-1:
// at the start; the op count: at the end).
struct Placement {
  std::vector<int> after, before;
};

Placement PlaceCollectives(const proto::BlockDesc& src,
                           const std::vector<GradBucket>& buckets,
                           bool overlap) {
  int first_optimize = src.ops_size();
  for (int i = 0; i < src.ops_size(); ++i)
    if (HasRole(src.ops(i), OpRole::kOptimize)) {
      first_optimize = i;
      break;
    }
  Placement at;
  at.after.resize(buckets.size());
  at.before.resize(buckets.size());
  for (size_t k = 0; k < buckets.size(); ++k) {
    int last = -1, first = src.ops_size();
    for (const auto& g : buckets[k].grads) {
      last = std::max(last, LastBackwardWrite(src, g));
      first = std::min(first, FirstOptimizeRead(src, g));
    }
    FLUID_ENFORCE(last < first, "gradient bucket ", k,
                  " is read by an optimize op before the backward pass "
                  "finishes writing it");
    at.after[k] = overlap ? last : first_optimize - 1;
    at.before[k] = overlap ? first : first_optimize;
  }
  return at;
}

// The original ops with each bucket's allreduce and wait where `at` says.
void AddOpsWithCollectives(const proto::BlockDesc& src,
                           const std::vector<GradBucket>& buckets,
                           const Placement& at, const PassContext& ctx,
                           proto::BlockDesc* dst) {
  const bool scatter = ShardStage(ctx.strategy) >= 2;
  const bool average = ctx.strategy.average_gradients();
  auto allreduce = [&](size_t k) {
    AttributeMap attrs = {
        {"reduce_type", std::string(average ? "avg" : "sum")}};
    if (buckets[k].sparse) {
      attrs["sparse_dense_ratio"] = ctx.strategy.sparse_dense_ratio();
      return WithRole(
          MakeOp("c_sparse_allreduce", {{"X", {buckets[k].fused}}},
                 {{"Out", {buckets[k].fused}}, {"Handle", {buckets[k].handle}}},
                 attrs),
          OpRole::kCollective);
    }
    if (scatter && !buckets[k].whole) {
      attrs["nranks"] = int32_t{ctx.nranks};
      return WithRole(MakeOp("c_reducescatter", {{"X", {buckets[k].fused}}},
                             {{"Out", {ShardName(buckets[k].fused)}},
                              {"Handle", {buckets[k].handle}}},
                             attrs),
                      OpRole::kCollective);
    }
    return WithRole(
        MakeOp("c_allreduce", {{"X", {buckets[k].fused}}},
               {{"Out", {buckets[k].fused}}, {"Handle", {buckets[k].handle}}},
               attrs),
        OpRole::kCollective);
  };
  auto wait = [&](size_t k) {
    const std::string& fused = buckets[k].fused;
    const bool shard = scatter && !buckets[k].whole && !buckets[k].sparse;
    return WithRole(MakeOp("c_wait", {{"Handle", {buckets[k].handle}}},
                           {{"Out", {shard ? ShardName(fused) : fused}}}),
                    OpRole::kCollective);
  };
  for (size_t k = 0; k < buckets.size(); ++k)
    if (at.after[k] < 0) *dst->add_ops() = allreduce(k);
  for (int i = 0; i < src.ops_size(); ++i) {
    for (size_t k = 0; k < buckets.size(); ++k)
      if (at.before[k] == i) *dst->add_ops() = wait(k);
    *dst->add_ops() = src.ops(i);
    for (size_t k = 0; k < buckets.size(); ++k)
      if (at.after[k] == i) *dst->add_ops() = allreduce(k);
  }
  for (size_t k = 0; k < buckets.size(); ++k)
    if (at.before[k] == src.ops_size()) *dst->add_ops() = wait(k);
}

void InsertReductions(PassContext* ctx, proto::TrainingJob* job) {
  proto::BlockDesc* dst = job->mutable_main()->mutable_blocks(0);
  const proto::BlockDesc src = *dst;
  const Placement at =
      PlaceCollectives(src, ctx->buckets, ctx->strategy.overlap_allreduce());
  dst->clear_ops();
  AddOpsWithCollectives(src, ctx->buckets, at, *ctx, dst);
}

void LintReductions(const PassContext& ctx, const proto::TrainingJob& job) {
  // A sharded job's reductions are the shard pass's (LintSharded).
  if (ShardStage(ctx.strategy) != 0) return;
  LintCollective(job.main(), ctx.nranks, ctx.strategy.average_gradients());
}

// A compressed allreduce names a known wire format and carries float32.
void CheckCompression(const proto::BlockDesc& block, const proto::OpDesc& op,
                      const std::string& grad) {
  if (!HasOpAttr(op, "compression")) return;
  const std::string wire = GetOpAttrAs<std::string>(op, "compression");
  try {
    if (ParseWireFormat(wire) == WireFormat::kNative) return;
  } catch (const Error& e) {
    FLUID_THROW(ErrorCode::kInvalidArgument, "gradient '", grad,
                "' is allreduced with ", e.what());
  }
  const DataType dtype = VarDtype(GetVarDesc(block, grad));
  FLUID_ENFORCE(dtype == DataType::kFloat32, "gradient '", grad, "' is ",
                DataTypeName(dtype), " but its allreduce compresses it to ",
                wire, "; only float32 gradients are compressed");
}

// A sparse gradient is reduced by c_sparse_allreduce (uncompressed), a dense
// one by c_allreduce: each op refuses the other kind at run time.
void CheckReductionKind(const proto::OpDesc& op, const std::string& grad,
                        bool sparse) {
  if (sparse) {
    FLUID_ENFORCE(op.type() == "c_sparse_allreduce", "gradient '", grad,
                  "' holds sparse rows (SELECTED_ROWS) but is reduced by ",
                  op.type(), "; sparse gradients need c_sparse_allreduce");
    FLUID_ENFORCE(!HasOpAttr(op, "compression"), "gradient '", grad,
                  "' holds sparse rows, which are never compressed");
  } else {
    FLUID_ENFORCE(op.type() == "c_allreduce", "gradient '", grad,
                  "' is dense but is reduced by ", op.type(),
                  ", which takes sparse rows (SELECTED_ROWS) only");
  }
}

}  // namespace

extern const Pass kAllReducePass = {"allreduce", Always, InsertReductions,
                                    LintReductions};

void LintCollective(const proto::ProgramDesc& main, int nranks, bool average) {
  const proto::BlockDesc& block = main.blocks(0);
  std::map<std::string, std::string> grad_to_fused;
  for (const auto& op : block.ops()) {
    if (op.type() != "coalesce_tensor") continue;
    std::vector<std::string> fused = OpOutput(op, "FusedOutput");
    if (fused.empty()) continue;
    for (const auto& g : OpOutput(op, "Output")) grad_to_fused[g] = fused[0];
  }
  const float inv = 1.0f / static_cast<float>(nranks);
  for (const auto& pg : OptimizedParams(main)) {
    const std::string& grad = pg.second;
    auto f = grad_to_fused.find(grad);
    const std::string carrier = f == grad_to_fused.end() ? grad : f->second;
    const bool sparse =
        GetVarDesc(block, grad).type() == proto::VarDesc::SELECTED_ROWS;
    std::vector<int> reductions;
    int averaged = 0;
    for (int i = 0; i < block.ops_size(); ++i) {
      const proto::OpDesc& op = block.ops(i);
      const bool reduces =
          op.type() == "c_allreduce" || op.type() == "c_sparse_allreduce";
      if (reduces && ReadsVar(op, carrier)) {
        CheckReductionKind(op, grad, sparse);
        reductions.push_back(i);
        if (GetOpAttrAs<std::string>(op, "reduce_type") == "avg") ++averaged;
        CheckCompression(block, op, grad);
      }
      if (op.type() == "scale" && !reductions.empty() &&
          (ReadsVar(op, grad) || ReadsVar(op, carrier)) &&
          (WritesVar(op, grad) || WritesVar(op, carrier)) &&
          std::abs(GetOpAttrAs<float>(op, "scale") - inv) <
              1e-7f * inv + 1e-12f)
        ++averaged;
    }
    FLUID_ENFORCE(!reductions.empty(), "gradient '", grad, "' of parameter '",
                  pg.first, "' is never allreduced");
    FLUID_ENFORCE(reductions.size() == 1, "gradient '", grad,
                  "' of parameter '", pg.first, "' is allreduced ",
                  reductions.size(), " times");
    const int at = reductions[0];
    const int last_write = LastBackwardWrite(block, grad);
    const int first_read = FirstOptimizeRead(block, grad);
    FLUID_ENFORCE(last_write < at, "gradient '", grad, "' is allreduced (op #",
                  at, ") before the backward op #", last_write,
                  " that writes it");
    FLUID_ENFORCE(at < first_read, "gradient '", grad, "' is allreduced (op #",
                  at, ") after the ", TypeAt(block, first_read), " op #",
                  first_read, " that reads it");
    const std::vector<std::string> handle = OpOutput(block.ops(at), "Handle");
    if (!handle.empty()) {
      int waited = -1;
      for (int i = at + 1; i < block.ops_size() && waited < 0; ++i)
        if (block.ops(i).type() == "c_wait" &&
            ReadsVar(block.ops(i), handle[0]))
          waited = i;
      FLUID_ENFORCE(waited >= 0 && waited < first_read, "gradient '", grad,
                    "' is read by the ", TypeAt(block, first_read), " op #",
                    first_read, " before its allreduce is waited for");
    }
    if (average) {
      FLUID_ENFORCE(averaged == 1, "gradient '", grad, "' is averaged ",
                    averaged, " times; it must be averaged exactly once");
    } else {
      FLUID_ENFORCE(averaged == 0, "gradient '", grad,
                    "' is averaged but the job sums gradients");
    }
  }
}

}  // namespace fluid
