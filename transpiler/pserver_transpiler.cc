#include "transpiler/pserver_transpiler.h"

#include <map>
#include <set>

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/distributed_job.h"
#include "transpiler/program_query.h"

namespace fluid {

namespace {

const std::set<std::string>& RpcOps() {
  static const std::set<std::string> ops = {"send", "recv", "send_barrier",
                                            "fetch_barrier"};
  return ops;
}

// Send and receive ops are the parameter-server form's collectives.
proto::OpDesc Rpc(proto::OpDesc op) {
  return WithRole(std::move(op), OpRole::kCollective);
}

// Vars an op reads or writes.
std::vector<std::string> Touched(const proto::OpDesc& op) {
  std::vector<std::string> v = OpInputNames(op);
  for (const auto& n : OpOutputNames(op)) v.push_back(n);
  return v;
}

void CopyVar(const proto::BlockDesc& from, const std::string& name,
             proto::BlockDesc* to) {
  if (FindVarDesc(*to, name) != nullptr) return;
  const proto::VarDesc* v = FindVarDesc(from, name);
  if (v != nullptr) *to->add_vars() = *v;
}

}  // namespace

bool IsPserverTrainer(const proto::ProgramDesc& program) {
  return FormOf(program) == JobForm::kPserverTrainer;
}

namespace {

// What a split needs to know of the plain job.
struct SplitPlan {
  std::vector<std::pair<std::string, std::string>> pairs;  // (param, grad)
  std::map<std::string, size_t> server_of;  // param -> endpoint index
  std::set<std::string> server_state;       // vars only the optimizer touches
};

SplitPlan PlanSplit(const proto::TrainingJob& job, size_t servers) {
  SplitPlan plan;
  plan.pairs = OptimizedParams(job.main());
  FLUID_ENFORCE(!plan.pairs.empty(), "the job has no optimize ops to move");
  for (size_t i = 0; i < plan.pairs.size(); ++i)
    plan.server_of[plan.pairs[i].first] = i % servers;
  for (const auto& op : job.main().blocks(0).ops())
    if (HasRole(op, OpRole::kOptimize))
      for (const auto& n : Touched(op)) plan.server_state.insert(n);
  for (const auto& pg : plan.pairs) {
    plan.server_state.erase(pg.first);
    plan.server_state.erase(pg.second);
  }
  return plan;
}

// `b` without the vars in `state` and the ops that touch them.
void DropState(const std::set<std::string>& state, proto::BlockDesc* b) {
  proto::BlockDesc kept = *b;
  kept.clear_vars();
  kept.clear_ops();
  for (const auto& v : b->vars())
    if (!state.count(v.name())) *kept.add_vars() = v;
  for (const auto& op : b->ops()) {
    bool touches = false;
    for (const auto& n : Touched(op)) touches = touches || state.count(n);
    if (!touches) *kept.add_ops() = op;
  }
  *b = kept;
}

// The trainer half: forward and backward, a send of each gradient and a
// recv of each parameter; no optimizer and no optimizer state.
proto::TrainingJob TrainerHalf(const proto::TrainingJob& job,
                               const SplitPlan& plan,
                               const std::vector<std::string>& endpoints) {
  proto::TrainingJob trainer = job;
  proto::BlockDesc* tmain = trainer.mutable_main()->mutable_blocks(0);
  tmain->clear_ops();
  for (const auto& op : job.main().blocks(0).ops())
    if (!HasRole(op, OpRole::kOptimize)) *tmain->add_ops() = op;
  auto epmap = [&](const std::string& param) {
    return std::vector<std::string>{endpoints[plan.server_of.at(param)]};
  };
  for (const auto& pg : plan.pairs)
    *tmain->add_ops() = Rpc(
        MakeOp("send", {{"X", {pg.second}}}, {}, {{"epmap", epmap(pg.first)}}));
  *tmain->add_ops() =
      Rpc(MakeOp("send_barrier", {}, {}, {{"endpoints", endpoints}}));
  for (const auto& pg : plan.pairs)
    *tmain->add_ops() = Rpc(MakeOp("recv", {}, {{"Out", {pg.first}}},
                                   {{"epmap", epmap(pg.first)}}));
  *tmain->add_ops() =
      Rpc(MakeOp("fetch_barrier", {}, {}, {{"endpoints", endpoints}}));
  DropState(plan.server_state, tmain);
  DropState(plan.server_state, trainer.mutable_startup()->mutable_blocks(0));
  trainer.clear_strategy();
  SetForm(trainer.mutable_main(), JobForm::kPserverTrainer);
  return trainer;
}

// The ops of the plain startup program that initialise what the server
// owns and the optimize op `op` touches, appended to `st` once each.
void AddServerStartupOps(const proto::BlockDesc& sst, const proto::OpDesc& op,
                         const std::string& param, const SplitPlan& plan,
                         proto::BlockDesc* st) {
  for (const auto& sop : sst.ops()) {
    bool mine = false;
    for (const auto& n : OpOutputNames(sop))
      mine = mine || n == param || plan.server_state.count(n);
    bool relevant = false;
    for (const auto& n : OpOutputNames(sop))
      for (const auto& t : Touched(op)) relevant = relevant || n == t;
    if (!mine || !relevant) continue;
    bool dup = false;
    for (const auto& have : st->ops())
      dup = dup || have.SerializeAsString() == sop.SerializeAsString();
    if (!dup) *st->add_ops() = sop;
  }
}

// Server `e`: per parameter it owns, a block that sums the trainers'
// copies of the gradient, scales it by 1/trainers and applies the
// optimizer; block 0 serves them (listen_and_serv).
PserverProgram ServerHalf(const proto::TrainingJob& job, const SplitPlan& plan,
                          const std::vector<std::string>& endpoints, size_t e,
                          int trainers) {
  const proto::BlockDesc& src = job.main().blocks(0);
  const proto::BlockDesc& sst = job.startup().blocks(0);
  const int32_t optimize = static_cast<int32_t>(OpRole::kOptimize);
  PserverProgram ps;
  ps.endpoint = endpoints[e];
  ps.main = NewProgram();
  ps.startup = NewProgram();
  proto::BlockDesc* b0 = ps.main.mutable_blocks(0);
  proto::BlockDesc* st = ps.startup.mutable_blocks(0);
  std::vector<std::string> received;
  std::vector<int32_t> blocks;
  for (const auto& op : src.ops()) {
    if (!HasRole(op, OpRole::kOptimize)) continue;
    std::vector<std::string> rv = OpRoleVarOf(op);
    if (rv.size() != 2 || plan.server_of.at(rv[0]) != e) continue;
    const std::string& grad = rv[1];
    proto::BlockDesc* blk = ps.main.add_blocks();
    blk->set_idx(ps.main.blocks_size() - 1);
    blk->set_parent_idx(0);
    blocks.push_back(blk->idx());
    std::vector<std::string> copies;
    for (int t = 0; t < trainers; ++t) {
      std::string c = grad + ".trainer_" + std::to_string(t);
      copies.push_back(c);
      received.push_back(c);
      const proto::VarDesc& g = GetVarDesc(src, grad);
      AddVarDesc(b0, c, VarDtype(g), VarShape(g));
    }
    *blk->add_ops() = MakeOp("sum", {{"X", copies}}, {{"Out", {grad}}},
                             {{kOpRoleAttr, optimize}});
    *blk->add_ops() = MakeOp("scale", {{"X", {grad}}}, {{"Out", {grad}}},
                             {{"scale", 1.0f / static_cast<float>(trainers)},
                              {kOpRoleAttr, optimize}});
    *blk->add_ops() = op;
    for (const auto& n : Touched(op)) {
      CopyVar(src, n, b0);
      CopyVar(sst, n, st);
    }
    AddServerStartupOps(sst, op, rv[0], plan, st);
  }
  *b0->add_ops() =
      MakeOp("listen_and_serv", {{"X", received}}, {},
             {{"endpoint", endpoints[e]},
              {"Fanin", int32_t{trainers}},
              {"optimize_blocks", blocks},
              {kOpRoleAttr, static_cast<int32_t>(OpRole::kCollective)}});
  SetForm(&ps.main, JobForm::kPserverServer);
  return ps;
}

}  // namespace

PserverSplit PserverTranspile(const proto::TrainingJob& job, int trainers,
                              const std::vector<std::string>& endpoints) {
  FLUID_ENFORCE(trainers >= 1, "trainers must be >= 1, got ", trainers);
  FLUID_ENFORCE(!endpoints.empty(), "give at least one pserver endpoint");
  CheckJob(job, "job");
  const JobForm form = FormOf(job.main());
  FLUID_ENFORCE(form == JobForm::kLocal, "the job is already distributed (",
                JobFormName(form), "); split the plain program");
  const SplitPlan plan = PlanSplit(job, endpoints.size());
  PserverSplit split;
  split.trainer = TrainerHalf(job, plan, endpoints);
  for (size_t e = 0; e < endpoints.size(); ++e)
    split.pservers.push_back(ServerHalf(job, plan, endpoints, e, trainers));
  return split;
}

proto::TrainingJob PserverToPlain(const proto::TrainingJob& trainer,
                                  const std::vector<PserverProgram>& pservers) {
  CheckJob(trainer, "trainer job");
  FLUID_ENFORCE(IsPserverTrainer(trainer.main()),
                "the trainer program has no send/recv ops: it is not in the "
                "parameter-server style");
  proto::TrainingJob plain = trainer;
  SetForm(plain.mutable_main(), JobForm::kLocal);
  const proto::BlockDesc& src = trainer.main().blocks(0);
  proto::BlockDesc* main = plain.mutable_main()->mutable_blocks(0);
  main->clear_ops();
  std::vector<std::string> sent;
  for (const auto& op : src.ops()) {
    if (op.type() == "send") {
      for (const auto& g : OpInput(op, "X")) sent.push_back(g);
      continue;
    }
    if (RpcOps().count(op.type())) continue;
    *main->add_ops() = op;
  }
  // The servers' optimize ops, keyed by the gradient they apply.
  std::map<std::string, std::pair<const proto::OpDesc*, size_t>> by_grad;
  for (size_t s = 0; s < pservers.size(); ++s) {
    CheckProgram(pservers[s].main, "pserver program " + pservers[s].endpoint);
    const auto& blocks = pservers[s].main.blocks();
    for (int b = 0; b < blocks.size(); ++b) {
      for (const auto& op : blocks[b].ops()) {
        if (!HasRole(op, OpRole::kOptimize) || op.type() == "sum" ||
            op.type() == "scale")
          continue;
        std::vector<std::string> rv = OpRoleVarOf(op);
        FLUID_ENFORCE(rv.size() == 2, "optimize op '", op.type(),
                      "' on pserver ", pservers[s].endpoint,
                      " has no op_role_var [param, grad]");
        FLUID_ENFORCE(by_grad.emplace(rv[1], std::make_pair(&op, s)).second,
                      "gradient '", rv[1], "' is optimized by two pservers");
      }
    }
  }
  proto::BlockDesc* st = plain.mutable_startup()->mutable_blocks(0);
  for (const auto& g : sent) {
    auto it = by_grad.find(g);
    FLUID_ENFORCE_CODE(it != by_grad.end(), ErrorCode::kNotFound,
                       "the trainer sends gradient '", g,
                       "' but no pserver program optimizes it");
    const proto::OpDesc& op = *it->second.first;
    const PserverProgram& ps = pservers[it->second.second];
    *main->add_ops() = op;
    for (const auto& n : Touched(op)) {
      for (const auto& b : ps.main.blocks()) CopyVar(b, n, main);
      CopyVar(ps.startup.blocks(0), n, st);
    }
    for (const auto& sop : ps.startup.blocks(0).ops()) {
      bool relevant = false;
      for (const auto& n : OpOutputNames(sop))
        for (const auto& t : Touched(op))
          relevant = relevant || (n == t && n != OpRoleVarOf(op)[0]);
      if (!relevant) continue;
      bool dup = false;
      for (const auto& have : st->ops())
        dup = dup || have.SerializeAsString() == sop.SerializeAsString();
      if (!dup) *st->add_ops() = sop;
    }
    by_grad.erase(it);
  }
  FLUID_ENFORCE(by_grad.empty(), "pserver optimizes gradient '",
                by_grad.empty() ? "" : by_grad.begin()->first,
                "' that the trainer never sends");
  return plain;
}

proto::TrainingJob PserverToCollective(
    const proto::TrainingJob& trainer,
    const std::vector<PserverProgram>& pservers,
    const proto::DistributedStrategy& strategy, int nranks) {
  return CollectiveTranspile(PserverToPlain(trainer, pservers), strategy,
                             nranks);
}

}  // namespace fluid
