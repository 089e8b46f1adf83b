// The built-in models, as complete training jobs.
#pragma once

#include <string>
#include <vector>

#include "proto/framework.pb.h"
#include "src/builder/optimizer.h"

namespace fluid {

struct ModelOptions {
  // Optimizer; when left default, each model's tuned default is used.
  OptimizerConfig optimizer;
  bool default_optimizer = true;
  uint64_t seed = 1;
  DataType dtype = DataType::kFloat32;
  // The text models' learning-rate schedule (see TextModelOptions).
  int64_t warmup_steps = 0;
  int64_t decay_steps = 0;
};

// "mlp": 784-512-256-10, ReLU; default Momentum(lr 0.1, 0.9).
// "lenet": conv5x5x20-relu-maxpool2, conv5x5x50-relu-maxpool2, fc500-relu,
// fc10; default Momentum(lr 0.05, 0.9).
// "resnet": conv3x3x16-BN-relu, three stages of two basic residual blocks
// (conv3x3-BN-relu-conv3x3-BN plus the shortcut, relu; 16, 32 and 64
// channels, stride 2 and a 1x1 conv-BN shortcut entering stages 2 and 3),
// global average pool, fc10; default Momentum(lr 0.05, 0.9).
// "vgg": two groups of (conv3x3-BN-relu) x2 and maxpool2 (32 and 64
// channels), fc128-BN-relu, dropout 0.5, fc10; default Momentum(lr 0.05,
// 0.9).
// All take feeds "image" [N,1,28,28] float and "label" [N,1] int64, and
// report "loss" and "accuracy". Weights use PyTorch's default
// initialisation.
// "transformer", "textcnn" and "lstm": the text models of
// src/builder/text_models.h (a char language model and two topic
// classifiers over the fortunes data).
proto::TrainingJob BuildModel(const std::string& name,
                              const ModelOptions& options = {});

// The names BuildModel knows: mlp, lenet, resnet, vgg, transformer,
// textcnn, lstm.
const std::vector<std::string>& BuiltInModels();

// The model's default optimizer.
OptimizerConfig DefaultOptimizer(const std::string& name);

// Renames var `from` to `to` in every op and var desc of `program` (the
// models' stable names for what the trainer fetches).
void RenameVar(proto::ProgramDesc* program, const std::string& from,
               const std::string& to);

}  // namespace fluid
