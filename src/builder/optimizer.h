// Optimizers. Minimize() appends the backward pass for a loss and one
// optimize op per (parameter, gradient), each an ordinary op with role
// `optimize` and op_role_var = [param, grad], which is how the collective
// transpiler finds them.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "src/builder/clip.h"
#include "src/builder/program_builder.h"
#include "src/builder/regularizer.h"
#include "src/framework/backward.h"

namespace fluid {

struct OptimizerConfig {
  // sgd | momentum | adam | adagrad | decayed_adagrad | rmsprop | adamax |
  // adadelta | lars_momentum
  std::string type = "momentum";
  float learning_rate = 0.01f;
  // A one-element var of the program (an LR schedule) used instead of
  // learning_rate when set.
  std::string learning_rate_var;
  float momentum = 0.9f;
  bool nesterov = false;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  float weight_decay = 0.0f;
  // Adam only: false = L2 added to the gradient (torch.optim.Adam), true =
  // decoupled (AdamW).
  bool decoupled_weight_decay = false;
  // Adam only: a sparse gradient updates only the rows it touches (Fluid's
  // lazy_mode); see ops/adam_op.cc.
  bool lazy_mode = false;
  float rho = 0.95f;                    // rmsprop (its decay), adadelta
  float decay = 0.95f;                  // decayed_adagrad
  bool centered = false;                // rmsprop
  float initial_accumulator_value = 0;  // adagrad
  float lars_coeff = 0.001f;
  float lars_weight_decay = 0.0005f;
  // Applied to every parameter without one of its own (ParamAttr).
  Regularization regularization;
  GradientClip gradient_clip;
  // Only these parameters are updated when not empty.
  std::vector<std::string> parameter_list;
};

class Optimizer {
 public:
  explicit Optimizer(float learning_rate) : learning_rate_(learning_rate) {}
  virtual ~Optimizer() = default;

  // Appends backward ops for `loss`, then (all with the optimize role) the
  // gradient clips, the regularization and the optimize ops; returns the
  // (param, grad) pairs in parameter order.
  ParamGradList Minimize(ProgramBuilder* b, const std::string& loss,
                         const std::set<std::string>& no_grad = {});

  // The knobs Minimize applies besides the update rule itself.
  void set_learning_rate_var(const std::string& var) { lr_var_ = var; }
  void set_regularization(const Regularization& r) { regularization_ = r; }
  void set_gradient_clip(const GradientClip& c) { clip_ = c; }
  void set_parameter_list(const std::vector<std::string>& p) { only_ = p; }

 protected:
  // Ops to append (optimize role) after the last optimize op, e.g. the
  // advance of a beta power; MakeOptimizeOp may add to it.
  std::vector<proto::OpDesc> finish_ops_;

  virtual proto::OpDesc MakeOptimizeOp(ProgramBuilder* b,
                                       const std::string& param,
                                       const std::string& grad,
                                       const std::string& lr) = 0;
  // The type of the optimize op MakeOptimizeOp appends.
  virtual std::string OpType() const = 0;
  float learning_rate_;

 private:
  std::string LearningRate(ProgramBuilder* b, DataType dtype);
  ParamGradList Selected(ParamGradList pairs) const;
  // Sparse gradients (SELECTED_ROWS): refused by an optimize op without a
  // sparse path, naming the parameter; merged (merge_selected_rows) where a
  // clip or a decay follows, so that those act on each touched row's whole
  // gradient, once.
  void PrepareSparseGradients(ProgramBuilder* b,
                              const ParamGradList& pairs) const;

  std::string lr_var_;
  Regularization regularization_;
  GradientClip clip_;
  std::vector<std::string> only_;
};

class SGDOptimizer : public Optimizer {
 public:
  explicit SGDOptimizer(float lr) : Optimizer(lr) {}

 protected:
  proto::OpDesc MakeOptimizeOp(ProgramBuilder* b, const std::string& param,
                               const std::string& grad,
                               const std::string& lr) override;
  std::string OpType() const override { return "sgd"; }
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
  std::string OpType() const override { return "momentum"; }

 private:
  float momentum_;
  bool nesterov_;
  float weight_decay_;
};

class AdamOptimizer : public Optimizer {
 public:
  AdamOptimizer(float lr, float beta1 = 0.9f, float beta2 = 0.999f,
                float epsilon = 1e-8f, float weight_decay = 0.0f,
                bool decoupled = false, bool lazy_mode = false)
      : Optimizer(lr),
        beta1_(beta1),
        beta2_(beta2),
        epsilon_(epsilon),
        weight_decay_(weight_decay),
        decoupled_(decoupled),
        lazy_mode_(lazy_mode) {}

 protected:
  proto::OpDesc MakeOptimizeOp(ProgramBuilder* b, const std::string& param,
                               const std::string& grad,
                               const std::string& lr) override;
  std::string OpType() const override { return "adam"; }

 private:
  float beta1_, beta2_, epsilon_, weight_decay_;
  bool decoupled_;
  bool lazy_mode_;
};

// An optimizer whose op keeps state tensors shaped like the parameter
// (adagrad, decayed_adagrad, rmsprop, adamax, adadelta, lars_momentum): the
// op's state slots, their starting values and its attrs describe it.
class StateOptimizer : public Optimizer {
 public:
  struct State {
    std::string slot;  // input slot; the output is slot + "Out"
    float init;
  };
  // `beta1` > 0 (adamax): the op also reads Beta1Pow = beta1^t, advanced by
  // a scale op after the updates. `uses_lr` false (adadelta): no
  // LearningRate input.
  StateOptimizer(float lr, std::string op, std::vector<State> states,
                 AttributeMap attrs, bool uses_lr = true, float beta1 = 0.0f)
      : Optimizer(lr),
        op_(std::move(op)),
        states_(std::move(states)),
        attrs_(std::move(attrs)),
        uses_lr_(uses_lr),
        beta1_(beta1) {}

 protected:
  proto::OpDesc MakeOptimizeOp(ProgramBuilder* b, const std::string& param,
                               const std::string& grad,
                               const std::string& lr) override;
  std::string OpType() const override { return op_; }

 private:
  std::string op_;
  std::vector<State> states_;
  AttributeMap attrs_;
  bool uses_lr_;
  float beta1_;
};

// The optimizer of `config`, with its learning rate var, regularization,
// clip and parameter list set.
std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerConfig& config);

}  // namespace fluid
