// The ops that read a gradient between its reduction and its update
// (gradient clipping, regularization), sorted out per parameter, so that a
// sharded optimizer can run them on the shards of its buckets.
//
// Each such op belongs to one parameter's chain (its inputs are the
// parameter, its gradient, constants, or temporaries of that chain), or
// is the sum of the chains' squared norms (GradientClipByGlobalNorm).
// Chain ops must be elementwise, so that on a shard (parts of several
// parameters) they compute what they would on each parameter:
//   clip, sign, scale, sum, elementwise_mul by a one-element var, and
//   squared_l2_norm, whose partial norm only a norm sum may read (sharded,
//   the sum becomes one of the shards' partial norms, then a scalar
//   allreduce of the total).
// Or the chain is whole: clip_by_norm needs its parameter's whole
// gradient, so a chain with it runs as it is, on whole gradients (its
// bucket is allreduced, not reduce-scattered). fp16's loss-scaling ops
// (check_finite_and_unscale, update_loss_scaling) read every gradient: they
// are their own kind, and sharded they read the gradient shards (each rank
// checks its own, and the found-infinite flag is max-reduced). The chain
// of a parameter with a sparse gradient is never split: any op goes.
// Anything else is refused with a message naming the op.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "proto/framework.pb.h"

namespace fluid {

struct GradientReaders {
  enum Kind { kNone, kChain, kNormSum, kLossScaling };
  std::vector<Kind> kind;          // per op of the block
  std::vector<std::string> param;  // the chain of a kChain op
  // A parameter's chain as a string, its vars named by role: parameters
  // with equal strings can share the chain's ops on a shard (none: no
  // chain).
  std::map<std::string, std::string> signature;
  // Temporaries of each chain, in the order they are written.
  std::map<std::string, std::vector<std::string>> temps;
  // The chain a temporary, parameter or gradient belongs to.
  std::map<std::string, std::string> owner;
  // The parameter whose gradient a var is (grad -> param).
  std::map<std::string, std::string> grad_of;
  // Parameters whose chains run on whole gradients.
  std::set<std::string> whole;
  // Parameters whose gradients hold sparse rows (an embedding with
  // is_sparse): a sharded optimizer keeps them whole on every rank, and
  // their chains run as they are, whatever their ops.
  std::set<std::string> replicated;

  // Index of temporary `var` in its chain.
  size_t TempIndex(const std::string& var) const;
};

// Sorts out the optimize ops of `block` other than the updates; an error
// (kUnimplemented) names an op that cannot run on shards.
GradientReaders FindGradientReaders(const proto::BlockDesc& block);

}  // namespace fluid
