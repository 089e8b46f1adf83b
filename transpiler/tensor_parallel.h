// Tensor parallelism as a program rewrite (strategy field
// tensor_parallel_degree): the matrices of paired fc layers are split
// across the ranks of a tensor-parallel group, Megatron's way.
//
// Ranks are laid out as [dp][tp]: ranks r with the same r / tp form one
// tensor-parallel group (ring kTensorParallelRing; consecutive ranks, so
// a group stays inside a host), ranks with the same r % tp one
// data-parallel group (ring kDataParallelRing), over which the gradients
// are averaged and the data is sharded.
//
// Which layers are split is decided by rules over the forward pass (a
// parameter named in tensor_parallel_configs.keep_whole overrides them:
// its layers stay whole):
//   - a column-parallel mul has an unsplit input and a parameter weight
//     [K, N] (or a cast of one) split by columns; its output is split along
//     its last axis;
//   - a split value flows through elementwise activations, scale, cast,
//     softmax over another axis, reshape and transpose (whose split axis
//     follows the new layout), an elementwise op with a parameter bias
//     (split with it) or a broadcast operand that does not cover the split
//     axis, and a batched matmul of two values split on the same batch axis
//     (attention by heads: q, k and v are each column-parallel);
//   - it ends in a row-parallel mul, whose weight is split by rows and whose
//     partial product is summed over the group (c_allreduce, ring 1) before
//     anything reads it;
//   - or it ends in a softmax_with_cross_entropy over its split (last)
//     axis, whose softmax nothing else reads: the logits layer splits by
//     vocabulary and the loss becomes c_softmax_with_cross_entropy, which
//     reduces the row maxima and sums over the group (two allreduces of a
//     value per row) and gives every rank the whole loss;
//   - a split value that reaches any other op (a residual add, a layer
//     norm, another loss) leaves the whole region unsplit: its layers stay
//     replicated.
//   - an embedding (lookup_table, dense gradient) whose table is read by
//     nothing else splits by rows: each rank's c_embedding reads the ids in
//     its block of the vocabulary, zeros for the others, and the group sums
//     the lookups (c_allreduce, ring 1).
// So an MLP's fc pairs, a transformer block's attention (by heads) and
// feed-forward pairs, its token embedding and its logits layer (with the
// loss) are split. In backward, a column-parallel mul's input gradient is
// partial on each rank and is summed over the group right after its mul_grad; a
// global-norm clip sums the squared norms of split gradients over the
// group. Each forward and backward of a pair thus costs one allreduce of
// one activation.
//
// With recompute (which runs first), each replay of a split op splits as
// its original does: a replayed row mul is summed over the group again.
//
// The startup program initialises every parameter whole, broadcasts it
// from rank 0 over all ranks, then keeps this rank's slice (c_split, ring
// 1), optimizer state included, so that a split job starts from exactly
// the single-process job's parameters.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "proto/distributed_strategy.pb.h"
#include "proto/framework.pb.h"

namespace fluid {

// Communicator rings (the ring_id attr of the collective ops; 0 is every
// rank).
constexpr int32_t kTensorParallelRing = 1;
constexpr int32_t kDataParallelRing = 2;
// The attr naming an op's part in the split: "column", "row" (the muls),
// "reduce" (the allreduces this rewrite adds).
constexpr const char* kTpRoleAttr = "tp_role";

// Whether `type` maps each element to one element of the same shape, so
// that a split value passes through it split the same way (the plan's
// rule and the lint's).
bool IsSplitUnaryOp(const std::string& type);

// tensor_parallel_degree, 1 when unset; with `nranks`, an error unless it
// divides nranks.
int TensorParallelDegree(const proto::DistributedStrategy& s);
int TensorParallelDegree(const proto::DistributedStrategy& s, int nranks);

// Where rank `rank` sits in the [dp][tp] layout.
inline int TpRankOf(int rank, int tp) { return rank % tp; }
inline int DpRankOf(int rank, int tp) { return rank / tp; }

// What the rules above choose for a forward program, before the rewrite.
struct TensorParallelPlan {
  // Every split value (activations, parameters and their casts) and the
  // axis it is split along.
  std::map<std::string, int> split;
  // Forward op indices of the column- and row-parallel muls, of the
  // lookups whose tables split by rows (vocabulary-parallel embeddings),
  // and of the cross entropies over split logits (vocabulary-parallel
  // losses).
  std::set<int> column, row, embeddings, losses;
  // Reshape ops whose shape attr changes: op index -> (position, value).
  std::map<int, std::pair<int, int64_t>> reshapes;
  // The parameters among `split`.
  std::set<std::string> params;
  // Why each region that was tried stayed whole (for the message when
  // nothing splits, and for --print-program readers).
  std::vector<std::string> unsplit;
};

// The plan for `main` (block 0) with `tp` ranks per group, leaving the
// layers of the parameters in `keep_whole` whole (strategy field
// tensor_parallel_configs.keep_whole). Throws when tp < 2, when a name in
// keep_whole is no parameter of `main`, or when no layer can be split.
TensorParallelPlan PlanTensorParallel(
    const proto::ProgramDesc& main, int tp,
    const std::set<std::string>& keep_whole = {});

// The job with its split layers rewritten for groups of `tp` ranks (main and
// startup programs), as described above. Refuses (naming the setting)
// what does not compose yet: fp16 loss scaling with sharding,
// clip_by_norm of a split gradient, sub-blocks. With fp16 the overflow
// flag is maxed over the group right after check_finite_and_unscale.
proto::TrainingJob TensorParallelRewrite(const proto::TrainingJob& job, int tp);

// Refuses (naming both settings) what `s` asks for beside tensor
// parallelism that does not compose with it yet; CollectiveTranspile calls
// it before any other rewrite.
void RefuseWithTensorParallel(const proto::TrainingJob& job,
                              const proto::DistributedStrategy& s);

// Sets ring_id = kDataParallelRing on every collective op (and
// shard_view) of `program` that names no ring (the data-parallel passes'
// reductions, gathers, broadcasts and shards are the data-parallel
// group's).
void UseDataParallelRing(proto::ProgramDesc* program);

// Checks the rewritten job: every value a column-parallel mul splits
// reaches only ops that accept split values and ends in a row-parallel
// mul, every row-parallel mul reads a split value and is summed over the
// group before its output is read, every split parameter (c_split in the
// startup program) is read in the forward pass only by the split muls, its
// casts and bias adds. Throws naming the op and the value.
void LintTensorParallel(const proto::TrainingJob& job, int tp);

}  // namespace fluid
