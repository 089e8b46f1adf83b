#include "src/builder/optimizer.h"

#include <map>

#include "src/framework/program_desc.h"

namespace fluid {

namespace {

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

ParamGradList Optimizer::Minimize(ProgramBuilder* b, const std::string& loss,
                                  const std::set<std::string>& no_grad) {
  FLUID_ENFORCE(learning_rate_ > 0.0f, "learning rate must be positive, got ",
                learning_rate_);
  ParamGradList pairs = AppendBackward(b->main(), loss, no_grad);
  FLUID_ENFORCE(!pairs.empty(), "loss '", loss,
                "' depends on no trainable parameter");
  const proto::VarDesc& first =
      GetVarDesc(b->main()->blocks(0), pairs.front().first);
  // One learning-rate var per multiplier the parameters ask for (a
  // ParamAttr's learning_rate), each filled in startup: no op in main.
  std::map<float, std::string> lrs;
  auto lr_for = [&](const std::string& param) {
    float scale = GetVarDesc(b->main()->blocks(0), param).learning_rate();
    auto it = lrs.find(scale);
    if (it != lrs.end()) return it->second;
    std::string lr =
        b->CreatePersistable(b->UniqueName("learning_rate"), Shape{1},
                             VarDtype(first), learning_rate_ * scale);
    return lrs.emplace(scale, lr).first->second;
  };
  for (const auto& pg : pairs) {
    proto::OpDesc op = MakeOptimizeOp(b, pg.first, pg.second, lr_for(pg.first));
    SetOpAttr(&op, kOpRoleAttr, static_cast<int32_t>(OpRole::kOptimize));
    SetOpAttr(&op, kOpRoleVarAttr,
              std::vector<std::string>{pg.first, pg.second});
    b->AppendOp(std::move(op));
  }
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
  return MakeOp("adam",
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
}

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerConfig& c) {
  if (c.type == "sgd") return std::make_unique<SGDOptimizer>(c.learning_rate);
  if (c.type == "momentum")
    return std::make_unique<MomentumOptimizer>(c.learning_rate, c.momentum,
                                               c.nesterov, c.weight_decay);
  if (c.type == "adam")
    return std::make_unique<AdamOptimizer>(c.learning_rate, c.beta1, c.beta2,
                                           c.epsilon, c.weight_decay,
                                           c.decoupled_weight_decay);
  FLUID_THROW(ErrorCode::kInvalidArgument, "unknown optimizer '", c.type,
              "'; known: sgd, momentum, adam");
}

}  // namespace fluid
