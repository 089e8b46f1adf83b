// The executor: runs one block of a program (block 0 unless asked for
// another), op by op, on a scope. The program's other blocks are the
// sub-blocks of control-flow ops (while): their ops are instantiated by
// Prepare too, and run, each time the control-flow op asks, in step scopes
// that op makes (src/framework/block_runner.h, docs/design.md "Control
// flow").
//
// Prepare() does all per-program work once: it checks the program, creates
// every variable (persistable ones in the given scope, temporaries in a child
// scope the PreparedProgram owns), instantiates the ops and their kernels and
// binds their slots to variables. Run() then feeds, runs the kernels and
// fetches, with no lookups by name and no re-creation of anything. The
// executor never modifies the program it is given; feeds and fetches are
// arguments.
//
// Eager deletion (on by default, as Fluid's FLAGS_eager_delete_tensor_gb=0):
// Prepare computes, for every non-persistable var of the block, the op after
// which nothing reads or writes it (src/framework/liveness.h), and Run drops
// the var's tensor memory right after that op (the Variable stays, with its
// dtype and shape). Fed vars, the run's fetch targets and the vars named by
// KeepAfterRun are never dropped. Off with FLAGS_eager_delete_tensor_gb=-1
// in the environment or Executor::set_eager_deletion(false).
//
// An Executor is not thread-safe; its prepared programs must be run one at a
// time. The scope must outlive the prepared programs bound to it.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/framework/device_context.h"
#include "src/framework/operator.h"
#include "src/framework/scope.h"

namespace fluid {

class Timeline;

using FeedList = std::vector<std::pair<std::string, Tensor>>;

class PreparedProgram {
 public:
  ~PreparedProgram();
  PreparedProgram(const PreparedProgram&) = delete;
  PreparedProgram& operator=(const PreparedProgram&) = delete;

  const proto::ProgramDesc& program() const { return program_; }
  // The block Prepare was asked to run.
  int block_id() const { return block_id_; }
  const std::vector<std::unique_ptr<OperatorBase>>& ops() const { return ops_; }
  Scope* scope() const { return scope_; }
  Scope* local_scope() const { return local_scope_; }
  // Vars read before any op writes them and not persistable: they must be
  // fed on every run.
  const std::vector<std::string>& feed_targets() const { return feed_targets_; }
  // The writer whose in-flight writes this program waits for itself (its
  // own ops wait for them where they read): Run settles the scope's fence
  // for every other owner only. Null: all of them.
  void set_fence_owner(const void* owner) { fence_owner_ = owner; }

  // Eager deletion: whether this program drops temporaries after their last
  // use (the executor's setting when it was prepared).
  bool eager_deletion() const { return eager_deletion_; }
  // Vars whose values the caller reads after a run besides its fetches
  // (e.g. the averaged gradients scanned for NaN): never dropped. Unknown
  // names are an error naming them.
  void KeepAfterRun(const std::vector<std::string>& names);
  // The vars dropped after op `i` (empty when eager deletion is off).
  std::vector<std::string> ReleasedAfter(size_t i) const;

 private:
  friend class Executor;
  friend class ExecutorBlockRunner;  // runs sub-blocks (executor.cc)
  PreparedProgram() = default;
  struct FeedSlot {
    std::string name;
    const proto::VarDesc* desc;
    Variable* var;
  };
  proto::ProgramDesc program_;
  int block_id_ = 0;
  std::vector<std::unique_ptr<OperatorBase>> ops_;
  Scope* scope_ = nullptr;
  Scope* local_scope_ = nullptr;
  const void* fence_owner_ = nullptr;
  std::vector<std::string> feed_targets_;
  std::vector<FeedSlot> required_feeds_;
  // Persistable vars the ops read: checked to live at the executor's place
  // on each run (a scope trained on a GPU cannot be read by CPU kernels).
  std::vector<std::pair<std::string, const Variable*>> persistable_inputs_;
  // Eager deletion. releasable_[k] is a var Run may drop, released_after_[i]
  // the indices k dropped after op i; pinned_[k] is set while a run fetches
  // or feeds it (no allocation per run), kept_[k] by KeepAfterRun.
  struct Releasable {
    std::string name;
    Variable* var;
    bool kept = false;
    bool pinned = false;
  };
  bool eager_deletion_ = false;
  std::vector<Releasable> releasable_;
  std::vector<std::vector<int>> released_after_;
  std::unordered_map<std::string, int> releasable_index_;
  // The ops of the program's other blocks (the sub-blocks of control-flow
  // ops), instantiated once by Prepare and bound by each run of the block
  // (src/framework/block_runner.h); indexed by block id.
  std::vector<std::vector<std::unique_ptr<OperatorBase>>> block_ops_;
};

class Executor {
 public:
  explicit Executor(Place place = Place::CPU(), int num_threads = 1);
  ~Executor();

  std::unique_ptr<PreparedProgram> Prepare(const proto::ProgramDesc& program,
                                           Scope* scope, int block_id = 0);

  // Copies each feed into its variable (checking dtype and shape against the
  // var's declaration), runs every op, then copies each fetched variable
  // into `fetches` (in the order of `fetch_names`). On a CUDA place the
  // feeds are copied to the device, the kernels run on the context's
  // stream, and the fetches come back to host memory; Run returns once the
  // device has finished (so an asynchronous kernel failure is reported by
  // the run that caused it). An Error escaping an op's shape inference or
  // kernel leaves with the op's type, index and block recorded
  // (Error::WithOpContext).
  void Run(PreparedProgram* prepared, const FeedList& feeds = {},
           const std::vector<std::string>& fetch_names = {},
           std::vector<Tensor>* fetches = nullptr);

  // Prepare + Run once; for startup programs and one-off runs.
  void RunOnce(const proto::ProgramDesc& program, Scope* scope,
               const FeedList& feeds = {},
               const std::vector<std::string>& fetch_names = {},
               std::vector<Tensor>* fetches = nullptr);

  const Place& place() const { return place_; }
  // Eager deletion for the programs prepared from now on (default: on,
  // unless FLAGS_eager_delete_tensor_gb is negative in the environment).
  void set_eager_deletion(bool on) { eager_deletion_ = on; }
  bool eager_deletion() const { return eager_deletion_; }
  const DeviceContext& device_context() const { return *device_; }
  DeviceContext* mutable_device_context() { return device_.get(); }

 private:
  friend class ExecutorBlockRunner;  // runs sub-blocks (executor.cc)
  // Instantiates the ops of every block but the prepared one.
  void PrepareSubBlocks(PreparedProgram* prepared) const;
  // Checks and copies the feeds into `local`; a data span when tracing.
  void CopyFeeds(const FeedList& feeds, const proto::BlockDesc& block,
                 Scope* local, Timeline* timeline);
  // Runs the ops, dropping each temporary after its last use.
  void RunOps(PreparedProgram* prepared, Timeline* timeline);
  // Eager deletion's schedule for `prepared` (executor.cc).
  void PlanReleases(PreparedProgram* prepared) const;
  // Marks (or, `on` false, unmarks) the run's fetched and fed vars.
  static void PinForRun(PreparedProgram* prepared, const FeedList& feeds,
                        const std::vector<std::string>& fetch_names, bool on);

  Place place_;
  bool eager_deletion_;
  std::unique_ptr<DeviceContext> device_;
};

// Checks a fed tensor against the var it feeds; the error names the var.
void CheckFeed(const proto::VarDesc& var, const Tensor& value);

}  // namespace fluid
