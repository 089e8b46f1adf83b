// Gradient merge (gradient accumulation; Fluid's GradientMergeOptimizer
// and DistributedStrategy.gradient_merge) as a rewrite of what one rank
// computes: the forward and backward passes run every micro-step, the
// optimizer once every k_steps of them, on the gradients of all k, so that
// k micro-steps of batch B train like one step of batch k x B with the
// activation memory of batch B.
//
// What the rewrite adds to main (and to startup, the zeros):
//   gradient_merge_step     first op: advances the persistable int64
//                           counter @GRAD_MERGE_STEP@ and writes the flags
//                           @GRAD_MERGE_SKIP@ (1 unless this micro-step
//                           closes a merged step), @GRAD_MERGE_START@ (1
//                           unless it opens one) and @GRAD_MERGE_SCALE@
//                           (1/count with avg, else 1);
//   per gradient g, right after the last backward op writing it:
//     elementwise_add       g@GRAD_MERGE += g   (persistable, zeroed by
//                                                startup; every micro-step)
//     elementwise_mul       g = g@GRAD_MERGE * @GRAD_MERGE_SCALE@
//     fill_zeros_like       g@GRAD_MERGE = 0    (these two: merged steps)
//   op_skip_if = @GRAD_MERGE_SKIP@ on every optimize op (clipping, weight
//   decay, fp16's unscaling and loss-scaling update, the updates), and
//   @GRAD_MERGE_START@ on the learning-rate schedule's counter, so that a
//   schedule advances once per merged step, when the merged step opens.
// With fp16's dynamic loss scaling the updates skip on @GRAD_MERGE_SKIP_FP16@
// (gradient_merge_skip, right after check_finite_and_unscale: neither
// merged nor finite). The accumulator sums the scaled gradients (the
// scaling changes only on merged steps, so every micro-step of one merged
// step has the same), and check_finite_and_unscale sees the sum: an Inf
// or a NaN in any micro-step skips the merged step. found_infinite is
// reset on every micro-step, so it says whether the run just made skipped
// its update.
//
// The collective passes then insert the reductions after the merge ops;
// the gradient_merge pass (transpiler/passes/gradient_merge.cc), last,
// puts op_skip_if = @GRAD_MERGE_SKIP@ on every collective that moves data
// outside the forward pass (the gradients' allreduce or reduce-scatter, the
// waits, the sharded parameters' all-gather), so collectives run on merged
// steps only, identically on every rank (the counter is the same on all).
#pragma once

#include <string>

#include "proto/distributed_strategy.pb.h"
#include "proto/framework.pb.h"
#include "src/framework/gradient_merge_state.h"

namespace fluid {

constexpr const char* kGradMergeSkipVar = "@GRAD_MERGE_SKIP@";
constexpr const char* kGradMergeStartVar = "@GRAD_MERGE_START@";
constexpr const char* kGradMergeScaleVar = "@GRAD_MERGE_SCALE@";
constexpr const char* kGradMergeSkipFp16Var = "@GRAD_MERGE_SKIP_FP16@";

// The accumulator of gradient `grad` ("fc_0.w_0@GRAD@GRAD_MERGE").
std::string GradMergeAccumulator(const std::string& grad);
// Whether `var` is an accumulator: a rank's own sum of its micro-steps'
// gradients, which differs across ranks between merged steps.
bool IsGradMergeAccumulator(const std::string& var);

// The job rewritten for gradient merge (above); linted. k_steps 1 is plain
// training: the job comes back unchanged. A job already rewritten with the
// same config comes back unchanged; with another, it is an error naming
// both. A sparse gradient (SELECTED_ROWS: an embedding with is_sparse) is
// an error naming it and is_sparse=False. `config` is checked (k_steps
// >= 1).
proto::TrainingJob GradientMergeRewrite(
    const proto::TrainingJob& job, const proto::GradientMergeConfig& config);

// The k_steps `main` was rewritten for, or 0 when it was not.
int GradientMergeSteps(const proto::ProgramDesc& main);

// Checks what the rewrite (and, on a collective job, its pass) promises of
// a rewritten `main`: gradient_merge_step comes before every op reading its
// flags; every updated gradient is accumulated into its persistable
// accumulator after the backward pass writes it, and merged and zeroed on
// merged steps only, before any optimize op reads it; every optimize op
// skips outside merged steps (on @GRAD_MERGE_SKIP@, or with fp16 on
// @GRAD_MERGE_SKIP_FP16@ after gradient_merge_skip); every collective that
// moves data outside the forward pass skips outside merged steps. Throws
// naming the op and the variable.
void LintGradientMerge(const proto::ProgramDesc& main);

// Whether `op` is a collective that moves data between ranks on every run
// it is not skipped (a wait for a gather kept across runs, idle_ok, is
// not: it finds nothing to wait for when the gather was skipped).
bool IsDataCollective(const proto::OpDesc& op);

}  // namespace fluid
