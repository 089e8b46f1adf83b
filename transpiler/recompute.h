// Recompute (activation checkpointing) as a program rewrite: Fluid's
// RecomputeOptimizer and DistributedStrategy.recompute, done here in C++ so
// that the trainer, the Python package and the distributed passes share it.
//
// The forward pass is cut into segments at the checkpoint variables:
// segment 0 runs from the first op to the op writing the first checkpoint,
// segment s from there to the op writing checkpoint s. The ops after the
// last checkpoint (the tail, up to the loss) are not replayed: their
// backward ops run right after them, so keeping their values costs no more
// than replaying them would.
//
// A segment's intermediates are the non-persistable variables its ops write
// that are neither checkpoints nor read by a forward op of another segment
// (a value shared across segments, such as an attention mask, is kept). The
// backward ops read `<var>@RECOMPUTE` copies of them instead, written by a
// replay of the segment's forward ops (those the copies need) inserted just
// before the first backward op reading one. The replay ops carry the
// backward role and the attr `recompute_segment` (the segment's number);
// each writes only @RECOMPUTE copies. So the originals' last use is in the
// forward pass, and an executor that frees a variable after its last use
// frees them there.
//
// A replay computes what its op computed the first time:
//  - dropout: the replay has `replay_of` set to the replayed op's Out (the
//    same seed) and no StepOut; it draws the mask of Step - 1, the step the
//    replayed op drew before it advanced the counter (ops/dropout_op.cc);
//  - batch_norm: the replay writes its running statistics (MeanOut,
//    VarianceOut) to @RECOMPUTE scratch copies, so they move once per step;
//    its batch statistics come from the same X, so they are the same. With
//    sync_stats (synchronised batch norm) the replay allreduces its sums
//    again: every rank replays with the inputs it had, in the same order, so
//    the sums, and the statistics, are those of the forward pass on every
//    rank;
//  - an op that cannot run twice to the same effect (a collective, a random
//    op other than dropout, any other op writing a persistable variable) is
//    not replayed: its outputs are kept from the forward pass.
// With mixed precision (which runs first) the casts inside a segment are
// replayed like any other op (a cast of a float32 parameter gives the same
// 16-bit value twice).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/distributed_strategy.pb.h"
#include "proto/framework.pb.h"

namespace fluid {

// The suffix of a recomputed copy: "fc_0.tmp_1" -> "fc_0.tmp_1@RECOMPUTE".
inline constexpr char kRecomputeSuffix[] = "@RECOMPUTE";
// The attr marking a replay op: the number of the segment it replays.
inline constexpr char kRecomputeSegmentAttr[] = "recompute_segment";

// The checkpoints `auto` chooses in a training program (after minimize):
// the output of every residual add (an elementwise_add of two
// non-persistable variables of one shape that both carry a gradient) and
// of every recurrent layer (lstm, gru: Hidden) that is a cut of the forward
// pass: no later forward op reads a variable carrying a gradient that was
// written before it, but it. In the built-in models: the transformer's two
// residual adds per block (after attention, after the feed-forward part),
// each residual block's output in resnet, the lstm layer's hidden states.
// An empty list when the program has none.
std::vector<std::string> AutoCheckpoints(const proto::ProgramDesc& main);

// The job with main's backward pass reading recomputed activations (see
// above). config.checkpoints names variables of main written by its forward
// pass; empty or {"auto"}: AutoCheckpoints. A name that is not a variable
// of main, or names one the forward pass does not compute (a feed, a
// parameter), is an error naming it. A job already rewritten comes back
// unchanged. Linted before it is returned.
proto::TrainingJob RecomputeRewrite(const proto::TrainingJob& job,
                                    const proto::RecomputeConfig& config);

// The checkpoints RecomputeRewrite uses for `config` on `main`: the
// resolved list, in forward order.
std::vector<std::string> ResolveCheckpoints(
    const proto::ProgramDesc& main, const proto::RecomputeConfig& config);

// Checks what the rewrite promises of `main` with `checkpoints`: every
// backward read of a segment intermediate reads its @RECOMPUTE copy, every
// @RECOMPUTE copy is written by a replay op before any op reads it, replay
// ops write only @RECOMPUTE copies (no persistable variable), and no forward
// op reads a copy. Throws naming the op and variable.
void LintRecompute(const proto::ProgramDesc& main,
                   const std::vector<std::string>& checkpoints);

// The bytes of the non-persistable variables live across the end of the
// forward pass of training program `main` (used by a forward op and by an
// op after it, other than for its shape alone), with `batch` for each
// unknown (-1) dimension: what an executor that frees a variable after its
// last use still holds when the backward pass starts.
int64_t LiveBytesAfterForward(const proto::ProgramDesc& main, int64_t batch);

}  // namespace fluid
