#include "transpiler/collective_transpiler.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <map>
#include <set>

#include "src/framework/hash.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "src/framework/wire_format.h"
#include "transpiler/distributed_job.h"
#include "transpiler/shard_optimizer.h"

namespace fluid {

namespace {

constexpr int kCollectiveRole = static_cast<int>(OpRole::kCollective);

bool HasRole(const proto::OpDesc& op, OpRole role) {
  return (OpRoleOf(op) & static_cast<int>(role)) != 0;
}

bool Writes(const proto::OpDesc& op, const std::string& var) {
  for (const auto& n : OpOutputNames(op))
    if (n == var) return true;
  return false;
}

bool Reads(const proto::OpDesc& op, const std::string& var) {
  for (const auto& n : OpInputNames(op))
    if (n == var) return true;
  return false;
}

// Index of the last backward op writing `var`, or -1.
int LastBackwardWrite(const proto::BlockDesc& block, const std::string& var) {
  int last = -1;
  for (int i = 0; i < block.ops_size(); ++i)
    if (HasRole(block.ops(i), OpRole::kBackward) && Writes(block.ops(i), var))
      last = i;
  return last;
}

// Index of the first op reading `var` on the optimizer's side, or
// ops_size(): an op that is neither backward nor collective (the gradient
// clips, the weight decay and the updates, which must all see the reduced
// gradient).
int FirstOptimizeRead(const proto::BlockDesc& block, const std::string& var) {
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    if (!HasRole(op, OpRole::kBackward) && !HasRole(op, OpRole::kCollective) &&
        Reads(op, var))
      return i;
  }
  return block.ops_size();
}

// The type of op #i, for messages ("end" past the last op).
std::string TypeAt(const proto::BlockDesc& block, int i) {
  return i < block.ops_size() ? block.ops(i).type() : std::string("end");
}

proto::OpDesc WithRole(proto::OpDesc op, int role) {
  SetOpAttr(&op, kOpRoleAttr, role);
  return op;
}

// Every batch_norm (and its gradient) reduces its statistics over the ranks.
void SyncBatchNormStats(proto::BlockDesc* block) {
  for (auto& op : *block->mutable_ops())
    if (op.type() == "batch_norm" || op.type() == "batch_norm_grad")
      SetOpAttr(&op, "sync_stats", true);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> OptimizedParams(
    const proto::ProgramDesc& main) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::set<std::string> seen;
  for (const auto& op : main.blocks(0).ops()) {
    if (!HasRole(op, OpRole::kOptimize)) continue;
    std::vector<std::string> rv = OpRoleVarOf(op);
    if (rv.size() != 2) continue;
    if (seen.insert(rv[1]).second) pairs.emplace_back(rv[0], rv[1]);
  }
  return pairs;
}

std::vector<GradBucket> PlanBuckets(
    const proto::ProgramDesc& main, int64_t bucket_bytes,
    const std::function<std::string(const std::string& param)>& group) {
  FLUID_ENFORCE(bucket_bytes > 0, "bucket size must be positive, got ",
                bucket_bytes);
  const proto::BlockDesc& block = main.blocks(0);
  struct Item {
    std::string param, grad;
    int last_write;
    std::string key;  // dtype and group: buckets never mix keys
    int64_t bytes;
  };
  std::vector<Item> items;
  for (const auto& pg : OptimizedParams(main)) {
    const proto::VarDesc& g = GetVarDesc(block, pg.second);
    if (g.type() == proto::VarDesc::SELECTED_ROWS) continue;
    Shape shape = VarShape(g);
    FLUID_ENFORCE(shape.IsFullyKnown(), "gradient '", pg.second, "' has shape ",
                  shape, "; a reduced gradient must have a ",
                  "fully known shape");
    int last = LastBackwardWrite(block, pg.second);
    FLUID_ENFORCE(last >= 0, "no backward op writes gradient '", pg.second,
                  "' of parameter '", pg.first, "'");
    std::string key = DataTypeName(VarDtype(g));
    if (group) key += "\n" + group(pg.first);
    items.push_back({pg.first, pg.second, last, key,
                     TensorBytes(shape, VarDtype(g),
                                 ("gradient " + Quote(pg.second)).c_str())});
  }
  std::stable_sort(
      items.begin(), items.end(),
      [](const Item& a, const Item& b) { return a.last_write < b.last_write; });
  std::vector<GradBucket> buckets;
  std::map<std::string, size_t> open;  // key -> index of its open bucket
  for (const auto& it : items) {
    auto o = open.find(it.key);
    if (o == open.end() || buckets[o->second].bytes + it.bytes > bucket_bytes) {
      buckets.emplace_back();
      open[it.key] = buckets.size() - 1;
      o = open.find(it.key);
    }
    GradBucket& b = buckets[o->second];
    const DataType dtype = VarDtype(GetVarDesc(block, it.grad));
    b.grads.push_back(it.grad);
    b.params.push_back(it.param);
    b.numels.push_back(it.bytes / static_cast<int64_t>(SizeOf(dtype)));
    b.bytes += it.bytes;
  }
  for (size_t k = 0; k < buckets.size(); ++k) {
    buckets[k].fused = "fused_grad_" + std::to_string(k) + "@COALESCED";
    buckets[k].handle = buckets[k].fused + "@HANDLE";
  }
  return buckets;
}

std::vector<GradBucket> SparseGradBuckets(const proto::ProgramDesc& main) {
  const proto::BlockDesc& block = main.blocks(0);
  std::vector<GradBucket> out;
  for (const auto& pg : OptimizedParams(main)) {
    if (GetVarDesc(block, pg.second).type() != proto::VarDesc::SELECTED_ROWS)
      continue;
    FLUID_ENFORCE(LastBackwardWrite(block, pg.second) >= 0,
                  "no backward op writes gradient '", pg.second,
                  "' of parameter '", pg.first, "'");
    GradBucket b;
    b.grads = {pg.second};
    b.params = {pg.first};
    b.fused = pg.second;
    b.handle = pg.second + "@HANDLE";
    b.sparse = true;
    out.push_back(std::move(b));
  }
  return out;
}

uint64_t StructureHash(const proto::ProgramDesc& program) {
  proto::ProgramDesc copy = program;
  copy.clear_structure_hash();
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream sos(&bytes);
    google::protobuf::io::CodedOutputStream cos(&sos);
    cos.SetSerializationDeterministic(true);
    copy.SerializeToCodedStream(&cos);
  }
  return Fnv1a64(bytes);
}

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

// The bucket buffers and handles, and a coalesce_tensor per bucket making
// its gradients views of one buffer.
void AddBuckets(const proto::BlockDesc& src,
                const std::vector<GradBucket>& buckets, proto::BlockDesc* dst) {
  for (const GradBucket& b : buckets) {
    DataType dtype = VarDtype(GetVarDesc(src, b.grads[0]));
    if (b.sparse) {  // reduced in place: a handle, no buffer
      AddVarDesc(dst, b.handle, DataType::kInt64, Shape{})
          ->set_type(proto::VarDesc::COMM_HANDLE);
      continue;
    }
    AddVarDesc(
        dst, b.fused, dtype,
        Shape{b.bytes / static_cast<int64_t>(SizeOf(dtype)) + b.padding});
    proto::VarDesc* h = AddVarDesc(dst, b.handle, DataType::kInt64, Shape{});
    h->set_type(proto::VarDesc::COMM_HANDLE);
    std::vector<std::string> views = b.grads;
    std::vector<int64_t> numels = b.numels;
    if (b.padding > 0) {  // zeros that make the buffer split evenly
      AddVarDesc(dst, b.pad, dtype, Shape{b.padding});
      views.push_back(b.pad);
      numels.push_back(b.padding);
    }
    *dst->add_ops() = WithRole(
        MakeOp("coalesce_tensor", {},
               {{"Output", views}, {"FusedOutput", {b.fused}}},
               {{"dtype", static_cast<int32_t>(dtype)}, {"numels", numels}}),
        kCollectiveRole);
  }
}

// The original ops with each bucket's allreduce and wait where `at` says.
void AddOpsWithCollectives(const proto::BlockDesc& src,
                           const std::vector<GradBucket>& buckets,
                           const Placement& at, const CollectiveConfig& config,
                           proto::BlockDesc* dst) {
  const bool scatter = config.shard_optimizer == 2;
  auto allreduce = [&](size_t k) {
    AttributeMap attrs = {
        {"reduce_type", std::string(config.average ? "avg" : "sum")}};
    if (buckets[k].sparse) {
      attrs["sparse_dense_ratio"] =
          static_cast<float>(config.sparse_dense_ratio);
      return WithRole(
          MakeOp("c_sparse_allreduce", {{"X", {buckets[k].fused}}},
                 {{"Out", {buckets[k].fused}}, {"Handle", {buckets[k].handle}}},
                 attrs),
          kCollectiveRole);
    }
    if (scatter && !buckets[k].whole) {
      attrs["nranks"] = int32_t{config.nranks};
      return WithRole(MakeOp("c_reducescatter", {{"X", {buckets[k].fused}}},
                             {{"Out", {ShardName(buckets[k].fused)}},
                              {"Handle", {buckets[k].handle}}},
                             attrs),
                      kCollectiveRole);
    }
    const bool compress =
        config.grad_compression != "none" &&
        VarDtype(GetVarDesc(src, buckets[k].grads[0])) == DataType::kFloat32;
    if (compress) attrs["compression"] = config.grad_compression;
    return WithRole(
        MakeOp("c_allreduce", {{"X", {buckets[k].fused}}},
               {{"Out", {buckets[k].fused}}, {"Handle", {buckets[k].handle}}},
               attrs),
        kCollectiveRole);
  };
  auto wait = [&](size_t k) {
    const std::string& fused = buckets[k].fused;
    const bool shard = scatter && !buckets[k].whole;
    return WithRole(MakeOp("c_wait", {{"Handle", {buckets[k].handle}}},
                           {{"Out", {shard ? ShardName(fused) : fused}}}),
                    kCollectiveRole);
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

}  // namespace

proto::TrainingJob CollectiveTranspile(const proto::TrainingJob& job,
                                       const CollectiveConfig& config) {
  FLUID_ENFORCE(config.nranks >= 1, "nranks must be >= 1, got ", config.nranks);
  ParseWireFormat(config.grad_compression);  // names a bad one
  CheckJob(job, "job");
  const JobForm form = FormOf(job.main());
  FLUID_ENFORCE(form == JobForm::kLocal, "the job is already distributed (",
                JobFormName(form), "); transpile the plain program");
  proto::TrainingJob out = job;
  const proto::BlockDesc& src = job.main().blocks(0);
  const bool sharded = config.shard_optimizer != 0;
  FLUID_ENFORCE(config.shard_optimizer >= 0 && config.shard_optimizer <= 2,
                "shard_optimizer must be 0, 1 or 2, got ",
                config.shard_optimizer);
  FLUID_ENFORCE(!sharded || config.grad_compression == "none",
                "gradient compression (", config.grad_compression,
                ") does not combine with a sharded optimizer yet; use one "
                "of the two");
  FLUID_ENFORCE(config.sparse_dense_ratio >= 0,
                "sparse_dense_ratio must not be negative, got ",
                config.sparse_dense_ratio);
  std::vector<GradBucket> buckets =
      sharded ? PlanShardedBuckets(job.main(), config)
              : PlanBuckets(job.main(), config.bucket_bytes);
  std::vector<GradBucket> sparse = SparseGradBuckets(job.main());
  if (sharded && !sparse.empty())
    FLUID_THROW(ErrorCode::kUnimplemented, "the sparse gradient '",
                sparse[0].grads[0],
                "' does not combine with a sharded optimizer yet; use "
                "is_sparse=False or shard_optimizer 0");
  for (GradBucket& b : sparse) buckets.push_back(std::move(b));
  const Placement at = PlaceCollectives(src, buckets, config.overlap);
  proto::BlockDesc* dst = out.mutable_main()->mutable_blocks(0);
  dst->clear_ops();
  AddBuckets(src, buckets, dst);
  AddOpsWithCollectives(src, buckets, at, config, dst);
  if (config.sync_batch_norm) SyncBatchNormStats(dst);

  // Startup: every rank takes rank 0's parameters and optimizer state.
  *out.mutable_startup() = StartupWithBroadcasts(job.startup());
  if (sharded) ShardUpdates(job, buckets, config, &out);

  proto::DistributedConfig* dc = out.mutable_distributed();
  dc->set_nranks(config.nranks);
  dc->set_bucket_bytes(config.bucket_bytes);
  dc->set_overlap(config.overlap);
  dc->set_average(config.average);
  dc->set_grad_compression(config.grad_compression);
  dc->set_shard_optimizer(config.shard_optimizer);
  dc->set_sparse_dense_ratio(static_cast<float>(config.sparse_dense_ratio));
  for (proto::ProgramDesc* p : {out.mutable_main(), out.mutable_startup()}) {
    SetForm(p, JobForm::kCollective);
    p->set_nranks(config.nranks);
    p->set_structure_hash(StructureHash(*p));
  }
  if (sharded) {
    LintSharded(out.main(), config.nranks);
  } else {
    LintCollective(out.main(), config.nranks, config.average);
  }
  return out;
}

std::vector<std::string> RunningStatVars(const proto::ProgramDesc& main) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& op : main.blocks(0).ops()) {
    if (op.type() != "batch_norm") continue;
    for (const char* slot : {"MeanOut", "VarianceOut"})
      for (const auto& n : OpOutput(op, slot))
        if (seen.insert(n).second) out.push_back(n);
  }
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
                 kCollectiveRole);
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
                 kCollectiveRole);
  }
  return out;
}

namespace {

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
      if (reduces && Reads(op, carrier)) {
        CheckReductionKind(op, grad, sparse);
        reductions.push_back(i);
        if (GetOpAttrAs<std::string>(op, "reduce_type") == "avg") ++averaged;
        CheckCompression(block, op, grad);
      }
      if (op.type() == "scale" && !reductions.empty() &&
          (Reads(op, grad) || Reads(op, carrier)) &&
          (Writes(op, grad) || Writes(op, carrier)) &&
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
        if (block.ops(i).type() == "c_wait" && Reads(block.ops(i), handle[0]))
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
