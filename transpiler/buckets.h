// Gradient buckets: which gradients travel together in one collective, in
// the order the backward pass produces them, and the names of the buffers
// that hold them. The plan every collective pass works from
// (transpiler/passes/).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "proto/framework.pb.h"

namespace fluid {

// One allreduce's worth of gradients, in the order the backward pass
// produces them.
struct GradBucket {
  std::vector<std::string> grads;
  std::vector<std::string> params;
  std::vector<int64_t> numels;  // element count of each grad
  std::string fused;            // the contiguous buffer the grads are views of
  std::string handle;           // the in-flight allreduce
  int64_t bytes = 0;
  // Elements after the gradients that make the buffer split into nranks
  // equal shards (sharded optimizer only), held by the var `pad`.
  int64_t padding = 0;
  std::string pad;
  // One sparse gradient (SELECTED_ROWS): reduced by c_sparse_allreduce in
  // place (`fused` is the gradient itself), never coalesced.
  bool sparse = false;
  // Sharded optimizer: the gradients are allreduced whole (as in stage 1)
  // because an op before the update reads each whole gradient (clipping
  // by a parameter's own norm).
  bool whole = false;
};

// Packs the dense gradients of `main` into buckets of at most
// `max_bytes` (a larger gradient gets a bucket of its own; dtypes never
// mix), in the order the backward pass writes them. Sparse gradients
// (SELECTED_ROWS) are left to SparseGradBuckets. `group`, when given, keeps
// parameters with different keys in different buckets (as dtypes always
// are).
std::vector<GradBucket> PlanBuckets(
    const proto::ProgramDesc& main, int64_t max_bytes,
    const std::function<std::string(const std::string& param)>& group = {});
// One bucket per sparse gradient of `main`, in program order.
std::vector<GradBucket> SparseGradBuckets(const proto::ProgramDesc& main);

// The gradient buckets of a sharded job: PlanBuckets grouped by update op
// (parameters whose updates agree on type, attributes, learning rate and
// gradient chain share a bucket, so one op updates the whole shard), each
// padded to a multiple of nranks elements. An update that is not
// elementwise is refused (kUnimplemented). With `small_below` > 0
// (parameter sharding), parameters of fewer elements never share a bucket
// with larger ones, so that a bucket is sharded or replicated whole, and
// each larger one is a bucket of its own: what a step gathers at once is
// one parameter (and its gradient), not bucket_bytes of them.
std::vector<GradBucket> PlanShardedBuckets(const proto::ProgramDesc& main,
                                           int64_t max_bytes, int nranks,
                                           int64_t small_below = 0);

// The name of the shard of a bucket buffer.
std::string ShardName(const std::string& fused);
// A var holding this rank's shard only (optimizer state of a sharded
// update): it differs between ranks by design.
bool IsShardVar(const std::string& name);

}  // namespace fluid
