#include "transpiler/buckets.h"

#include <algorithm>
#include <map>
#include <set>

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/program_query.h"
#include "transpiler/shard_gradient_ops.h"

namespace fluid {

namespace {

// Parameters whose update ops share this key can share one update op.
std::string UpdateKey(const proto::BlockDesc& block, const proto::OpDesc& op) {
  std::string key = op.type();
  for (const auto& a : op.attrs())
    if (a.name() != kOpRoleVarAttr && !IsOpAnnotationAttr(a.name()))
      key += "|" + a.ShortDebugString();
  for (const auto& lr : OpInput(op, "LearningRate")) key += "|lr=" + lr;
  for (const auto& slot : op.inputs())
    key +=
        "|" + slot.parameter() + ":" +
        std::to_string(static_cast<int>(KindOf(block, op, slot.parameter())));
  return key;
}

// Update rules that treat every element alone, so that a shard of
// several parameters is updated as the parameters would be.
bool IsElementwiseUpdate(const std::string& type) {
  static const std::set<std::string> kTypes = {
      "sgd",     "momentum", "adam",     "adamax",
      "adagrad", "rmsprop",  "adadelta", "decayed_adagrad"};
  return kTypes.count(type) != 0;
}

}  // namespace

std::vector<GradBucket> PlanBuckets(
    const proto::ProgramDesc& main, int64_t max_bytes,
    const std::function<std::string(const std::string& param)>& group) {
  FLUID_ENFORCE(max_bytes > 0, "bucket size must be positive, got ", max_bytes);
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
    if (o == open.end() || buckets[o->second].bytes + it.bytes > max_bytes) {
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

std::string ShardName(const std::string& fused) { return fused + "@SHARD"; }

bool IsShardVar(const std::string& name) {
  static const std::string kSuffix = "@SHARD";
  return name.size() > kSuffix.size() &&
         name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) ==
             0;
}

std::vector<GradBucket> PlanShardedBuckets(const proto::ProgramDesc& main,
                                           int64_t max_bytes, int nranks,
                                           int64_t small_below) {
  const proto::BlockDesc& block = main.blocks(0);
  const std::map<std::string, int> updates = UpdateOps(block);
  const GradientReaders readers = FindGradientReaders(block);
  std::vector<GradBucket> buckets =
      PlanBuckets(main, max_bytes, [&](const std::string& param) {
        auto it = updates.find(param);
        FLUID_ENFORCE(it != updates.end(), "parameter '", param,
                      "' has no update op to shard");
        const proto::OpDesc& op = block.ops(it->second);
        FLUID_ENFORCE_CODE(IsElementwiseUpdate(op.type()),
                           ErrorCode::kUnimplemented, "the ", op.type(),
                           " update of '", param,
                           "' is not elementwise (it reads the whole "
                           "parameter); a sharded optimizer cannot split it: "
                           "use another optimizer or turn sharding off");
        auto chain = readers.signature.find(param);
        const bool small =
            VarShape(GetVarDesc(block, param)).numel() < small_below;
        // Stage 3: a large parameter is a bucket of its own, so that a
        // gathered buffer (and its gradients' buffer) is one parameter.
        const std::string alone =
            small_below > 0 && !small ? "|alone=" + param : "";
        return UpdateKey(block, op) + "|chain=" +
               (chain == readers.signature.end() ? "" : chain->second) +
               (small ? "|small" : "") + alone;
      });
  for (GradBucket& b : buckets) {
    b.whole = readers.whole.count(b.params[0]) != 0;  // the chains agree
    int64_t total = 0;
    for (int64_t n : b.numels) total += n;
    b.padding = (nranks - total % nranks) % nranks;
    b.pad = b.fused + "@PAD";
  }
  return buckets;
}

}  // namespace fluid
