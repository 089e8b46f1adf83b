#include "transpiler/sharding.h"

#include <algorithm>
#include <map>
#include <set>

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/pipeline.h"
#include "transpiler/program_query.h"
#include "transpiler/shard_gradient_ops.h"
#include "transpiler/shard_params.h"
#include "transpiler/strategy.h"
#include "transpiler/tensor_parallel.h"

namespace fluid {

namespace {

// The value a fill_constant of the startup program gives `var`.
float InitValue(const proto::BlockDesc& startup, const std::string& var) {
  for (const auto& op : startup.ops())
    if (op.type() == "fill_constant" &&
        OpOutput(op, "Out") == std::vector<std::string>{var})
      return GetOpAttrAs<float>(op, "value");
  FLUID_THROW(ErrorCode::kUnimplemented, "optimizer state '", var,
              "' is not initialised by a fill_constant in the startup "
              "program; a sharded optimizer cannot create its shard");
}

std::string ParamBuffer(size_t k) {
  return "fused_param_" + std::to_string(k) + "@COALESCED";
}

// The rewrite of one bucket: its vars, its ops and the startup's state.
class BucketShard {
 public:
  BucketShard(const proto::TrainingJob& job, const GradBucket& bucket, size_t k,
              int stage, int nranks, int64_t small_below = 0)
      : job_(job),
        b_(bucket),
        stage_(stage),
        nranks_(nranks),
        fused_(ParamBuffer(k)) {
    const proto::BlockDesc& src = job.main().blocks(0);
    for (int64_t n : b_.numels) total_ += n;
    // Stage 3 shards the parameters of a bucket of large ones whose
    // gradients are reduce-scattered (a whole bucket's chain reads them).
    shard_params_ = stage == 3 && !b_.whole;
    for (const auto& p : b_.params)
      shard_params_ &= VarShape(GetVarDesc(src, p)).numel() >= small_below;
    shard_ = (total_ + b_.padding) / nranks;
    dtype_ = VarDtype(GetVarDesc(src, b_.params[0]));
    const std::map<std::string, int> updates = UpdateOps(src);
    for (const auto& p : b_.params) ops_.push_back(src.ops(updates.at(p)));
  }

  const std::vector<std::string>& params() const { return b_.params; }
  bool whole() const { return b_.whole; }
  // The gradient shard this rank's update reads.
  std::string GradShard() const { return ShardName(b_.fused); }
  // Whether the parameters live as shards between their uses (stage 3).
  bool shards_params() const { return shard_params_; }

  // Stage 3: the bucket as the parameter sharding sees it.
  ParamShardBucket ParamShards() const {
    ParamShardBucket p;
    p.fused = fused_;
    p.shard = ShardName(fused_);
    p.handle = Handle();
    p.views = b_.params;
    p.numels = b_.numels;
    for (const auto& name : b_.params) {
      const Shape shape = VarShape(GetVarDesc(job_.main().blocks(0), name));
      p.shapes.push_back(shape.rank());
      for (int d = 0; d < shape.rank(); ++d) p.shapes.push_back(shape[d]);
    }
    p.grad_fused = b_.fused;
    p.grad_views = b_.grads;
    p.grad_handle = b_.handle;
    if (b_.padding > 0) {
      p.views.push_back(fused_ + "@PAD");
      p.numels.push_back(b_.padding);
      p.shapes.insert(p.shapes.end(), {1, b_.padding});
      p.grad_views.push_back(b_.pad);
    }
    p.dtype = dtype_;
    return p;
  }

  // Vars of the main program: the buffer, its shard, pads, handles, state.
  void DeclareVars(proto::BlockDesc* main, proto::BlockDesc* startup) {
    AddVarDesc(main, fused_, dtype_, Shape{total_ + b_.padding});
    if (shard_params_) {
      DeclareParamShard(main, startup);
    } else {
      AddVarDesc(main, ShardName(fused_), dtype_, Shape{shard_});
    }
    AddVarDesc(main, ShardName(b_.fused), dtype_, Shape{shard_});
    if (b_.padding > 0)
      AddVarDesc(main, fused_ + "@PAD", dtype_, Shape{b_.padding});
    AddVarDesc(main, Handle(), DataType::kInt64, Shape{})
        ->set_type(proto::VarDesc::COMM_HANDLE);
    for (const auto& slot : ops_[0].inputs()) {
      if (KindOf(job_.main().blocks(0), ops_[0], slot.parameter()) !=
          SlotKind::kState)
        continue;
      const std::string name = StateShard(slot.parameter());
      for (proto::BlockDesc* block : {main, startup})
        AddVarDesc(block, name, dtype_, Shape{shard_}, true)
            ->set_stop_gradient(true);
      const float init = StateInit(slot.parameter());
      *startup->add_ops() = MakeOp("fill_constant", {}, {{"Out", {name}}},
                                   {{"shape", std::vector<int64_t>{shard_}},
                                    {"value", init},
                                    {"dtype", static_cast<int32_t>(dtype_)}});
    }
  }

  // Stage 3: the shard is the persistable var, made by the startup from the
  // parameters, which become locals of the main program.
  void DeclareParamShard(proto::BlockDesc* main, proto::BlockDesc* startup) {
    for (proto::BlockDesc* block : {main, startup})
      AddVarDesc(block, ShardName(fused_), dtype_, Shape{shard_}, true);
    AddVarDesc(startup, fused_, dtype_, Shape{total_ + b_.padding});
    AddVarDesc(startup, fused_ + "@VIEW", dtype_, Shape{shard_});
    if (b_.padding > 0)
      AddVarDesc(startup, fused_ + "@PAD", dtype_, Shape{b_.padding});
    for (auto& v : *main->mutable_vars())
      if (std::find(b_.params.begin(), b_.params.end(), v.name()) !=
          b_.params.end())
        v.set_persistable(false);
  }

  // The parameters become views of one buffer, before anything reads them
  // (stage 3: where each gather needs them, ShardParams).
  std::vector<proto::OpDesc> Coalesce() const {
    if (shard_params_) return {};
    return {CoalesceOp()};
  }

  proto::OpDesc CoalesceOp() const {
    std::vector<std::string> views = b_.params;
    std::vector<int64_t> numels = b_.numels;
    if (b_.padding > 0) {
      views.push_back(fused_ + "@PAD");
      numels.push_back(b_.padding);
    }
    return WithRole(
        MakeOp("coalesce_tensor", {},
               {{"Output", views}, {"FusedOutput", {fused_}}},
               {{"dtype", static_cast<int32_t>(dtype_)}, {"numels", numels}}),
        OpRole::kCollective);
  }

  // The views of this rank's shards, before the first op that reads them.
  std::vector<proto::OpDesc> Views() const {
    std::vector<proto::OpDesc> ops;
    const AttributeMap n = {{"nranks", int32_t{nranks_}}};
    if (stage_ == 1 || b_.whole)
      ops.push_back(WithRole(MakeOp("shard_view", {{"X", {b_.fused}}},
                                    {{"Out", {ShardName(b_.fused)}}}, n),
                             OpRole::kCollective));
    if (shard_params_) return ops;  // the shard is the persistable var
    ops.push_back(WithRole(MakeOp("shard_view", {{"X", {fused_}}},
                                  {{"Out", {ShardName(fused_)}}}, n),
                           OpRole::kCollective));
    return ops;
  }

  // What replaces the bucket's update ops: one update, then the gather.
  std::vector<proto::OpDesc> Update() const {
    const AttributeMap n = {{"nranks", int32_t{nranks_}}};
    if (shard_params_) return {ShardedOp()};  // gathered where it is read
    return {ShardedOp(),
            WithRole(MakeOp("c_allgather", {{"X", {ShardName(fused_)}}},
                            {{"Out", {fused_}}, {"Handle", {Handle()}}}, n),
                     OpRole::kCollective)};
  }

  // The shard's twin of `op`, an op of the first parameter's chain of
  // gradient readers (clipping, regularization); declares its temporaries.
  proto::OpDesc Reader(const proto::OpDesc& op, const GradientReaders& r,
                       proto::BlockDesc* main) const {
    proto::OpDesc out = op;
    for (auto* slots : {out.mutable_inputs(), out.mutable_outputs()})
      for (auto& slot : *slots)
        for (auto& v : *slot.mutable_arguments()) v = ReaderVar(v, r);
    for (const auto& t : OpOutputNames(out)) {
      if (!IsShardVar(t) || FindVarDesc(*main, t) != nullptr) continue;
      const Shape shape =
          op.type() == "squared_l2_norm" ? Shape{1} : Shape{shard_};
      AddVarDesc(main, t, dtype_, shape)->set_stop_gradient(true);
    }
    return out;
  }

  // The name `var` of a chain takes on the shard (the leader's chain).
  std::string ReaderVar(const std::string& var,
                        const GradientReaders& r) const {
    const std::string& leader = b_.params[0];
    auto o = r.owner.find(var);
    if (o == r.owner.end()) return var;  // a constant, a global factor
    FLUID_ENFORCE(o->second == leader, "'", var,
                  "' is not of the first parameter of its bucket");
    if (var == leader) return ShardName(fused_);
    if (r.grad_of.count(var)) return ShardName(b_.fused);
    return ShardName(var);
  }

  // The leader's temporary in the position `var` holds in its own chain.
  std::string LeaderTemp(const std::string& var,
                         const GradientReaders& r) const {
    return ShardName(r.temps.at(b_.params[0]).at(r.TempIndex(var)));
  }

  // The wait for the gather: at the end of the step, or (idle_ok) in the
  // next run, where the first run finds no gather to wait for.
  proto::OpDesc Wait(bool idle_ok = false) const {
    proto::OpDesc op = WithRole(
        MakeOp("c_wait", {{"Handle", {Handle()}}}, {{"Out", {fused_}}}),
        OpRole::kCollective);
    if (idle_ok) SetOpAttr(&op, "idle_ok", true);
    return op;
  }

  // The vars whose values the gather writes: the buffer, its shard and
  // the parameters (views of it).
  std::set<std::string> Gathered() const {
    std::set<std::string> out(b_.params.begin(), b_.params.end());
    out.insert(fused_);
    out.insert(ShardName(fused_));
    return out;
  }

  // The gather's handle lives across runs (its wait is in the next one).
  void KeepHandle(proto::BlockDesc* main) const {
    for (auto& v : *main->mutable_vars())
      if (v.name() == Handle()) v.set_persistable(true);
  }

  // The per-parameter state this bucket no longer needs.
  std::set<std::string> RetiredState() const {
    std::set<std::string> out;
    for (const auto& op : ops_)
      for (const auto& slot : op.inputs())
        if (KindOf(job_.main().blocks(0), op, slot.parameter()) ==
            SlotKind::kState)
          out.insert(slot.arguments(0));
    return out;
  }

 private:
  std::string Handle() const { return fused_ + "@HANDLE"; }
  std::string StateShard(const std::string& slot) const {
    return fused_ + "@" + slot + "@SHARD";
  }

  // The state's initial value, the same for every parameter of the bucket.
  float StateInit(const std::string& slot) const {
    const proto::BlockDesc& startup = job_.startup().blocks(0);
    const float v = InitValue(startup, OpInput(ops_[0], slot)[0]);
    for (const auto& op : ops_)
      FLUID_ENFORCE(InitValue(startup, OpInput(op, slot)[0]) == v, "the ", slot,
                    " state of parameters '", b_.params[0], "' and '",
                    OpInput(op, "Param")[0],
                    "' starts from different values; a sharded optimizer "
                    "needs one value per bucket");
    return v;
  }

  // The first update op, its slots pointed at the shards.
  proto::OpDesc ShardedOp() const {
    proto::OpDesc op = ops_[0];
    const proto::BlockDesc& src = job_.main().blocks(0);
    auto point =
        [&](google::protobuf::RepeatedPtrField<proto::OpDesc::Var>* slots) {
          for (auto& slot : *slots) {
            const std::string s = slot.parameter();
            switch (KindOf(src, ops_[0], s)) {
              case SlotKind::kParam:
                slot.set_arguments(0, ShardName(fused_));
                break;
              case SlotKind::kGrad:
                slot.set_arguments(0, ShardName(b_.fused));
                break;
              case SlotKind::kState:
                slot.set_arguments(
                    0,
                    StateShard(s.size() > 3 && s.substr(s.size() - 3) == "Out"
                                   ? s.substr(0, s.size() - 3)
                                   : s));
                break;
              case SlotKind::kScalar:
                break;  // the learning rate, or the first parameter's scalars
            }
          }
        };
    point(op.mutable_inputs());
    point(op.mutable_outputs());
    SetOpAttr(&op, kOpRoleVarAttr,
              std::vector<std::string>{ShardName(fused_), ShardName(b_.fused)});
    return op;
  }

  const proto::TrainingJob& job_;
  const GradBucket& b_;
  const int stage_;
  const int nranks_;
  const std::string fused_;
  bool shard_params_ = false;
  int64_t total_ = 0;
  int64_t shard_ = 0;
  DataType dtype_ = DataType::kFloat32;
  std::vector<proto::OpDesc> ops_;  // the bucket's update ops, in order
};

// A sum of the chains' squared norms, sharded: the sum of the buckets'
// partial norms (each bucket's once), then their sum over the ranks.
// A replicated parameter's norm (a sparse gradient's, the same on every
// rank) joins scaled by 1/nranks, so that the sum over the ranks counts it
// once.
void AddNormSum(const proto::OpDesc& op, const GradientReaders& r,
                const std::vector<BucketShard>& shards,
                const std::map<std::string, size_t>& bucket_of, int nranks,
                proto::BlockDesc* main) {
  std::vector<std::string> partial;
  for (const auto& in : OpInput(op, "X")) {
    if (r.replicated.count(r.owner.at(in))) {
      const std::string per_rank = in + "@PER_RANK";
      const proto::VarDesc& v = GetVarDesc(*main, in);
      AddVarDesc(main, per_rank, VarDtype(v), VarShape(v))
          ->set_stop_gradient(true);
      *main->add_ops() =
          WithRole(MakeOp("scale", {{"X", {in}}}, {{"Out", {per_rank}}},
                          {{"scale", 1.0f / static_cast<float>(nranks)}}),
                   OpRole::kOptimize);
      partial.push_back(per_rank);
      continue;
    }
    FLUID_ENFORCE(!r.whole.count(r.owner.at(in)), "the squared norm '", in,
                  "' is of a whole gradient; it cannot join a sum of "
                  "shards' norms");
    const std::string t =
        shards[bucket_of.at(r.owner.at(in))].LeaderTemp(in, r);
    if (std::find(partial.begin(), partial.end(), t) == partial.end())
      partial.push_back(t);
  }
  proto::OpDesc sum = op;
  SetOpInput(&sum, "X", partial);
  *main->add_ops() = sum;
  const std::string total = OpOutput(op, "Out")[0];
  *main->add_ops() =
      WithRole(MakeOp("c_allreduce", {{"X", {total}}}, {{"Out", {total}}},
                      {{"reduce_type", std::string("sum")}}),
               OpRole::kCollective);
}

// fp16's loss-scaling op `op` (check_finite_and_unscale or
// update_loss_scaling), sharded: it reads and writes the gradient shards
// (the whole gradients of whole buckets), so that each rank unscales and
// checks its own shard. After the check, the found-infinite flag is
// max-reduced, so that every rank skips the same steps.
void AddLossScaling(const proto::OpDesc& op, const GradientReaders& r,
                    const std::vector<BucketShard>& shards,
                    const std::map<std::string, size_t>& bucket_of,
                    proto::BlockDesc* main) {
  std::vector<std::string> grads;
  for (const auto& g : OpInput(op, "X")) {
    auto p = r.grad_of.find(g);
    FLUID_ENFORCE(p != r.grad_of.end(), "the ", op.type(), " op reads '", g,
                  "', which no update reads; a sharded optimizer checks the "
                  "updated gradients only");
    auto k = bucket_of.find(p->second);  // none: replicated (sparse)
    const std::string v = k == bucket_of.end() || shards[k->second].whole()
                              ? g
                              : shards[k->second].GradShard();
    if (std::find(grads.begin(), grads.end(), v) == grads.end())
      grads.push_back(v);
  }
  proto::OpDesc sharded = op;
  SetOpInput(&sharded, "X", grads);
  SetOpOutput(&sharded, "Out", grads);
  *main->add_ops() = sharded;
  if (op.type() != "check_finite_and_unscale") return;
  const std::string found = OpOutput(op, "FoundInfinite")[0];
  *main->add_ops() =
      WithRole(MakeOp("c_allreduce", {{"X", {found}}}, {{"Out", {found}}},
                      {{"reduce_type", std::string("max")}}),
               OpRole::kCollective);
}

// Removes `vars` from a block's declarations and every op that touches
// them (their initialisation and broadcast in startup).
void Retire(const std::set<std::string>& vars, proto::BlockDesc* block) {
  auto* ops = block->mutable_ops();
  for (int i = ops->size() - 1; i >= 0; --i) {
    bool touches = false;
    for (const auto& n : OpInputNames(ops->Get(i))) touches |= vars.count(n);
    for (const auto& n : OpOutputNames(ops->Get(i))) touches |= vars.count(n);
    if (touches) ops->DeleteSubrange(i, 1);
  }
  auto* decls = block->mutable_vars();
  for (int i = decls->size() - 1; i >= 0; --i)
    if (vars.count(decls->Get(i).name())) decls->DeleteSubrange(i, 1);
}

// The first op of `block` that reads one of `vars`; ops_size() if none.
int FirstReader(const proto::BlockDesc& block,
                const std::set<std::string>& vars) {
  for (int i = 0; i < block.ops_size(); ++i)
    for (const auto& n : OpInputNames(block.ops(i)))
      if (vars.count(n)) return i;
  return block.ops_size();
}

// Overlapped gathers: each bucket's wait goes just before the first op
// that reads its parameters, so that the buckets the forward pass needs
// first are waited for first and the rest of the gathers overlap it.
void WaitBeforeFirstReaders(const std::vector<BucketShard>& shards,
                            proto::BlockDesc* main) {
  std::vector<std::pair<int, size_t>> at;  // (op index, bucket)
  for (size_t k = 0; k < shards.size(); ++k) {
    shards[k].KeepHandle(main);
    at.emplace_back(FirstReader(*main, shards[k].Gathered()), k);
  }
  std::stable_sort(at.begin(), at.end());
  google::protobuf::RepeatedPtrField<proto::OpDesc> old;
  old.Swap(main->mutable_ops());
  size_t next = 0;
  for (int i = 0; i <= old.size(); ++i) {
    for (; next < at.size() && at[next].first == i; ++next)
      *main->add_ops() = shards[at[next].second].Wait(/*idle_ok=*/true);
    if (i < old.size()) *main->add_ops() = old.Get(i);
  }
}

}  // namespace

void ShardUpdates(const proto::TrainingJob& job,
                  const std::vector<GradBucket>& buckets,
                  const proto::DistributedStrategy& strategy, int nranks,
                  proto::TrainingJob* out) {
  proto::BlockDesc* main = out->mutable_main()->mutable_blocks(0);
  proto::BlockDesc* startup = out->mutable_startup()->mutable_blocks(0);
  const GradientReaders readers = FindGradientReaders(*main);
  std::vector<BucketShard> shards;
  const proto::ShardingConfig& config = strategy.sharding_configs();
  FLUID_ENFORCE(ShardStage(strategy) != 3 || !config.overlap_gather(),
                "sharding_configs.overlap_gather applies to stages 1 and 2 "
                "(their gathers follow the update); stage 3 gathers each "
                "bucket ahead of its readers (prefetch_distance): turn "
                "overlap_gather off");
  // A sparse gradient's parameter stays whole on every rank (its bucket,
  // after the dense ones, keeps its c_sparse_allreduce): its update and
  // chain run as they are.
  for (size_t k = 0; k < buckets.size(); ++k)
    if (!buckets[k].sparse)
      shards.emplace_back(job, buckets[k], k, ShardStage(strategy), nranks,
                          config.param_persistence_threshold());
  std::map<std::string, size_t> bucket_of;  // param -> bucket
  std::set<std::string> retired;
  for (size_t k = 0; k < shards.size(); ++k) {
    for (const auto& p : shards[k].params()) bucket_of[p] = k;
    const std::set<std::string> r = shards[k].RetiredState();
    retired.insert(r.begin(), r.end());
  }
  Retire(retired, startup);
  google::protobuf::RepeatedPtrField<proto::OpDesc> old;
  old.Swap(main->mutable_ops());
  for (const auto& [param, temps] : readers.temps)
    if (!readers.whole.count(param) && !readers.replicated.count(param))
      retired.insert(temps.begin(), temps.end());
  Retire(retired, main);
  for (auto& s : shards) s.DeclareVars(main, startup);
  for (const auto& s : shards)
    for (auto& op : s.Coalesce()) *main->add_ops() = std::move(op);
  std::set<size_t> viewed, done;
  auto views = [&](size_t k) {
    if (viewed.insert(k).second)
      for (auto& v : shards[k].Views()) *main->add_ops() = std::move(v);
  };
  for (int i = 0; i < old.size(); ++i) {
    const proto::OpDesc& op = old.Get(i);
    const bool replicated =
        readers.replicated.count(readers.param[i]) ||
        (IsUpdateOp(op) && readers.replicated.count(OpInput(op, "Param")[0]));
    if (readers.kind[i] == GradientReaders::kNormSum) {
      AddNormSum(op, readers, shards, bucket_of, nranks, main);
    } else if (readers.kind[i] == GradientReaders::kLossScaling) {
      for (size_t k = 0; k < shards.size(); ++k) views(k);
      AddLossScaling(op, readers, shards, bucket_of, main);
    } else if (replicated) {
      *main->add_ops() = op;  // a sparse gradient's chain or update
    } else if (readers.kind[i] == GradientReaders::kChain) {
      const size_t k = bucket_of.at(readers.param[i]);
      if (shards[k].whole()) {
        *main->add_ops() = op;  // on the whole gradient, every parameter
        continue;
      }
      if (readers.param[i] != shards[k].params()[0]) continue;
      views(k);
      *main->add_ops() = shards[k].Reader(op, readers, main);
    } else if (IsUpdateOp(op)) {
      const size_t k = bucket_of.at(OpRoleVarOf(op)[0]);
      if (!done.insert(k).second) continue;  // the bucket is updated already
      views(k);
      for (auto& u : shards[k].Update()) *main->add_ops() = std::move(u);
    } else {
      *main->add_ops() = op;
    }
  }
  if (config.overlap_gather()) {
    WaitBeforeFirstReaders(shards, main);
  } else {
    for (const auto& s : shards)
      if (!s.shards_params()) *main->add_ops() = s.Wait();
  }
  std::vector<ParamShardBucket> sharded;
  for (const auto& s : shards)
    if (s.shards_params()) sharded.push_back(s.ParamShards());
  if (sharded.empty()) return;
  PlaceParamGathers(sharded, config.prefetch_distance(),
                    config.max_reuse_distance(), nranks, main);
  PlaceShardStartup(sharded, nranks, startup);
}

namespace {

// Index of the only op of `type` reading `x` (writing `out`, when given);
// an error naming `what` when there is none or more than one.
int OnlyOp(const proto::BlockDesc& block, const std::string& type,
           const std::string& x, const std::string& out,
           const std::string& what) {
  int found = -1, count = 0;
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    if (op.type() != type || OpInput(op, "X") != std::vector<std::string>{x})
      continue;
    if (!out.empty() && OpOutput(op, "Out") != std::vector<std::string>{out})
      continue;
    found = i;
    ++count;
  }
  FLUID_ENFORCE(count == 1, what, " has ", count, " ", type, " op(s) reading '",
                x, "'; it needs exactly one");
  return found;
}

// Index of the c_wait of `handle` after op #from, or -1.
int WaitAfter(const proto::BlockDesc& block, const std::string& handle,
              int from) {
  for (int i = from + 1; i < block.ops_size(); ++i)
    if (block.ops(i).type() == "c_wait" && ReadsVar(block.ops(i), handle))
      return i;
  return -1;
}

// Checks the reduction of the gradient shard `grad_shard` read by the
// update op #update: one averaging reduce-scatter (or allreduce then
// shard view) of its buffer, waited for before the update.
void LintGradShard(const proto::BlockDesc& block, const std::string& grad_shard,
                   int update, const std::string& what) {
  const std::string buffer =
      grad_shard.substr(0, grad_shard.size() - std::string("@SHARD").size());
  int reduce = -1;
  for (const char* type : {"c_reducescatter", "c_allreduce"})
    for (int i = 0; i < block.ops_size(); ++i)
      if (block.ops(i).type() == type && ReadsVar(block.ops(i), buffer)) {
        FLUID_ENFORCE(reduce < 0, "gradient buffer '", buffer,
                      "' is reduced more than once");
        reduce = i;
      }
  FLUID_ENFORCE(reduce >= 0, "gradient buffer '", buffer, "' of ", what,
                " is never reduced");
  FLUID_ENFORCE(
      GetOpAttrAs<std::string>(block.ops(reduce), "reduce_type") == "avg",
      "gradient buffer '", buffer, "' is summed, not averaged");
  const std::vector<std::string> h = OpOutput(block.ops(reduce), "Handle");
  const int waited = h.empty() ? reduce : WaitAfter(block, h[0], reduce);
  FLUID_ENFORCE(waited >= 0 && waited < update, "the update of ", what,
                " reads gradient shard '", grad_shard,
                "' before its reduction is waited for");
}

// Checks the replicated parameter `param` (its gradient `grad` holds
// sparse rows), updated whole by op #update: `grad` is averaged by one
// c_sparse_allreduce, waited for before the update, and the parameter is
// in no parameter buffer.
void LintReplicated(const proto::BlockDesc& block, const std::string& param,
                    const std::string& grad, int update) {
  int reduce = -1, count = 0;
  for (int i = 0; i < block.ops_size(); ++i)
    if (block.ops(i).type() == "c_sparse_allreduce" &&
        ReadsVar(block.ops(i), grad)) {
      reduce = i;
      ++count;
    }
  FLUID_ENFORCE(count == 1, "sparse gradient '", grad, "' of parameter '",
                param, "' is reduced by ", count,
                " c_sparse_allreduce op(s); it needs exactly one");
  FLUID_ENFORCE(
      GetOpAttrAs<std::string>(block.ops(reduce), "reduce_type") == "avg",
      "sparse gradient '", grad, "' is summed, not averaged");
  const std::vector<std::string> h = OpOutput(block.ops(reduce), "Handle");
  const int waited = h.empty() ? reduce : WaitAfter(block, h[0], reduce);
  FLUID_ENFORCE(waited >= 0 && waited < update, "the update of '", param,
                "' reads sparse gradient '", grad,
                "' before its reduction is waited for");
  for (const auto& op : block.ops())
    if (op.type() == "coalesce_tensor")
      for (const auto& v : OpOutput(op, "Output"))
        FLUID_ENFORCE(v != param, "parameter '", param,
                      "' has a sparse gradient but is in parameter buffer '",
                      OpOutput(op, "FusedOutput")[0],
                      "'; it is updated whole on every rank");
}

// Index of the c_wait of `handle` before op #to, or -1.
int WaitBefore(const proto::BlockDesc& block, const std::string& handle,
               int to) {
  for (int i = 0; i < to; ++i)
    if (block.ops(i).type() == "c_wait" && ReadsVar(block.ops(i), handle))
      return i;
  return -1;
}

// Checks that the gather op #gather of a parameter buffer is waited for:
// later in the step, or (overlapped) in the next run, by an idle_ok wait
// of a persistable handle before any op reads the buffer or the
// parameters laid out in it.
void LintGatherWait(const proto::BlockDesc& block, int gather,
                    const std::string& what) {
  const std::vector<std::string> h = OpOutput(block.ops(gather), "Handle");
  if (h.empty()) return;
  std::set<std::string> gathered = {OpOutput(block.ops(gather), "Out")[0],
                                    OpInput(block.ops(gather), "X")[0]};
  for (const auto& op : block.ops()) {
    if (op.type() != "coalesce_tensor") continue;
    const std::vector<std::string> fused = OpOutput(op, "FusedOutput");
    if (!fused.empty() && gathered.count(fused[0]))
      for (const auto& p : OpOutput(op, "Output")) gathered.insert(p);
  }
  // Ops [from, to) must not read the buffer while the gather is in flight.
  auto unread = [&](int from, int to, const std::string& when) {
    for (int i = from; i < to; ++i)
      for (const auto& n : OpInputNames(block.ops(i)))
        FLUID_ENFORCE(!gathered.count(n), "op #", i, " '", block.ops(i).type(),
                      "' reads '", n, "' of ", what, " ", when,
                      ": it would see a half-gathered buffer");
  };
  const int after = WaitAfter(block, h[0], gather);
  unread(gather + 1, after >= 0 ? after : block.ops_size(),
         "while its gather is in flight");
  if (after >= 0) return;
  const int wait = WaitBefore(block, h[0], gather);
  FLUID_ENFORCE(wait >= 0, what, "'s gather is never waited for");
  const proto::OpDesc& w = block.ops(wait);
  FLUID_ENFORCE(HasOpAttr(w, "idle_ok") && GetOpAttrAs<bool>(w, "idle_ok") &&
                    GetVarDesc(block, h[0]).persistable(),
                what, "'s gather is waited for before it is issued, but its ",
                "handle '", h[0], "' does not live across runs (it needs a ",
                "persistable handle and a c_wait with idle_ok)");
  unread(0, wait,
         "before the wait for the previous step's gather (op #" +
             std::to_string(wait) + ")");
}

}  // namespace

namespace {

// One bucket's buffer as its coalesce_tensor lays it out.
struct ParamBufferLayout {
  std::string buffer;
  std::vector<std::string> params;
  std::vector<int64_t> numels;  // of the params, then the padding if any
  DataType dtype;
};

std::vector<ParamBufferLayout> ParamBuffers(const proto::BlockDesc& block) {
  std::vector<ParamBufferLayout> out;
  std::set<std::string> seen;  // stage 3 lays a buffer out at each gather
  for (const auto& op : block.ops()) {
    const std::vector<std::string> fused = OpOutput(op, "FusedOutput");
    if (op.type() != "coalesce_tensor" || fused.empty() ||
        fused[0].rfind("fused_param_", 0) != 0 || !seen.insert(fused[0]).second)
      continue;
    ParamBufferLayout l{
        fused[0], OpOutput(op, "Output"),
        GetOpAttrAs<std::vector<int64_t>>(op, "numels"),
        static_cast<DataType>(GetOpAttrAs<int32_t>(op, "dtype"))};
    if (!l.params.empty() && l.params.back() == l.buffer + "@PAD")
      l.params.pop_back();
    out.push_back(std::move(l));
  }
  return out;
}

// Adds the per-parameter vars of slot `slot` of `layout` to `block` as
// views of the full buffer `full`, and returns the coalesce_tensor op.
proto::OpDesc StateViews(const ParamBufferLayout& layout,
                         const std::vector<std::string>& vars,
                         const proto::BlockDesc& original,
                         const std::string& full, proto::BlockDesc* block) {
  std::vector<std::string> views = vars;
  for (const auto& v : vars)
    if (FindVarDesc(*block, v) == nullptr)
      *block->add_vars() = GetVarDesc(original, v);
  int64_t total = 0;
  for (int64_t n : layout.numels) total += n;
  AddVarDesc(block, full, layout.dtype, Shape{total});
  if (layout.numels.size() > layout.params.size()) {
    views.push_back(full + "@PAD");
    AddVarDesc(block, views.back(), layout.dtype, Shape{layout.numels.back()});
  }
  return MakeOp("coalesce_tensor", {},
                {{"Output", views}, {"FusedOutput", {full}}},
                {{"dtype", static_cast<int32_t>(layout.dtype)},
                 {"numels", layout.numels}});
}

}  // namespace

ShardCheckpointPlan PlanShardCheckpoint(const proto::TrainingJob& original,
                                        const proto::TrainingJob& sharded) {
  const proto::BlockDesc& src = original.main().blocks(0);
  const proto::BlockDesc& main = sharded.main().blocks(0);
  const std::map<std::string, int> updates = UpdateOps(src);
  ShardCheckpointPlan plan;
  plan.gather = NewProgram();
  plan.gather_parameters = NewProgram();
  plan.scatter = NewProgram();
  proto::BlockDesc* gather = plan.gather.mutable_blocks(0);
  proto::BlockDesc* scatter = plan.scatter.mutable_blocks(0);
  // The state is sharded over a data-parallel group (all ranks, or the
  // ranks of one pipeline stage holding one tensor-parallel slice).
  const int nranks =
      DataParallelWorld(sharded.strategy(), sharded.main().nranks());
  const std::vector<std::string> stage3 = ParamShardBuffers(main);
  for (const ParamBufferLayout& layout : ParamBuffers(main)) {
    const proto::OpDesc& first = src.ops(updates.at(layout.params[0]));
    const bool params_sharded =
        std::find(stage3.begin(), stage3.end(), layout.buffer) != stage3.end();
    for (const auto& slot : first.inputs()) {
      const std::string& s = slot.parameter();
      SlotKind kind = KindOf(src, first, s);
      // Stage 3's parameters are kept as shards, like the state.
      if (kind == SlotKind::kParam && params_sharded) kind = SlotKind::kState;
      std::vector<std::string> vars;  // this slot's var of every parameter
      for (const auto& p : layout.params)
        vars.push_back(OpInput(src.ops(updates.at(p)), s)[0]);
      if (kind == SlotKind::kScalar) {
        for (size_t i = 1; i < vars.size(); ++i) {
          if (vars[i] == vars[0]) continue;  // shared (the learning rate)
          for (const auto& v : {vars[0], vars[i]})
            if (FindVarDesc(*gather, v) == nullptr)
              *gather->add_vars() = GetVarDesc(src, v);
          *gather->add_ops() =
              MakeOp("assign", {{"X", {vars[0]}}}, {{"Out", {vars[i]}}});
        }
        continue;
      }
      if (kind != SlotKind::kState) continue;
      const std::string shard = s == "Param"
                                    ? ShardName(layout.buffer)
                                    : layout.buffer + "@" + s + "@SHARD";
      const std::string full = layout.buffer + "@" + s + "@FULL";
      *gather->add_vars() = GetVarDesc(main, shard);
      *scatter->add_vars() = GetVarDesc(main, shard);
      *gather->add_ops() = StateViews(layout, vars, src, full, gather);
      *gather->add_ops() =
          MakeOp("c_allgather", {{"X", {shard}}}, {{"Out", {full}}},
                 {{"nranks", int32_t{nranks}}});
      if (s == "Param") {  // stage 3: also gathered alone (evaluation)
        proto::BlockDesc* alone = plan.gather_parameters.mutable_blocks(0);
        *alone->add_vars() = GetVarDesc(main, shard);
        *alone->add_ops() = StateViews(layout, vars, src, full, alone);
        *alone->add_ops() = gather->ops(gather->ops_size() - 1);
      }
      *scatter->add_ops() = StateViews(layout, vars, src, full, scatter);
      AddVarDesc(scatter, full + "@VIEW", layout.dtype,
                 VarShape(GetVarDesc(main, shard)));
      *scatter->add_ops() =
          MakeOp("shard_view", {{"X", {full}}}, {{"Out", {full + "@VIEW"}}},
                 {{"nranks", int32_t{nranks}}});
      *scatter->add_ops() =
          MakeOp("assign", {{"X", {full + "@VIEW"}}}, {{"Out", {shard}}});
      plan.per_parameter_state.insert(plan.per_parameter_state.end(),
                                      vars.begin(), vars.end());
    }
  }
  return plan;
}

bool IsSharded(const proto::ProgramDesc& main) {
  for (const auto& op : main.blocks(0).ops())
    if (op.type() == "shard_view") return true;
  return !ParamShardBuffers(main.blocks(0)).empty();  // stage 3
}

bool MakesShardState(const proto::OpDesc& op) {
  if (op.type() == "c_broadcast") return false;
  const std::vector<std::string> outs = OpOutputNames(op);
  if (!outs.empty() && std::all_of(outs.begin(), outs.end(), IsShardVar))
    return true;
  auto buffer = [](const std::string& n) {
    return n.rfind("fused_param_", 0) == 0;
  };
  const std::vector<std::string> ins = OpInputNames(op);
  return std::any_of(outs.begin(), outs.end(), buffer) ||
         std::any_of(ins.begin(), ins.end(), buffer);
}

proto::ProgramDesc ShardStateStartup(const proto::ProgramDesc& startup) {
  proto::ProgramDesc out = NewProgram();
  out.set_kind(proto::ProgramDesc::STARTUP);
  proto::BlockDesc* block = out.mutable_blocks(0);
  const proto::BlockDesc& src = startup.blocks(0);
  std::set<std::string> used;
  for (const auto& op : src.ops()) {
    if (!MakesShardState(op)) continue;
    *block->add_ops() = op;
    for (const auto& n : OpInputNames(op)) used.insert(n);
    for (const auto& n : OpOutputNames(op)) used.insert(n);
  }
  for (const auto& v : src.vars())
    if (IsShardVar(v.name()) || used.count(v.name())) *block->add_vars() = v;
  return out;
}

StateBytes PerRankStateBytes(const proto::ProgramDesc& main) {
  const proto::BlockDesc& block = main.blocks(0);
  auto bytes = [&](const std::string& name) {
    const proto::VarDesc& v = GetVarDesc(block, name);
    const Shape shape = VarShape(v);
    return shape.IsFullyKnown() ? TensorBytes(shape, VarDtype(v)) : 0;
  };
  StateBytes out;
  std::set<std::string> grads, state, param_shards;
  // Stage 3's parameters are locals, gathered and freed within the step
  // (as are their whole gradients): a rank holds their shards.
  for (const auto& v : block.vars()) {
    if (v.trainable() && v.persistable()) {
      out.parameters += bytes(v.name());
      grads.insert(v.name() + "@GRAD");
    }
  }
  for (const auto& op : block.ops()) {
    if (!IsUpdateOp(op)) continue;
    for (const auto& slot : op.inputs()) {
      const std::string& s = slot.parameter();
      if (s == "Param") {
        for (const auto& n : slot.arguments())
          if (GetVarDesc(block, n).persistable() && IsShardVar(n) &&
              param_shards.insert(n).second)
            out.parameters += bytes(n);
      }
      if (s == "Param" || s == "LearningRate") continue;
      for (const auto& n : slot.arguments())
        (s == "Grad" ? grads : state).insert(n);
    }
  }
  for (const auto& g : grads)
    if (FindVarDesc(block, g) != nullptr) out.gradients += bytes(g);
  for (const auto& s : state) out.optimizer_state += bytes(s);
  return out;
}

void LintSharded(const proto::ProgramDesc& main, int nranks) {
  const proto::BlockDesc& block = main.blocks(0);
  const std::vector<std::string> stage3 = ParamShardBuffers(block);
  std::map<std::string, std::string> owner;  // param -> its buffer
  std::set<std::string> linted;
  for (const auto& op : block.ops()) {
    const std::vector<std::string> fused = OpOutput(op, "FusedOutput");
    if (op.type() != "coalesce_tensor" || fused.empty() ||
        fused[0].rfind("fused_param_", 0) != 0)
      continue;
    const std::string& buffer = fused[0];
    if (!linted.insert(buffer).second) continue;  // stage 3 lays it out again
    for (const auto& p : OpOutput(op, "Output")) {
      if (p == buffer + "@PAD") continue;
      FLUID_ENFORCE(owner.emplace(p, buffer).second, "parameter '", p,
                    "' is in two parameter buffers ('", owner[p], "' and '",
                    buffer, "'): it would be updated twice");
    }
    const std::string shard = ShardName(buffer);
    const std::string what = "parameter buffer '" + buffer + "'";
    const bool params_sharded =
        std::find(stage3.begin(), stage3.end(), buffer) != stage3.end();
    const int view =
        params_sharded ? -1 : OnlyOp(block, "shard_view", buffer, shard, what);
    int update = -1, updates = 0;
    for (int i = 0; i < block.ops_size(); ++i)
      if (IsUpdateOp(block.ops(i)) &&
          OpInput(block.ops(i), "Param") == std::vector<std::string>{shard}) {
        update = i;
        ++updates;
      }
    FLUID_ENFORCE(updates == 1, what, " has ", updates,
                  " update ops of its shard; it needs exactly one");
    FLUID_ENFORCE(view < update, what, " is updated before its shard view");
    if (params_sharded) {  // gathered where read: LintParamShards
      LintGradShard(block, OpInput(block.ops(update), "Grad")[0], update, what);
      continue;
    }
    const int gather = OnlyOp(block, "c_allgather", shard, buffer, what);
    FLUID_ENFORCE(update < gather, what, " is gathered before its update");
    FLUID_ENFORCE(GetOpAttrAs<int32_t>(block.ops(gather), "nranks") == nranks,
                  what, " is gathered over ",
                  GetOpAttrAs<int32_t>(block.ops(gather), "nranks"),
                  " ranks, the program runs on ", nranks);
    LintGatherWait(block, gather, what);
    LintGradShard(block, OpInput(block.ops(update), "Grad")[0], update, what);
  }
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    if (!IsUpdateOp(op)) continue;
    const std::string param = OpInput(op, "Param")[0];
    const std::string grad = OpInput(op, "Grad")[0];
    if (GetVarDesc(block, grad).type() == proto::VarDesc::SELECTED_ROWS) {
      LintReplicated(block, param, grad, i);
      continue;
    }
    FLUID_ENFORCE(IsShardVar(param), "parameter '", param,
                  "' is updated whole in a sharded program: it belongs to "
                  "no parameter buffer");
  }
  LintParamShards(block);
}

}  // namespace fluid
