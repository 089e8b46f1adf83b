#include "src/builder/optimizer.h"

#include <algorithm>
#include <map>

#include "src/framework/program_desc.h"

namespace fluid {

namespace {

// The optimize ops with a sparse path (ops/sparse_grad.h).
bool TakesSparseGradient(const std::string& op) {
  return op == "sgd" || op == "momentum" || op == "adam" || op == "adagrad";
}

// An accumulator shaped like `param`, zero-initialised.
std::string Accumulator(ProgramBuilder* b, const std::string& param,
                        const std::string& kind, float value = 0.0f) {
  const proto::VarDesc& p = GetVarDesc(b->main()->blocks(0), param);
  Shape shape = VarShape(p);
  DataType dtype = VarDtype(p);
  return b->CreatePersistable(b->UniqueName(param + "_" + kind), shape, dtype,
                              value);
}

}  // namespace

ParamGradList Optimizer::Selected(ParamGradList pairs) const {
  if (only_.empty()) return pairs;
  ParamGradList kept;
  for (const auto& pg : pairs)
    if (std::find(only_.begin(), only_.end(), pg.first) != only_.end())
      kept.push_back(pg);
  return kept;
}

std::string Optimizer::LearningRate(ProgramBuilder* b, DataType dtype) {
  if (lr_var_.empty()) {
    FLUID_ENFORCE(learning_rate_ > 0.0f, "learning rate must be positive, got ",
                  learning_rate_);
    return b->CreatePersistable(b->UniqueName("learning_rate"), Shape{1}, dtype,
                                learning_rate_);
  }
  const proto::VarDesc& v = GetVarDesc(b->main()->blocks(0), lr_var_);
  const int64_t n = VarShape(v).numel();
  FLUID_ENFORCE(n == 1 || n < 0, "learning rate var '", lr_var_,
                "' must hold one element, has shape ", VarShape(v));
  return lr_var_;
}

void Optimizer::PrepareSparseGradients(ProgramBuilder* b,
                                       const ParamGradList& pairs) const {
  for (const auto& [param, grad] : pairs) {
    if (GetVarDesc(b->main()->blocks(0), grad).type() !=
        proto::VarDesc::SELECTED_ROWS)
      continue;
    const std::string op = OpType();
    FLUID_ENFORCE(TakesSparseGradient(op), "parameter '", param,
                  "' has a sparse gradient (embedding(is_sparse=True)), ",
                  "which the ", op, " optimizer does not take; use SGD, ",
                  "Momentum, Adam or Adagrad, or is_sparse=False");
    const bool clipped =
        GradientClipOf(*b, param, clip_).kind != GradientClip::Kind::kNone;
    const bool decayed = RegularizationOf(*b, param, regularization_).kind !=
                         Regularization::Kind::kNone;
    if (clipped || decayed)
      b->AppendOp(
          MakeOp("merge_selected_rows", {{"X", {grad}}}, {{"Out", {grad}}}),
          static_cast<int>(OpRole::kOptimize));
  }
}

ParamGradList Optimizer::Minimize(ProgramBuilder* b, const std::string& loss,
                                  const std::set<std::string>& no_grad) {
  ParamGradList pairs = Selected(AppendBackward(b->main(), loss, no_grad));
  FLUID_ENFORCE(!pairs.empty(), "loss '", loss,
                "' depends on no trainable parameter",
                only_.empty() ? "" : " of parameter_list");
  PrepareSparseGradients(b, pairs);
  // Fluid's order: clip, then regularize, then update.
  AppendGradientClips(b, pairs, clip_);
  for (const auto& [param, grad] : pairs)
    AppendRegularization(b, param, grad,
                         RegularizationOf(*b, param, regularization_));
  const proto::VarDesc& first =
      GetVarDesc(b->main()->blocks(0), pairs.front().first);
  const DataType dtype = VarDtype(first);
  const std::string base_lr = LearningRate(b, dtype);
  finish_ops_.clear();
  // One learning rate per multiplier the parameters ask for (a ParamAttr's
  // learning_rate): a constant rate gets a var of its own, filled in
  // startup (no op in main); a scheduled one a scale op of the schedule.
  std::map<float, std::string> lrs = {{1.0f, base_lr}};
  auto lr_for = [&](const std::string& param) {
    float scale = GetVarDesc(b->main()->blocks(0), param).learning_rate();
    auto it = lrs.find(scale);
    if (it != lrs.end()) return it->second;
    std::string lr;
    if (lr_var_.empty()) {
      lr = b->CreatePersistable(b->UniqueName("learning_rate"), Shape{1}, dtype,
                                learning_rate_ * scale);
    } else {
      lr = b->CreateTmpVar("learning_rate", dtype);
      b->AppendOp(MakeOp("scale", {{"X", {base_lr}}}, {{"Out", {lr}}},
                         {{"scale", scale}}),
                  static_cast<int>(OpRole::kOptimize));
    }
    return lrs.emplace(scale, lr).first->second;
  };
  for (const auto& pg : pairs) {
    proto::OpDesc op = MakeOptimizeOp(b, pg.first, pg.second, lr_for(pg.first));
    SetOpAttr(&op, kOpRoleAttr, static_cast<int32_t>(OpRole::kOptimize));
    SetOpAttr(&op, kOpRoleVarAttr,
              std::vector<std::string>{pg.first, pg.second});
    b->AppendOp(std::move(op));
  }
  for (auto& op : finish_ops_)
    b->AppendOp(std::move(op), static_cast<int>(OpRole::kOptimize));
  finish_ops_.clear();
  return pairs;
}

proto::OpDesc SGDOptimizer::MakeOptimizeOp(ProgramBuilder* b,
                                           const std::string& param,
                                           const std::string& grad,
                                           const std::string& lr) {
  return MakeOp("sgd",
                {{"Param", {param}}, {"Grad", {grad}}, {"LearningRate", {lr}}},
                {{"ParamOut", {param}}});
}

proto::OpDesc MomentumOptimizer::MakeOptimizeOp(ProgramBuilder* b,
                                                const std::string& param,
                                                const std::string& grad,
                                                const std::string& lr) {
  std::string velocity = Accumulator(b, param, "velocity");
  return MakeOp("momentum",
                {{"Param", {param}},
                 {"Grad", {grad}},
                 {"Velocity", {velocity}},
                 {"LearningRate", {lr}}},
                {{"ParamOut", {param}}, {"VelocityOut", {velocity}}},
                {{"mu", momentum_},
                 {"use_nesterov", nesterov_},
                 {"weight_decay", weight_decay_}});
}

proto::OpDesc AdamOptimizer::MakeOptimizeOp(ProgramBuilder* b,
                                            const std::string& param,
                                            const std::string& grad,
                                            const std::string& lr) {
  std::string m1 = Accumulator(b, param, "moment1");
  std::string m2 = Accumulator(b, param, "moment2");
  DataType dtype = VarDtype(GetVarDesc(b->main()->blocks(0), param));
  std::string b1 = b->CreatePersistable(b->UniqueName(param + "_beta1_pow"),
                                        Shape{1}, dtype, beta1_);
  std::string b2 = b->CreatePersistable(b->UniqueName(param + "_beta2_pow"),
                                        Shape{1}, dtype, beta2_);
  proto::OpDesc op = MakeOp("adam",
                            {{"Param", {param}},
                             {"Grad", {grad}},
                             {"LearningRate", {lr}},
                             {"Moment1", {m1}},
                             {"Moment2", {m2}},
                             {"Beta1Pow", {b1}},
                             {"Beta2Pow", {b2}}},
                            {{"ParamOut", {param}},
                             {"Moment1Out", {m1}},
                             {"Moment2Out", {m2}},
                             {"Beta1PowOut", {b1}},
                             {"Beta2PowOut", {b2}}},
                            {{"beta1", beta1_},
                             {"beta2", beta2_},
                             {"epsilon", epsilon_},
                             {"weight_decay", weight_decay_},
                             {"decoupled_weight_decay", decoupled_}});
  // Set only when asked for: programs without it stay as they were.
  if (lazy_mode_) SetOpAttr(&op, "lazy_mode", true);
  return op;
}

proto::OpDesc StateOptimizer::MakeOptimizeOp(ProgramBuilder* b,
                                             const std::string& param,
                                             const std::string& grad,
                                             const std::string& lr) {
  std::vector<std::pair<std::string, std::vector<std::string>>> in = {
      {"Param", {param}}, {"Grad", {grad}}};
  std::vector<std::pair<std::string, std::vector<std::string>>> out = {
      {"ParamOut", {param}}};
  if (uses_lr_) in.push_back({"LearningRate", {lr}});
  for (const State& s : states_) {
    std::string kind = s.slot;
    std::transform(kind.begin(), kind.end(), kind.begin(), ::tolower);
    const std::string acc = Accumulator(b, param, kind, s.init);
    in.push_back({s.slot, {acc}});
    out.push_back({s.slot + "Out", {acc}});
  }
  if (beta1_ > 0.0f) {
    DataType dtype = VarDtype(GetVarDesc(b->main()->blocks(0), param));
    std::string pow = b->CreatePersistable(b->UniqueName(param + "_beta1_pow"),
                                           Shape{1}, dtype, beta1_);
    in.push_back({"Beta1Pow", {pow}});
    finish_ops_.push_back(
        MakeOp("scale", {{"X", {pow}}}, {{"Out", {pow}}}, {{"scale", beta1_}}));
  }
  return MakeOp(op_, in, out, attrs_);
}

namespace {

std::unique_ptr<Optimizer> MakeUpdateRule(const OptimizerConfig& c) {
  using S = StateOptimizer::State;
  const float lr = c.learning_rate;
  if (c.type == "sgd") return std::make_unique<SGDOptimizer>(lr);
  if (c.type == "momentum")
    return std::make_unique<MomentumOptimizer>(lr, c.momentum, c.nesterov,
                                               c.weight_decay);
  if (c.type == "adam")
    return std::make_unique<AdamOptimizer>(
        lr, c.beta1, c.beta2, c.epsilon, c.weight_decay,
        c.decoupled_weight_decay, c.lazy_mode);
  if (c.type == "adagrad")
    return std::make_unique<StateOptimizer>(
        lr, "adagrad", std::vector<S>{{"Moment", c.initial_accumulator_value}},
        AttributeMap{{"epsilon", c.epsilon}});
  if (c.type == "decayed_adagrad")
    return std::make_unique<StateOptimizer>(
        lr, "decayed_adagrad", std::vector<S>{{"Moment", 0.0f}},
        AttributeMap{{"decay", c.decay}, {"epsilon", c.epsilon}});
  if (c.type == "rmsprop")
    return std::make_unique<StateOptimizer>(
        lr, "rmsprop",
        std::vector<S>{
            {"Moment", 0.0f}, {"MeanSquare", 0.0f}, {"MeanGrad", 0.0f}},
        AttributeMap{{"decay", c.rho},
                     {"epsilon", c.epsilon},
                     {"momentum", c.momentum},
                     {"centered", c.centered}});
  if (c.type == "adamax")
    return std::make_unique<StateOptimizer>(
        lr, "adamax", std::vector<S>{{"Moment", 0.0f}, {"InfNorm", 0.0f}},
        AttributeMap{
            {"beta1", c.beta1}, {"beta2", c.beta2}, {"epsilon", c.epsilon}},
        true, c.beta1);
  if (c.type == "adadelta")
    return std::make_unique<StateOptimizer>(
        lr, "adadelta",
        std::vector<S>{{"AvgSquaredGrad", 0.0f}, {"AvgSquaredUpdate", 0.0f}},
        AttributeMap{{"rho", c.rho}, {"epsilon", c.epsilon}}, false);
  if (c.type == "lars_momentum")
    return std::make_unique<StateOptimizer>(
        lr, "lars_momentum", std::vector<S>{{"Velocity", 0.0f}},
        AttributeMap{{"mu", c.momentum},
                     {"lars_coeff", c.lars_coeff},
                     {"lars_weight_decay", c.lars_weight_decay}});
  FLUID_THROW(ErrorCode::kInvalidArgument, "unknown optimizer '", c.type,
              "'; known: sgd, momentum, adam, adagrad, decayed_adagrad, ",
              "rmsprop, adamax, adadelta, lars_momentum");
}

}  // namespace

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerConfig& c) {
  std::unique_ptr<Optimizer> opt = MakeUpdateRule(c);
  opt->set_learning_rate_var(c.learning_rate_var);
  opt->set_regularization(c.regularization);
  opt->set_gradient_clip(c.gradient_clip);
  opt->set_parameter_list(c.parameter_list);
  return opt;
}

}  // namespace fluid
