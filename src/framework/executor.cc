#include "src/framework/executor.h"

#include <set>

#include "src/framework/block_runner.h"
#include "src/framework/liveness.h"
#include "src/framework/timeline.h"

namespace fluid {

PreparedProgram::~PreparedProgram() {
  // Ops hold pointers into the local scope: release them first.
  ops_.clear();
  if (scope_ != nullptr) scope_->DeleteKid(local_scope_);
}

Executor::Executor(Place place, int num_threads)
    : place_(place),
      eager_deletion_(EagerDeletionByDefault()),
      device_(MakeDeviceContext(place, num_threads)) {}

void PreparedProgram::KeepAfterRun(const std::vector<std::string>& names) {
  const proto::BlockDesc& block = program_.blocks(block_id_);
  for (const auto& name : names) {
    FLUID_ENFORCE_CODE(FindVarDesc(block, name) != nullptr,
                       ErrorCode::kNotFound, "KeepAfterRun: ", Quote(name),
                       " is not a variable of the program");
    auto it = releasable_index_.find(name);
    if (it != releasable_index_.end()) releasable_[it->second].kept = true;
  }
}

std::vector<std::string> PreparedProgram::ReleasedAfter(size_t i) const {
  std::vector<std::string> names;
  if (i >= released_after_.size()) return names;
  for (int k : released_after_[i])
    if (!releasable_[k].kept) names.push_back(releasable_[k].name);
  return names;
}

Executor::~Executor() = default;

void CheckFeed(const proto::VarDesc& var, const Tensor& value) {
  FLUID_ENFORCE(value.dtype() == VarDtype(var), "feed ", Quote(var.name()),
                " has dtype ", DataTypeName(value.dtype()), " but the ",
                "program declares ", DataTypeName(VarDtype(var)));
  FLUID_ENFORCE(ShapeMatches(VarShape(var), value.shape()), "feed ",
                Quote(var.name()), " has shape ", value.shape(),
                " but the program declares ", VarShape(var));
  FLUID_ENFORCE(value.initialized() || value.numel() == 0, "feed ",
                Quote(var.name()), " holds no data");
  if (var.lod_level() > 0) {
    FLUID_ENFORCE(value.has_lod(), "feed ", Quote(var.name()),
                  " is declared with lod_level ", var.lod_level(),
                  " (a batch of sequences) but was fed a dense tensor without "
                  "sequence offsets; feed a LoD tensor "
                  "(fluid.create_lod_tensor, or DataFeeder)");
  }
  if (value.has_lod()) {
    FLUID_ENFORCE(value.shape().rank() >= 1, "feed ", Quote(var.name()),
                  " carries LoD offsets but is a scalar");
    if (value.lod_levels() > 1) {
      CheckLoDLevels(value.all_lod(), value.shape()[0],
                     "feed " + Quote(var.name()));
    } else {  // one level: no copy of the offsets each step
      CheckLoD(value.lod(), value.shape()[0], "feed " + Quote(var.name()));
    }
    FLUID_ENFORCE(var.lod_level() <= 1 || value.lod_levels() == var.lod_level(),
                  "feed ", Quote(var.name()), " is declared with lod_level ",
                  var.lod_level(), " but was fed ", value.lod_levels(),
                  " level(s) of sequence lengths ",
                  LoDToString(value.all_lod()));
  }
}

namespace {

// A persistable var that already holds a value (from another program run
// on the same scope) must hold what this program declares: a different
// shape means two programs use one name for different variables.
void CheckHeldValue(const proto::VarDesc& var, const Variable& held) {
  if (!held.HasValue() || !held.IsTensor()) return;
  const Tensor& t = held.GetTensor();
  if (!t.initialized()) return;
  const Shape declared = VarShape(var);
  for (int64_t d : declared)
    if (d < 0) return;  // not fully known: nothing to compare
  if (declared == t.shape() && VarDtype(var) == t.dtype()) return;
  FLUID_THROW(ErrorCode::kInvalidArgument, "variable '", var.name(),
              "' already holds a ", DataTypeName(t.dtype()), " ",
              t.shape().ToString(),
              " value in this scope, but the program "
              "declares it ",
              DataTypeName(VarDtype(var)), " ", declared.ToString(),
              ": two programs run on one scope use this "
              "name for different variables (layer names such as fc_0 are "
              "numbered per program); run each program in its own scope");
}

// Drops the memory `var` holds, keeping the variable, its dtype and shape
// (a sparse gradient keeps its height).
void DropMemory(Variable* var) {
  if (!var->HasValue()) return;
  if (var->IsSelectedRows()) {
    SelectedRows* rows = var->GetMutableSelectedRows();
    const int64_t height = rows->height();
    *rows = SelectedRows();
    rows->set_height(height);
    return;
  }
  if (!var->IsTensor()) return;
  // Keeps what a shape-only reader after the last use still asks for.
  var->GetMutableTensor()->ReleaseBuffer();
}

// Where the user's code built `op`, for an error leaving it: the first
// entry of its op_callstack, "" when it records none.
std::string BuiltAt(const proto::OpDesc& op) {
  const std::vector<std::string> stack = OpCallstackOf(op);
  return stack.empty() ? std::string() : stack.front();
}

}  // namespace

std::unique_ptr<PreparedProgram> Executor::Prepare(
    const proto::ProgramDesc& program, Scope* scope, int block_id) {
  FLUID_ENFORCE(scope != nullptr, "Prepare: null scope");
  scope->Settle();  // it reads the scope's vars
  CheckProgram(program, "program");
  FLUID_ENFORCE(block_id >= 0 && block_id < program.blocks_size(),
                "program has no block ", block_id);
  auto prepared = std::unique_ptr<PreparedProgram>(new PreparedProgram());
  prepared->program_ = program;
  prepared->scope_ = scope;
  prepared->local_scope_ = &scope->NewScope();
  prepared->block_id_ = block_id;
  const proto::BlockDesc& block = prepared->program_.blocks(block_id);

  std::set<std::string> declared;
  for (const auto& var : block.vars()) {
    CheckShapeFits(VarShape(var), VarDtype(var),
                   "variable " + Quote(var.name()));
    declared.insert(var.name());
    if (var.persistable()) {
      CheckHeldValue(var, *scope->Var(var.name()));
    } else {
      prepared->local_scope_->Var(var.name());
    }
  }

  std::set<std::string> written;
  std::set<std::string> needs_feed;
  std::set<std::string> persistable_read;
  // A parameter server's program reads what trainers send its loop, never
  // a feed; its loop op then says that no server runs here.
  const bool server =
      program.distribution() == proto::ProgramDesc::PSERVER_SERVER;
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    for (const auto& name : OpInputNames(op)) {
      if (name == kEmptyVarName) continue;
      FLUID_ENFORCE_CODE(declared.count(name), ErrorCode::kNotFound, "op #", i,
                         " ", Quote(op.type()), " reads variable ", Quote(name),
                         ", which the program does not declare");
      const proto::VarDesc& v = GetVarDesc(block, name);
      if (!server && !v.persistable() && !written.count(name) &&
          needs_feed.insert(name).second) {
        prepared->feed_targets_.push_back(name);
      }
      if (v.persistable() && persistable_read.insert(name).second) {
        prepared->persistable_inputs_.emplace_back(
            name, prepared->local_scope_->FindVar(name));
      }
    }
    for (const auto& name : OpOutputNames(op)) {
      if (name == kEmptyVarName) continue;
      FLUID_ENFORCE_CODE(declared.count(name), ErrorCode::kNotFound, "op #", i,
                         " ", Quote(op.type()), " writes variable ",
                         Quote(name), ", which the program does not declare");
      written.insert(name);
    }
    std::unique_ptr<OperatorBase> instance;
    try {
      instance = std::make_unique<OperatorBase>(op, block, place_);
    } catch (const Error& e) {
      throw e.WithOpContext(OpContext{op.type(), i, block_id, BuiltAt(op)});
    }
    instance->Bind(*prepared->local_scope_);
    prepared->ops_.push_back(std::move(instance));
  }
  CheckGradOpAttrs(block);
  PrepareSubBlocks(prepared.get());
  for (const auto& name : prepared->feed_targets_) {
    prepared->required_feeds_.push_back(
        {name, FindVarDesc(block, name), prepared->local_scope_->GetVar(name)});
  }
  // A parameter server's loop runs for ever, reading what trainers send.
  if (eager_deletion_ && !server) PlanReleases(prepared.get());
  return prepared;
}

namespace {

// Block `b` with the vars of its ancestors declared in it too (an inner
// declaration shadows an outer one): what a sub-block's ops are checked and
// given kernels against.
proto::BlockDesc VisibleBlock(const proto::ProgramDesc& program, int b) {
  proto::BlockDesc visible = program.blocks(b);
  std::set<std::string> seen;
  for (const auto& v : visible.vars()) seen.insert(v.name());
  for (int p = program.blocks(b).parent_idx(); p >= 0;
       p = program.blocks(p).parent_idx()) {
    for (const auto& v : program.blocks(p).vars())
      if (seen.insert(v.name()).second) *visible.add_vars() = v;
  }
  return visible;
}

constexpr char kSubBlockAttr[] = "sub_block";

// The blocks the ops of `block_id` run (their sub_block attrs), and theirs,
// in the order met.
std::vector<int> ReachableSubBlocks(const proto::ProgramDesc& program,
                                    int block_id) {
  std::vector<int> found;
  std::vector<bool> seen(program.blocks_size(), false);
  seen[block_id] = true;
  std::vector<int> todo = {block_id};
  while (!todo.empty()) {
    const int b = todo.back();
    todo.pop_back();
    for (const auto& op : program.blocks(b).ops()) {
      if (!HasOpAttr(op, kSubBlockAttr)) continue;
      const int sub = GetOpAttrAs<int32_t>(op, kSubBlockAttr);
      FLUID_ENFORCE(sub > 0 && sub < program.blocks_size(), "op ",
                    Quote(op.type()), " of block ", b, " runs block ", sub,
                    ", which the program (", program.blocks_size(),
                    " blocks) lacks");
      if (seen[sub]) continue;
      seen[sub] = true;
      found.push_back(sub);
      todo.push_back(sub);
    }
  }
  return found;
}

}  // namespace

void Executor::PrepareSubBlocks(PreparedProgram* prepared) const {
  const proto::ProgramDesc& program = prepared->program_;
  prepared->block_ops_.resize(program.blocks_size());
  for (int b : ReachableSubBlocks(program, prepared->block_id_)) {
    const proto::BlockDesc visible = VisibleBlock(program, b);
    for (int i = 0; i < visible.ops_size(); ++i) {
      const proto::OpDesc& op = visible.ops(i);
      try {
        prepared->block_ops_[b].push_back(
            std::make_unique<OperatorBase>(op, visible, place_));
      } catch (const Error& e) {
        throw e.WithOpContext(OpContext{op.type(), i, b, BuiltAt(op)});
      }
    }
  }
}

// The BlockRunner of one block's run: the scope its ops are bound in, and
// how to run the program's other blocks in a step scope.
class ExecutorBlockRunner : public BlockRunner {
 public:
  ExecutorBlockRunner(const Executor& executor, PreparedProgram* prepared,
                      Scope* scope, int depth = 0)
      : executor_(executor),
        prepared_(prepared),
        scope_(scope),
        depth_(depth) {}
  Scope* scope() const override { return scope_; }
  const proto::ProgramDesc& program() const override {
    return prepared_->program_;
  }
  void RunBlock(int block_id, Scope* scope) const override;

 private:
  // Blocks a program nests legitimately are few; a deeper run is a
  // program whose blocks run each other (a cycle), refused before the
  // stack runs out.
  static constexpr int kMaxDepth = 64;
  const Executor& executor_;
  PreparedProgram* prepared_;
  Scope* scope_;
  int depth_;
};

void ExecutorBlockRunner::RunBlock(int block_id, Scope* scope) const {
  FLUID_ENFORCE(scope != nullptr, "RunBlock: null scope");
  FLUID_ENFORCE(block_id >= 0 &&
                    block_id < static_cast<int>(prepared_->block_ops_.size()) &&
                    block_id != prepared_->block_id_,
                "RunBlock: block ", block_id,
                " is no sub-block of the program (it has ",
                prepared_->program_.blocks_size(), " blocks; block ",
                prepared_->block_id_, " is the one running)");
  FLUID_ENFORCE(depth_ < kMaxDepth, "RunBlock: block ", block_id, " would run ",
                kMaxDepth,
                " blocks deep; the program's control-flow ops run each "
                "other's blocks in a cycle");
  for (const auto& var : prepared_->program_.blocks(block_id).vars())
    if (!var.persistable()) scope->Var(var.name());
  const ExecutorBlockRunner inner(executor_, prepared_, scope, depth_ + 1);
  const auto& ops = prepared_->block_ops_[block_id];
  for (size_t i = 0; i < ops.size(); ++i) {
    OperatorBase& op = *ops[i];
    try {
      op.Bind(*scope);
      if (op.SkippedThisRun()) continue;
      if (op.schema().infer_shape()) {
        RuntimeInferShapeContext ctx(op);
        op.schema().infer_shape()(&ctx);
      }
      op.kernel()(ExecutionContext(op, *executor_.device_, &inner));
    } catch (const Error& e) {
      throw e.WithOpContext(OpContext{op.type(), static_cast<int>(i), block_id,
                                      BuiltAt(op.desc())});
    }
  }
}

void Executor::PlanReleases(PreparedProgram* prepared) const {
  const proto::BlockDesc& block =
      prepared->program_.blocks(prepared->block_id_);
  const std::vector<std::vector<std::string>> schedule = ReleaseSchedule(block);
  prepared->eager_deletion_ = true;
  prepared->released_after_.resize(schedule.size());
  for (size_t i = 0; i < schedule.size(); ++i) {
    for (const auto& name : schedule[i]) {
      const int k = static_cast<int>(prepared->releasable_.size());
      prepared->releasable_.push_back(
          {name, prepared->local_scope_->GetVar(name)});
      prepared->releasable_index_[name] = k;
      prepared->released_after_[i].push_back(k);
    }
  }
}

void Executor::PinForRun(PreparedProgram* prepared, const FeedList& feeds,
                         const std::vector<std::string>& fetch_names, bool on) {
  if (prepared->releasable_.empty()) return;
  auto pin = [prepared, on](const std::string& name) {
    auto it = prepared->releasable_index_.find(name);
    if (it != prepared->releasable_index_.end())
      prepared->releasable_[it->second].pinned = on;
  };
  for (const auto& feed : feeds) pin(feed.first);
  for (const auto& name : fetch_names) pin(name);
}

void Executor::CopyFeeds(const FeedList& feeds, const proto::BlockDesc& block,
                         Scope* local, Timeline* timeline) {
  const int64_t begin = timeline != nullptr ? TimelineNs() : 0;
  int64_t bytes = 0;
  for (const auto& feed : feeds) {
    const proto::VarDesc* desc = FindVarDesc(block, feed.first);
    FLUID_ENFORCE_CODE(desc != nullptr, ErrorCode::kNotFound, "feed ",
                       Quote(feed.first), " is not a variable of the program");
    CheckFeed(*desc, feed.second);
    local->GetVar(feed.first)
        ->GetMutableTensor()
        ->CopyFrom(feed.second, place_);
    bytes += static_cast<int64_t>(feed.second.bytes());
  }
  if (timeline != nullptr && !feeds.empty())
    timeline->RecordSpan(TimelineTrack::kData, "feed", begin, TimelineNs(),
                         bytes);
}

void Executor::Run(PreparedProgram* prepared, const FeedList& feeds,
                   const std::vector<std::string>& fetch_names,
                   std::vector<Tensor>* fetches) {
  FLUID_ENFORCE(prepared != nullptr, "Run: null prepared program");
  prepared->scope_->Settle(prepared->fence_owner_);
  const proto::BlockDesc& block =
      prepared->program_.blocks(prepared->block_id_);
  Scope* local = prepared->local_scope_;
  device_->MakeCurrent();  // another executor may have switched devices
  // Tracing: one load here, then one branch per op when it is off.
  Timeline* const timeline = CurrentTimeline();
  const int64_t run_begin = timeline != nullptr ? TimelineNs() : 0;
  CopyFeeds(feeds, block, local, timeline);
  for (const auto& req : prepared->required_feeds_) {
    bool fed = false;
    for (const auto& feed : feeds) fed = fed || feed.first == req.name;
    if (!fed) {
      FLUID_ENFORCE_CODE(false, ErrorCode::kInvalidArgument, "missing feed ",
                         Quote(req.name),
                         ": the program reads it before any op writes it");
    }
  }

  for (const auto& [name, var] : prepared->persistable_inputs_) {
    if (var == nullptr || !var->HasValue() || !var->IsTensor()) continue;
    const Tensor& t = var->GetTensor();
    FLUID_ENFORCE(!t.initialized() || t.place() == place_, "variable ",
                  Quote(name), " lives on ", t.place().ToString(),
                  " but this executor runs on ", place_.ToString(),
                  ": run the program with an executor on ",
                  t.place().ToString(), " (or copy the scope's values)");
  }
  PinForRun(prepared, feeds, fetch_names, true);
  try {
    RunOps(prepared, timeline);
  } catch (...) {
    PinForRun(prepared, feeds, fetch_names, false);
    throw;
  }
  PinForRun(prepared, feeds, fetch_names, false);

  device_->Wait();
  if (timeline != nullptr)
    timeline->RecordSpan(TimelineTrack::kSteps, "run", run_begin, TimelineNs(),
                         0);
  if (fetches != nullptr) {
    fetches->resize(fetch_names.size());
    for (size_t i = 0; i < fetch_names.size(); ++i) {
      Variable* v = local->FindVar(fetch_names[i]);
      FLUID_ENFORCE_CODE(v != nullptr, ErrorCode::kNotFound, "fetch ",
                         Quote(fetch_names[i]),
                         " is not a variable of the program");
      const Tensor& t = v->GetTensor();
      FLUID_ENFORCE(t.initialized(), "fetch ", Quote(fetch_names[i]),
                    " holds no value after the run");
      (*fetches)[i].CopyFrom(t, Place::CPU());
    }
  }
}

void Executor::RunOps(PreparedProgram* prepared, Timeline* timeline) {
  const bool eager = prepared->eager_deletion_;
  const ExecutorBlockRunner runner(*this, prepared, prepared->local_scope_);
  for (size_t i = 0; i < prepared->ops_.size(); ++i) {
    const OperatorBase& op = *prepared->ops_[i];
    const int64_t begin = timeline != nullptr ? TimelineNs() : 0;
    try {
      if (!op.SkippedThisRun()) {
        const OpSchema& schema = op.schema();
        if (schema.infer_shape()) {
          RuntimeInferShapeContext ctx(op);
          schema.infer_shape()(&ctx);
        }
        op.kernel()(ExecutionContext(op, *device_, &runner));
        if (timeline != nullptr) timeline->RecordOp(op, begin);
      }
    } catch (const Error& e) {
      throw e.WithOpContext(OpContext{op.type(), static_cast<int>(i),
                                      prepared->block_id_, BuiltAt(op.desc())});
    }
    if (!eager) continue;
    for (int k : prepared->released_after_[i]) {
      const PreparedProgram::Releasable& r = prepared->releasable_[k];
      if (!r.kept && !r.pinned) DropMemory(r.var);
    }
  }
}

void Executor::RunOnce(const proto::ProgramDesc& program, Scope* scope,
                       const FeedList& feeds,
                       const std::vector<std::string>& fetch_names,
                       std::vector<Tensor>* fetches) {
  auto prepared = Prepare(program, scope);
  Run(prepared.get(), feeds, fetch_names, fetches);
}

}  // namespace fluid
