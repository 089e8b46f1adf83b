// Mixed precision as a program rewrite (Fluid's fluid.contrib.
// mixed_precision, done here in C++ so that the trainer, the Python package
// and the distributed passes share it).
//
// The forward pass is rewritten op by op by three lists:
//  - white ops (conv2d, mul, matmul, the recurrences lstm, gru, lstm_unit
//    and gru_unit) run in the 16-bit type;
//  - black ops (softmax, the losses, mean and the reductions, exp/log,
//    lookups) run in float32;
//  - gray ops (elementwise arithmetic, activations, pooling, dropout, the
//    norms, data movement) run in the 16-bit type when one of their float
//    inputs already is, else in float32;
//  - any other op runs in float32.
// An op runs in the 16-bit type only where it has 16-bit kernels for itself
// and its gradient ops; otherwise it runs in float32 whatever its list.
// A `cast` is inserted once per variable and type and reused until the
// variable is written again; a cast never reads a cast. batch_norm and
// layer_norm keep their scale, bias and statistics in float32. Parameters
// stay float32 master weights: each low-precision op reads a per-step cast
// of them, and the cast's gradient brings the parameter's gradient back to
// float32, so the optimizer, clipping and regularization are untouched.
//
// The backward pass is regenerated from the rewritten forward pass
// (AppendBackward), so every gradient op matches its forward op's types.
// With fp16 the loss is multiplied by a persistable `loss_scaling` before
// differentiation; check_finite_and_unscale divides the parameters'
// gradients by it (before clipping and regularization, after the gradients'
// allreduce) and flags a non-finite one; with dynamic loss scaling
// update_loss_scaling adapts the scale, and the updates carry op_skip_if so
// a step with a non-finite gradient leaves parameters and optimizer state
// as they were. bf16 has float32's range and needs none of this.
#pragma once

#include <set>
#include <string>

#include "proto/distributed_strategy.pb.h"
#include "proto/framework.pb.h"
#include "src/framework/loss_scaling_state.h"
#include "src/framework/types.h"

namespace fluid {

struct AmpLists {
  std::set<std::string> white;
  std::set<std::string> black;
  std::set<std::string> gray;
};

// The default lists with config's custom lists moved in (a custom white op
// leaves the black and gray lists, a custom black op the white and gray
// ones). An op in both custom lists, or a name no op has, is an error
// naming it.
AmpLists MakeAmpLists(const proto::AmpConfig& config);

// The 16-bit type config.dtype names.
DataType AmpDtype(const proto::AmpConfig& config);

// The job rewritten to mixed precision: main's forward pass (and the test
// program's, when the job has one) by the lists, main's backward pass
// regenerated, the loss scaling added for fp16, and main stamped with the
// type (ProgramDesc.mixed_precision). A job already rewritten for the same
// type comes back unchanged; for another type it is an error. Linted before
// it is returned.
proto::TrainingJob MixedPrecisionRewrite(const proto::TrainingJob& job,
                                         const proto::AmpConfig& config);

// A forward-only program (for evaluation or inference) rewritten by the
// lists: what MixedPrecisionRewrite does to the test program.
proto::ProgramDesc MixedPrecisionForward(const proto::ProgramDesc& program,
                                         const proto::AmpConfig& config);

// Checks what the rewrite promises of `main` (stamped by it): every op
// reads its float inputs in one type (the 16-bit type, or float32; the
// norms' parameters float32), white ops with 16-bit kernels run in 16
// bits, black ops in float32, no cast reads a cast, no variable is cast
// twice to one type between writes, every parameter and its gradient are
// float32 where the optimizer updates them, and with fp16 every updated
// gradient is unscaled by check_finite_and_unscale before the first
// optimizer op reads it. Throws naming the op and variable.
void LintMixedPrecision(const proto::ProgramDesc& main,
                        const proto::AmpConfig& config);

}  // namespace fluid
