// Parameter sharding (ZeRO stage 3), the part of the sharding rewrite
// (transpiler/sharding.h) that keeps a bucket's parameters as shards
// between their uses: the persistable var of bucket k is its shard
// (fused_param_k@COALESCED@SHARD, this rank's 1/N of the padded buffer),
// which the update writes in place; the parameters are non-persistable
// views of a full-size buffer that exists only while the step reads them:
//
//   coalesce_tensor  params -> fused_param_k       (views, zeroed)
//   c_allgather      fused_param_k@SHARD -> fused_param_k (async)
//   c_wait           before the bucket's first reader
//   ... readers ...
//   delete_var       fused_param_k, params          after the last reader
//
// once for the forward pass and once for the backward pass (a bucket read
// in both whose backward gather would be issued before its last forward
// reader keeps its copy instead, and so does one whose backward pass reads
// it again before more than `max_reuse_distance` elements of other
// buckets are read: re-gathering it would cost more than keeping it).
// Gathers are issued `prefetch` buckets ahead, in the order the pass first
// reads the buckets. The gradients of
// such a bucket are coalesced just before the backward pass first writes
// one of them and freed once their reduce-scatter is waited for.
#pragma once

#include <string>
#include <vector>

#include "proto/framework.pb.h"
#include "src/framework/types.h"

namespace fluid {

// One bucket whose parameters live as shards.
struct ParamShardBucket {
  std::string fused;               // the full buffer (non-persistable)
  std::string shard;               // this rank's shard (persistable)
  std::string handle;              // the gathers' handle
  std::vector<std::string> views;  // the parameters, then the padding
  std::vector<int64_t> numels;     // of the views
  std::vector<int64_t> shapes;     // of the views: rank, then dims, each
  DataType dtype = DataType::kFloat32;
  // The gradient bucket: its buffer, views (with padding) and the
  // reduce-scatter's handle.
  std::string grad_fused;
  std::vector<std::string> grad_views;
  std::string grad_handle;
};

// Inserts each bucket's gathers, waits and frees into `main` (whose
// updates already read the shards), and moves its gradients' coalesce to
// the backward pass.
void PlaceParamGathers(const std::vector<ParamShardBucket>& buckets,
                       int prefetch, int64_t max_reuse_distance, int nranks,
                       proto::BlockDesc* main);

// Appends each bucket's ShardParamsStartup to `startup` right after the
// last op that touches one of its parameters, and moves each broadcast of
// a var up to just after its initialiser: a bucket is made whole,
// broadcast, sharded and freed before the next one is made, so the
// startup holds one bucket whole at a time (plus what stays whole), not
// every parameter, and a model whose parameters together exceed a rank
// can start.
void PlaceShardStartup(const std::vector<ParamShardBucket>& buckets, int nranks,
                       proto::BlockDesc* startup);

// The startup ops that make `b`'s shard from its parameters (initialised
// and broadcast before them) and free the parameters.
std::vector<proto::OpDesc> ShardParamsStartup(const ParamShardBucket& b,
                                              int nranks);

// Checks that every read of a sharded bucket's parameters (or buffer)
// follows a completed gather (its c_wait) and precedes the delete_var that
// frees them; an error names the op, its index and the var.
void LintParamShards(const proto::BlockDesc& main);

// The buckets of a main program whose parameters live as shards (their
// shard is persistable), from its declarations and ops.
std::vector<std::string> ParamShardBuffers(const proto::BlockDesc& main);

}  // namespace fluid
