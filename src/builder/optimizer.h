// Optimizers. Minimize() appends the backward pass for a loss and one
// optimize op per (parameter, gradient), each an ordinary op with role
// `optimize` and op_role_var = [param, grad], which is how the collective
// transpiler finds them.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "src/builder/program_builder.h"
#include "src/framework/backward.h"

namespace fluid {

struct OptimizerConfig {
  std::string type = "momentum";  // sgd | momentum | adam
  float learning_rate = 0.01f;
  float momentum = 0.9f;
  bool nesterov = false;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  float weight_decay = 0.0f;
  // Adam only: false = L2 added to the gradient (torch.optim.Adam), true =
  // decoupled (AdamW).
  bool decoupled_weight_decay = false;
};

class Optimizer {
 public:
  explicit Optimizer(float learning_rate) : learning_rate_(learning_rate) {}
  virtual ~Optimizer() = default;

  // Appends backward ops for `loss` and the optimize ops; returns the
  // (param, grad) pairs in parameter order.
  ParamGradList Minimize(ProgramBuilder* b, const std::string& loss,
                         const std::set<std::string>& no_grad = {});

 protected:
  virtual proto::OpDesc MakeOptimizeOp(ProgramBuilder* b,
                                       const std::string& param,
                                       const std::string& grad,
                                       const std::string& lr) = 0;
  float learning_rate_;
};

class SGDOptimizer : public Optimizer {
 public:
  explicit SGDOptimizer(float lr) : Optimizer(lr) {}

 protected:
  proto::OpDesc MakeOptimizeOp(ProgramBuilder* b, const std::string& param,
                               const std::string& grad,
                               const std::string& lr) override;
};

class MomentumOptimizer : public Optimizer {
 public:
  MomentumOptimizer(float lr, float momentum, bool nesterov = false,
                    float weight_decay = 0.0f)
      : Optimizer(lr),
        momentum_(momentum),
        nesterov_(nesterov),
        weight_decay_(weight_decay) {}

 protected:
  proto::OpDesc MakeOptimizeOp(ProgramBuilder* b, const std::string& param,
                               const std::string& grad,
                               const std::string& lr) override;

 private:
  float momentum_;
  bool nesterov_;
  float weight_decay_;
};

class AdamOptimizer : public Optimizer {
 public:
  AdamOptimizer(float lr, float beta1 = 0.9f, float beta2 = 0.999f,
                float epsilon = 1e-8f, float weight_decay = 0.0f,
                bool decoupled = false)
      : Optimizer(lr),
        beta1_(beta1),
        beta2_(beta2),
        epsilon_(epsilon),
        weight_decay_(weight_decay),
        decoupled_(decoupled) {}

 protected:
  proto::OpDesc MakeOptimizeOp(ProgramBuilder* b, const std::string& param,
                               const std::string& grad,
                               const std::string& lr) override;

 private:
  float beta1_, beta2_, epsilon_, weight_decay_;
  bool decoupled_;
};

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerConfig& config);

}  // namespace fluid
