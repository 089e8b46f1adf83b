#include "transpiler/shard_gradient_ops.h"

#include <algorithm>
#include <set>

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/program_query.h"

namespace fluid {

namespace {

constexpr int kOptimize = static_cast<int>(OpRole::kOptimize);

const char kAdvice[] =
    "; a sharded optimizer holds parts of parameters and runs the "
    "clipping and regularization ops of fluid.clip and fluid.regularizer "
    "only: use those, or turn sharding off";

bool IsChainType(const std::string& type) {
  static const std::set<std::string> kTypes = {"clip",
                                               "sign",
                                               "scale",
                                               "sum",
                                               "elementwise_mul",
                                               "squared_l2_norm",
                                               "clip_by_norm"};
  return kTypes.count(type) != 0;
}

// Sorts out one op at a time, in program order.
class ReaderScan {
 public:
  ReaderScan(const proto::BlockDesc& block, GradientReaders* r)
      : block_(block), r_(r) {}

  void Op(int i) {
    const proto::OpDesc& op = block_.ops(i);
    if (op.type() == "check_finite_and_unscale" ||
        op.type() == "update_loss_scaling") {
      r_->kind[i] = GradientReaders::kLossScaling;
      return;
    }
    std::set<std::string> chains;
    bool reads_norm = false;
    for (const auto& in : OpInputNames(op)) {
      if (norms_.count(in)) reads_norm = true;
      auto it = r_->owner.find(in);
      if (it != r_->owner.end()) chains.insert(it->second);
    }
    if (reads_norm) return NormSum(i);
    if (chains.empty()) {
      for (const auto& out : OpOutputNames(op))
        FLUID_ENFORCE_CODE(r_->owner.count(out) == 0, ErrorCode::kUnimplemented,
                           "the ", op.type(), " op overwrites '", out,
                           "' before its update", kAdvice);
      return;
    }
    FLUID_ENFORCE_CODE(chains.size() == 1, ErrorCode::kUnimplemented, "the ",
                       op.type(), " op reads the gradients or parameters of '",
                       *chains.begin(), "' and '", *chains.rbegin(),
                       "' before their update", kAdvice);
    Chain(i, *chains.begin());
  }

 private:
  // The sum of squared norms of several chains (or of one).
  void NormSum(int i) {
    const proto::OpDesc& op = block_.ops(i);
    bool all = op.type() == "sum";
    for (const auto& in : OpInputNames(op)) all &= norms_.count(in) != 0;
    FLUID_ENFORCE_CODE(all, ErrorCode::kUnimplemented, "the ", op.type(),
                       " op reads a gradient's squared norm other than by "
                       "summing norms",
                       kAdvice);
    r_->kind[i] = GradientReaders::kNormSum;
  }

  void Chain(int i, const std::string& p) {
    const proto::OpDesc& op = block_.ops(i);
    FLUID_ENFORCE_CODE(IsChainType(op.type()) || r_->replicated.count(p),
                       ErrorCode::kUnimplemented, "the ", op.type(),
                       " op reads the gradient of '", p, "' before its update",
                       kAdvice);
    if (op.type() == "elementwise_mul" && !r_->replicated.count(p)) {
      const std::string y = OpInput(op, "Y")[0];
      FLUID_ENFORCE_CODE(r_->owner.count(y) != 0 ||
                             VarShape(GetVarDesc(block_, y)).numel() == 1,
                         ErrorCode::kUnimplemented,
                         "the elementwise_mul op scales the gradient of '", p,
                         "' by '", y, "', which is not one element", kAdvice);
    }
    for (const auto& out : OpOutputNames(op)) {
      if (r_->owner.emplace(out, p).second) r_->temps[p].push_back(out);
      if (op.type() == "squared_l2_norm") norms_.insert(out);
    }
    if (op.type() == "clip_by_norm") r_->whole.insert(p);
    r_->kind[i] = GradientReaders::kChain;
    r_->param[i] = p;
    r_->signature[p] += Signature(op, p) + ";";
  }

  // The op with its vars named by their role in `p`'s chain.
  std::string Signature(const proto::OpDesc& op, const std::string& p) const {
    auto token = [&](const std::string& v) -> std::string {
      if (v == p) return "P";
      auto g = r_->grad_of.find(v);
      if (g != r_->grad_of.end() && g->second == p) return "G";
      auto o = r_->owner.find(v);
      if (o != r_->owner.end()) return "T" + std::to_string(r_->TempIndex(v));
      return "=" + v;
    };
    std::string s = op.type();
    for (const auto& a : op.attrs())
      if (a.name() != kOpRoleAttr && a.name() != kOpRoleVarAttr &&
          !IsOpAnnotationAttr(a.name()))
        s += "|" + a.ShortDebugString();
    for (const auto* slots : {&op.inputs(), &op.outputs()})
      for (const auto& slot : *slots) {
        s += "|" + slot.parameter() + ":";
        for (const auto& v : slot.arguments()) s += token(v) + ",";
      }
    return s;
  }

  const proto::BlockDesc& block_;
  GradientReaders* r_;
  std::set<std::string> norms_;  // partial squared norms
};

}  // namespace

size_t GradientReaders::TempIndex(const std::string& var) const {
  const std::vector<std::string>& t = temps.at(owner.at(var));
  return static_cast<size_t>(std::find(t.begin(), t.end(), var) - t.begin());
}

GradientReaders FindGradientReaders(const proto::BlockDesc& block) {
  GradientReaders r;
  r.kind.assign(block.ops_size(), GradientReaders::kNone);
  r.param.resize(block.ops_size());
  for (const auto& op : block.ops()) {
    if (!IsUpdateOp(op)) continue;
    const std::string p = OpInput(op, "Param")[0];
    const std::string g = OpInput(op, "Grad")[0];
    r.owner[p] = r.owner[g] = p;
    r.grad_of[g] = p;
    const proto::VarDesc* gv = FindVarDesc(block, g);
    if (gv != nullptr && gv->type() == proto::VarDesc::SELECTED_ROWS)
      r.replicated.insert(p);
  }
  ReaderScan scan(block, &r);
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    if (HasRole(op, OpRole::kOptimize) && !IsUpdateOp(op)) scan.Op(i);
  }
  return r;
}

}  // namespace fluid
