// What the CPU kernels of c_softmax_with_cross_entropy (the .cc) and its
// CUDA kernels (the .cu) share: where the rank's block of classes lies in
// the whole row, the per-row statistics the ranks reduce, and the forward
// pass written once over the place's three row passes. The communication
// is defined in the .cc; this header is free of Eigen and of the
// communicator so that nvcc can compile the .cu that includes it.
#pragma once

#include <cstdint>
#include <string>

#include "src/framework/operator.h"

namespace fluid {
class Communicator;

namespace ops {

// One rank's view of the op: its scores [..., C/nranks] as `rows` rows of
// `classes` scores, the first class of its block in the whole row, the
// whole row's class count C, the ignored label, and the ring (null: one
// rank alone, run without a communicator).
struct ClassBlock {
  int64_t rows;
  int64_t classes;
  int64_t start;
  int64_t whole_classes;
  int64_t ignore;
  Communicator* ring;
};

// The block of the scores in `scores_slot` (Logits or Softmax), with the
// ring checked to have `nranks` ranks. On the CPU the labels are checked
// too (`check_labels`): one outside [0, C) that is not ignore_index is an
// error naming Label and the value, before anything is written.
ClassBlock ReadClassBlock(const ExecutionContext& ctx,
                          const std::string& scores_slot, bool check_labels);

// The rows' statistics, [3, rows] of `dtype` on the kernel's place: the
// row max, the sum of exp(x - max) and the shifted target logit. Kept per
// thread and reused across steps (no allocation once it has grown); valid
// until the next op of this type on the thread.
Tensor* RowStats(const ExecutionContext& ctx, DataType dtype, int64_t rows);

// The row maxima (row 0 of the statistics) reduced by max over the ring,
// then the sums and targets (rows 1 and 2) by sum, each waited for; nothing
// for a ring of one rank.
void MaxOverRing(const ExecutionContext& ctx, const ClassBlock& b,
                 Tensor* stats);
void SumOverRing(const ExecutionContext& ctx, const ClassBlock& b,
                 Tensor* stats);

// The forward pass over `Passes`, the place's row passes:
//   RowMax(ctx, b, x, max): the max of each row of this block (the lowest
//     T for an empty block);
//   ShiftedExp(ctx, b, x, label, max, softmax, sum, target):
//     softmax = exp(x - max), sum its row sums, target x[label - start] -
//     max where the label falls in this block, else 0;
//   Normalise(ctx, b, label, sum, target, softmax, loss): softmax *= 1 / sum,
//     loss = log(sum) - target on the rows whose label selects a class of
//     the whole row (LabelSelectsClass with C classes), else 0.
// Between them the two collectives: max over the ring, then one sum of
// [sum, target]. Every rank of the ring computes the loss from the same
// reduced values, so the loss is the same bits on each.
template <typename T, typename Passes>
void CSoftmaxForward(const ExecutionContext& ctx, const ClassBlock& b) {
  const T* x = ctx.Input("Logits").data<T>();
  const int64_t* label = ctx.Input("Label").data<int64_t>();
  T* softmax = ctx.Output("Softmax")->mutable_data<T>(ctx.place());
  T* loss = ctx.Output("Loss")->mutable_data<T>(ctx.place());
  Tensor* stats = RowStats(ctx, DataTypeOf<T>::value, b.rows);
  T* max = stats->data<T>();
  T* sum = max + b.rows;
  T* target = sum + b.rows;
  Passes::RowMax(ctx, b, x, max);
  MaxOverRing(ctx, b, stats);
  Passes::ShiftedExp(ctx, b, x, label, max, softmax, sum, target);
  SumOverRing(ctx, b, stats);
  Passes::Normalise(ctx, b, label, sum, target, softmax, loss);
}

}  // namespace ops
}  // namespace fluid
