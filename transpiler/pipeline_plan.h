// The stage of each op of a program about to be pipelined
// (transpiler/pipeline.h says the rules).
#pragma once

#include <map>
#include <set>
#include <string>

#include "proto/framework.pb.h"
#include "transpiler/pipeline.h"

namespace fluid {

// The stage of a sum over every stage's values (a global norm's squares):
// each stage sums its own, then the pipeline sums the stages' sums.
constexpr int kSplitSum = -2;
// The stage of fp16's check of the gradients and its loss-scale update
// (check_finite_and_unscale, update_loss_scaling): every stage runs its
// own on its own gradients, and the stages agree on the overflow flag
// before the update, so that every stage skips the same steps and keeps
// the same loss scale.
constexpr int kSplitStages = -3;

struct PipelinePlan {
  // Op index -> stage; -1: every stage (data-only forward ops, optimizer
  // ops of no stage); kSplitSum; kSplitStages. Collective ops are refused.
  std::map<int, int> stage;
  // Forward ops that read no parameter and nothing computed from one.
  std::set<int> data_only;
  // Forward ops once per step, not per micro-batch, on every stage: those
  // that read nothing computed from the data and whose results no op on
  // the data's path reads (a learning-rate schedule and its step counter).
  std::set<int> step_ops;
  // Forward ops that read parameters but not the data (mixed precision's
  // casts of weights, placed before the ops that read them): each runs on
  // the stage of its first reader.
  std::set<int> weight_ops;
  // The stage of each value made by a forward op (-1: data-only) and of
  // each parameter read in the forward pass.
  std::map<std::string, int> value_stage;
  // The stage of each value an optimizer op on one stage writes.
  std::map<std::string, int> optimize_value_stage;
};

// The plan for block 0 of a program, cut into `stages` stages. Throws
// naming the op when the cuts break the rules.
PipelinePlan PlanPipeline(const proto::BlockDesc& block, int stages);

}  // namespace fluid
