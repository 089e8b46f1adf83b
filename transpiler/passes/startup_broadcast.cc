// Startup broadcasts: the startup program ends with a c_broadcast from
// rank 0 of every persistable var it creates (parameters and optimizer
// state), so all ranks start identical whatever their seeds. The lint
// checks each such var is broadcast once, after it is initialised (a
// sharded job's shard state is per rank by design and is not).
#include <map>

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/collective_transpiler.h"
#include "transpiler/passes/pass.h"
#include "transpiler/program_query.h"

namespace fluid {

namespace {

void Broadcast(PassContext*, proto::TrainingJob* job) {
  *job->mutable_startup() = StartupWithBroadcasts(job->startup());
}

void LintBroadcasts(const PassContext& ctx, const proto::TrainingJob& job) {
  const proto::BlockDesc& block = job.startup().blocks(0);
  std::map<std::string, int> last_write, last_broadcast, broadcasts;
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    if (op.type() != "c_broadcast") {
      // coalesce_tensor lays values out anew but keeps them (stage 3
      // shards the broadcast parameters with it); c_split keeps this
      // rank's slice of them (tensor parallelism).
      if (op.type() != "coalesce_tensor" && op.type() != "c_split")
        for (const auto& out : OpOutputNames(op)) last_write[out] = i;
      continue;
    }
    const std::string v = OpInput(op, "X")[0];
    FLUID_ENFORCE(GetOpAttrAs<int32_t>(op, "root") == 0,
                  "the startup "
                  "program broadcasts '",
                  v, "' from rank ", GetOpAttrAs<int32_t>(op, "root"),
                  ", not rank 0");
    ++broadcasts[v];
    last_broadcast[v] = i;
  }
  for (const auto& v : block.vars()) {
    if (!v.persistable() || IsShardVar(v.name())) continue;
    const auto w = last_write.find(v.name());
    if (w == last_write.end()) continue;  // declared, created elsewhere
    FLUID_ENFORCE(broadcasts[v.name()] == 1, "the startup program broadcasts '",
                  v.name(), "' ", broadcasts[v.name()],
                  " times; every rank must take rank 0's value once");
    FLUID_ENFORCE(last_broadcast[v.name()] > w->second,
                  "the startup program "
                  "broadcasts '",
                  v.name(), "' before op #", w->second, " writes it");
  }
}

}  // namespace

extern const Pass kStartupBroadcastPass = {"startup_broadcast", Always,
                                           Broadcast, LintBroadcasts};

}  // namespace fluid
