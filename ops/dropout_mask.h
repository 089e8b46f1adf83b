// dropout's mask as a pure function of (seed, rank, step, element index),
// shared by the CPU kernel and the CUDA kernel so that both keep exactly the
// same elements: a counter-based generator (SplitMix64's finaliser applied
// to a key and the index) needs no state between elements, so any thread
// can draw any element, and integer comparisons leave no room for the two
// compilers' float arithmetic to differ.
#pragma once

#include <cstdint>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// SplitMix64's output function: a bijection of 64-bit words that mixes
// every input bit into every output bit.
FLUID_HOSTDEVICE uint64_t Mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The key of one run of one dropout op: `base` (from its seed and the rank)
// mixed with the run's step counter.
FLUID_HOSTDEVICE uint64_t DropoutKey(uint64_t base, int64_t step) {
  return Mix64(base ^ Mix64(static_cast<uint64_t>(step)));
}

// Whether element i is kept: its 53-bit uniform draw r is at least
// `threshold` = round(dropout_prob * 2^53), so it is kept with probability
// 1 - dropout_prob.
FLUID_HOSTDEVICE bool DropoutKeeps(uint64_t key, int64_t i,
                                   uint64_t threshold) {
  return (Mix64(key + static_cast<uint64_t>(i)) >> 11) >= threshold;
}

// What a dropout kernel needs beyond its tensors.
struct DropoutParams {
  uint64_t base;       // seed and rank, mixed
  uint64_t threshold;  // see DropoutKeeps
  double keep_scale;   // multiplies kept elements in training
  double test_scale;   // multiplies every element in inference
  bool is_test;
  // Added to the Step counter: -1 for a recompute replay (replay_of), which
  // runs after the op it replays advanced the counter.
  int64_t step_offset;
  // Added to each element's index (a pipeline's micro-batch: the elements
  // of the micro-batches before it).
  int64_t index_offset;
};

// Reads and checks dropout's attrs (dropout_op.cc): the scales of
// dropout_implementation and, for the forward op, the mask's base from the
// seed (the attr, or one derived from Out's name when it is 0, or from
// replay_of's when that is set) and the rank of the run's communicator (0
// without one); the gradient needs no base.
DropoutParams GetDropoutParams(const ExecutionContext& ctx, bool forward);

}  // namespace ops
}  // namespace fluid
