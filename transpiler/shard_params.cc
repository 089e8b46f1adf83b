#include "transpiler/shard_params.h"

#include <algorithm>
#include <map>
#include <set>

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/buckets.h"
#include "transpiler/program_query.h"

namespace fluid {

namespace {

// What the rewrite inserts around op i: before it (in order), after it.
struct Insertions {
  std::map<int, std::vector<proto::OpDesc>> before, after;
};

// The vars of `b` a reader may read: the parameters and the buffer.
std::set<std::string> Readable(const ParamShardBucket& b) {
  std::set<std::string> out(b.views.begin(), b.views.end());
  out.insert(b.fused);
  return out;
}

bool ReadsAny(const proto::OpDesc& op, const std::set<std::string>& vars) {
  for (const auto& n : OpInputNames(op))
    if (vars.count(n)) return true;
  return false;
}

proto::OpDesc Collective(proto::OpDesc op) {
  return WithRole(std::move(op), OpRole::kCollective);
}

std::vector<proto::OpDesc> Gather(const ParamShardBucket& b, int nranks) {
  return {Collective(MakeOp("coalesce_tensor", {},
                            {{"Output", b.views}, {"FusedOutput", {b.fused}}},
                            {{"dtype", static_cast<int32_t>(b.dtype)},
                             {"numels", b.numels},
                             {"shapes", b.shapes}})),
          Collective(MakeOp("c_allgather", {{"X", {b.shard}}},
                            {{"Out", {b.fused}}, {"Handle", {b.handle}}},
                            {{"nranks", int32_t{nranks}}}))};
}

proto::OpDesc Wait(const ParamShardBucket& b) {
  return Collective(
      MakeOp("c_wait", {{"Handle", {b.handle}}}, {{"Out", {b.fused}}}));
}

proto::OpDesc Free(const std::vector<std::string>& vars) {
  return Collective(MakeOp("delete_var", {{"X", vars}}, {}));
}

std::vector<std::string> WithBuffer(const ParamShardBucket& b) {
  std::vector<std::string> out = b.views;
  out.push_back(b.fused);
  return out;
}

// The first and last reader of each bucket among ops [from, to).
struct Span {
  int first = -1, last = -1;
};
std::vector<Span> Spans(const std::vector<ParamShardBucket>& buckets,
                        const proto::BlockDesc& main, int from, int to) {
  std::vector<Span> out(buckets.size());
  for (size_t k = 0; k < buckets.size(); ++k) {
    const std::set<std::string> vars = Readable(buckets[k]);
    for (int i = from; i < to; ++i) {
      if (!ReadsAny(main.ops(i), vars)) continue;
      if (out[k].first < 0) out[k].first = i;
      out[k].last = i;
    }
  }
  return out;
}

// The buckets read in [from, to), in the order of their first reader, and
// where each one's gather is issued: before the first reader of the
// bucket `prefetch` places earlier in that order (or at `from`).
std::map<size_t, int> IssuePoints(const std::vector<Span>& spans, int from,
                                  int prefetch) {
  std::vector<std::pair<int, size_t>> order;
  for (size_t k = 0; k < spans.size(); ++k)
    if (spans[k].first >= 0) order.emplace_back(spans[k].first, k);
  std::sort(order.begin(), order.end());
  std::map<size_t, int> out;
  for (size_t j = 0; j < order.size(); ++j)
    out[order[j].second] =
        j < static_cast<size_t>(prefetch) ? from : order[j - prefetch].first;
  return out;
}

// The index of the first op with the backward role (ops_size() if none).
int FirstBackward(const proto::BlockDesc& main) {
  for (int i = 0; i < main.ops_size(); ++i)
    if (HasRole(main.ops(i), OpRole::kBackward)) return i;
  return main.ops_size();
}

// The first op writing one of `vars`, and the c_wait reading `handle`.
int FirstWriter(const proto::BlockDesc& main,
                const std::vector<std::string>& vars) {
  for (int i = 0; i < main.ops_size(); ++i)
    for (const auto& v : vars)
      if (main.ops(i).type() != "coalesce_tensor" && WritesVar(main.ops(i), v))
        return i;
  return main.ops_size();
}

int WaitOf(const proto::BlockDesc& main, const std::string& handle) {
  for (int i = 0; i < main.ops_size(); ++i)
    if (main.ops(i).type() == "c_wait" && ReadsVar(main.ops(i), handle))
      return i;
  return -1;
}

// The gradient bucket of `b`: coalesced just before the backward pass
// first writes it (not at the start), freed once its reduce-scatter is
// waited for; that wait moves to just before op `wait_before` when it is
// >= 0 (the layout of a later bucket's gradients).
void PlaceGradients(const ParamShardBucket& b, int wait_before,
                    proto::BlockDesc* main, Insertions* at) {
  auto* ops = main->mutable_ops();
  for (int i = 0; i < ops->size(); ++i) {
    const proto::OpDesc& op = ops->Get(i);
    if (op.type() != "coalesce_tensor" ||
        OpOutput(op, "FusedOutput") != std::vector<std::string>{b.grad_fused})
      continue;
    const int first = FirstWriter(*main, b.grad_views);
    FLUID_ENFORCE(first > i, "gradient buffer '", b.grad_fused,
                  "' is written before it is laid out");
    at->before[first].push_back(op);
    ops->Mutable(i)->set_type("@MOVED@");  // dropped when rebuilt
    break;
  }
  const int wait = WaitOf(*main, b.grad_handle);
  FLUID_ENFORCE(wait >= 0, "gradient buffer '", b.grad_fused,
                "' is never waited for");
  std::vector<std::string> grads = b.grad_views;
  grads.push_back(b.grad_fused);
  if (wait_before < 0 || wait_before >= wait) {
    at->after[wait].push_back(Free(grads));
    return;
  }
  at->after[wait_before - 1].push_back(main->ops(wait));
  at->after[wait_before - 1].push_back(Free(grads));
  main->mutable_ops(wait)->set_type("@MOVED@");
}

// Where each bucket's gradient wait goes (-1: where it is). The buckets in
// the order the backward pass first writes their gradients: bucket j's
// reduce-scatter is waited for, and its buffer freed, just before bucket
// j+2's buffer is laid out (when that comes after the reduce-scatter), so
// that at most three gradient buffers exist at once while one bucket's
// reduce-scatter still overlaps the next bucket's backward ops.
std::vector<int> GradientWaits(const std::vector<ParamShardBucket>& buckets,
                               const proto::BlockDesc& main) {
  std::vector<std::pair<int, size_t>> order;  // (first writer, bucket)
  for (size_t k = 0; k < buckets.size(); ++k)
    order.emplace_back(FirstWriter(main, buckets[k].grad_views), k);
  std::sort(order.begin(), order.end());
  std::vector<int> out(buckets.size(), -1);
  for (size_t j = 0; j + 2 < order.size(); ++j) {
    const ParamShardBucket& b = buckets[order[j].second];
    int reduce = -1;
    for (int i = 0; i < main.ops_size(); ++i)
      if (main.ops(i).type() == "c_reducescatter" &&
          ReadsVar(main.ops(i), b.grad_fused))
        reduce = i;
    const int next = order[j + 2].first;
    if (reduce >= 0 && reduce < next && next < main.ops_size())
      out[order[j].second] = next;
  }
  return out;
}

// The elements of the other buckets that ops strictly between `from` and
// `to` read: how much would be gathered while bucket `self` waits for its
// next reader.
int64_t ReadBetween(const std::vector<ParamShardBucket>& buckets, size_t self,
                    const proto::BlockDesc& main, int from, int to) {
  int64_t elements = 0;
  for (size_t j = 0; j < buckets.size(); ++j) {
    if (j == self) continue;
    const std::set<std::string> vars = Readable(buckets[j]);
    for (int i = from + 1; i < to; ++i) {
      if (!ReadsAny(main.ops(i), vars)) continue;
      for (int64_t n : buckets[j].numels) elements += n;
      break;
    }
  }
  return elements;
}

}  // namespace

void PlaceParamGathers(const std::vector<ParamShardBucket>& buckets,
                       int prefetch, int64_t max_reuse_distance, int nranks,
                       proto::BlockDesc* main) {
  Insertions at;
  const std::vector<int> waits = GradientWaits(buckets, *main);
  for (size_t k = 0; k < buckets.size(); ++k)
    PlaceGradients(buckets[k], waits[k], main, &at);
  const int backward = FirstBackward(*main);
  const std::vector<Span> fwd = Spans(buckets, *main, 0, backward);
  const std::vector<Span> bwd =
      Spans(buckets, *main, backward, main->ops_size());
  const std::map<size_t, int> fwd_issue = IssuePoints(fwd, 0, prefetch);
  const std::map<size_t, int> bwd_issue = IssuePoints(bwd, backward, prefetch);
  for (size_t k = 0; k < buckets.size(); ++k) {
    const ParamShardBucket& b = buckets[k];
    // A bucket whose backward gather would start before its forward
    // readers end keeps its forward copy for the backward pass, and so
    // does one whose backward pass reads it again before more than
    // max_reuse_distance elements of other buckets are read.
    const bool keep = fwd[k].first >= 0 && bwd[k].first >= 0 &&
                      (bwd_issue.at(k) <= fwd[k].last ||
                       ReadBetween(buckets, k, *main, fwd[k].last,
                                   bwd[k].first) <= max_reuse_distance);
    if (fwd[k].first >= 0) {
      for (auto& op : Gather(b, nranks))
        at.before[fwd_issue.at(k)].push_back(op);
      at.before[fwd[k].first].push_back(Wait(b));
      if (!keep) at.after[fwd[k].last].push_back(Free(WithBuffer(b)));
    }
    if (bwd[k].first >= 0 && !keep) {
      for (auto& op : Gather(b, nranks))
        at.before[bwd_issue.at(k)].push_back(op);
      at.before[bwd[k].first].push_back(Wait(b));
    }
    if (bwd[k].first >= 0) at.after[bwd[k].last].push_back(Free(WithBuffer(b)));
  }
  // Issues before waits at one place: a gather is on its way while the
  // step waits for another.
  for (auto& [i, ops] : at.before)
    std::stable_partition(ops.begin(), ops.end(), [](const proto::OpDesc& op) {
      return op.type() != "c_wait";
    });
  google::protobuf::RepeatedPtrField<proto::OpDesc> old;
  old.Swap(main->mutable_ops());
  for (int i = 0; i < old.size(); ++i) {
    for (auto& op : at.before[i]) *main->add_ops() = op;
    if (old.Get(i).type() != "@MOVED@") *main->add_ops() = old.Get(i);
    for (auto& op : at.after[i]) *main->add_ops() = op;
  }
}

void PlaceShardStartup(const std::vector<ParamShardBucket>& buckets, int nranks,
                       proto::BlockDesc* startup) {
  google::protobuf::RepeatedPtrField<proto::OpDesc> old;
  old.Swap(startup->mutable_ops());
  std::map<std::string, size_t> bucket_of;  // parameter -> its bucket
  for (size_t k = 0; k < buckets.size(); ++k)
    for (const auto& v : buckets[k].views) bucket_of[v] = k;
  // Each var's last writer (its initialiser: not its broadcast, nor what
  // lays it out or keeps a slice of it), and each bucket's ops left.
  std::map<std::string, int> last_write;
  std::vector<std::vector<int>> broadcasts(old.size());  // by that writer
  std::vector<bool> moved(old.size(), false);
  std::vector<int> left(buckets.size(), 0);
  for (int i = 0; i < old.size(); ++i) {
    const proto::OpDesc& op = old.Get(i);
    if (op.type() == "c_broadcast") continue;
    if (op.type() != "coalesce_tensor" && op.type() != "c_split")
      for (const auto& n : OpOutputNames(op)) last_write[n] = i;
  }
  // The buckets op `i` reads or writes a parameter of.
  auto buckets_of = [&](int i) {
    std::set<size_t> mine;
    for (const auto& names :
         {OpInputNames(old.Get(i)), OpOutputNames(old.Get(i))})
      for (const auto& n : names)
        if (bucket_of.count(n)) mine.insert(bucket_of.at(n));
    return mine;
  };
  for (int i = 0; i < old.size(); ++i) {
    const proto::OpDesc& op = old.Get(i);
    for (size_t k : buckets_of(i)) ++left[k];
    if (op.type() != "c_broadcast") continue;
    auto w = last_write.find(OpInput(op, "X")[0]);
    if (w == last_write.end() || w->second > i) continue;
    broadcasts[w->second].push_back(i);
    moved[i] = true;
  }
  std::vector<bool> placed(buckets.size(), false);
  auto emit = [&](int i) {
    *startup->add_ops() = old.Get(i);
    for (size_t k : buckets_of(i)) {
      if (--left[k] > 0 || placed[k]) continue;
      placed[k] = true;
      for (auto& s : ShardParamsStartup(buckets[k], nranks))
        *startup->add_ops() = std::move(s);
    }
  };
  for (int i = 0; i < old.size(); ++i) {
    if (moved[i]) continue;
    emit(i);
    for (int b : broadcasts[i]) emit(b);
  }
  for (size_t k = 0; k < buckets.size(); ++k)  // none of its ops: at the end
    if (!placed[k])
      for (auto& s : ShardParamsStartup(buckets[k], nranks))
        *startup->add_ops() = std::move(s);
}

std::vector<proto::OpDesc> ShardParamsStartup(const ParamShardBucket& b,
                                              int nranks) {
  const std::string view = b.fused + "@VIEW";
  return {
      MakeOp("coalesce_tensor", {},
             {{"Output", b.views}, {"FusedOutput", {b.fused}}},
             {{"dtype", static_cast<int32_t>(b.dtype)}, {"numels", b.numels}}),
      MakeOp("shard_view", {{"X", {b.fused}}}, {{"Out", {view}}},
             {{"nranks", int32_t{nranks}}}),
      MakeOp("assign", {{"X", {view}}}, {{"Out", {b.shard}}}),
      MakeOp("delete_var", {{"X", WithBuffer(b)}}, {})};
}

std::vector<std::string> ParamShardBuffers(const proto::BlockDesc& main) {
  std::vector<std::string> out;
  for (const auto& op : main.ops()) {
    if (op.type() != "c_allgather") continue;
    const std::string shard = OpInput(op, "X")[0];
    const proto::VarDesc* v = FindVarDesc(main, shard);
    const std::string fused = OpOutput(op, "Out")[0];
    if (v != nullptr && v->persistable() && shard == ShardName(fused) &&
        std::find(out.begin(), out.end(), fused) == out.end())
      out.push_back(fused);
  }
  return out;
}

namespace {

// The parameters (views) of buffer `fused`, from its coalesce_tensor ops.
std::set<std::string> ViewsOf(const proto::BlockDesc& main,
                              const std::string& fused) {
  std::set<std::string> out = {fused};
  for (const auto& op : main.ops())
    if (op.type() == "coalesce_tensor" &&
        OpOutput(op, "FusedOutput") == std::vector<std::string>{fused})
      for (const auto& v : OpOutput(op, "Output")) out.insert(v);
  return out;
}

// One buffer's life through the block: absent, gathering, present.
void LintOneBuffer(const proto::BlockDesc& main, const std::string& fused) {
  const std::set<std::string> vars = ViewsOf(main, fused);
  enum { kAbsent, kInFlight, kPresent } state = kAbsent;
  std::string handle;
  int last = -1;  // the op that made the state what it is
  for (int i = 0; i < main.ops_size(); ++i) {
    const proto::OpDesc& op = main.ops(i);
    if (op.type() == "c_allgather" &&
        OpOutput(op, "Out") == std::vector<std::string>{fused}) {
      handle = OpOutput(op, "Handle").empty() ? "" : OpOutput(op, "Handle")[0];
      state = handle.empty() ? kPresent : kInFlight;
      last = i;
      continue;
    }
    if (op.type() == "c_wait" && !handle.empty() && ReadsVar(op, handle)) {
      if (state == kInFlight) state = kPresent;
      last = i;
      continue;
    }
    if (op.type() == "delete_var" && ReadsVar(op, fused)) {
      state = kAbsent;
      last = i;
      continue;
    }
    for (const auto& n : OpInputNames(op)) {
      if (!vars.count(n)) continue;
      FLUID_ENFORCE(
          state != kAbsent || last < 0 || main.ops(last).type() != "delete_var",
          "op #", i, " '", op.type(), "' reads '", n,
          "' of sharded parameter buffer '", fused, "' after op #", last,
          " 'delete_var' freed it");
      FLUID_ENFORCE(
          state == kPresent, "op #", i, " '", op.type(), "' reads '", n,
          "' of sharded parameter buffer '", fused, "' before ",
          state == kInFlight ? "its gather is waited for" : "any gather of it",
          " (each read needs a c_allgather and its c_wait first)");
    }
  }
}

}  // namespace

void LintParamShards(const proto::BlockDesc& main) {
  for (const auto& fused : ParamShardBuffers(main)) LintOneBuffer(main, fused);
}

}  // namespace fluid
