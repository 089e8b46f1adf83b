// c_softmax_with_cross_entropy: softmax_with_cross_entropy over classes
// split across the ranks of a ring (vocabulary parallelism: the last
// projection of a language model cut by columns, so that no rank holds the
// whole [N, C] logits).
//
// Each of the nranks ranks of ring ring_id holds one block of the classes:
// rank r's Logits [..., C/nranks] are the classes [r C/nranks,
// (r+1) C/nranks) of the whole logits [..., C]. Label holds the whole row's
// class ids and is the same on every rank. Per row:
//   m = max over the ranks of the block's max          (allreduce max)
//   s = exp(x - m); [sum, target] = [sum of s, x[label] - m on the rank
//     whose block holds the label, else 0] summed over the ranks
//                                                       (one allreduce sum)
//   Loss = log(sum) - target; Softmax = s * (1 / sum)
// so every rank gets the loss over the whole row (the same bits on each:
// it is computed from the same reduced values) and its block of the whole
// row's softmax. Two collectives a forward pass, of rows and 2 rows values.
//
// The gradient needs no communication: Logits@GRAD = (Softmax -
// onehot(Label)) * Loss@GRAD on the rank's block, the one-hot only on the
// rank that holds the label's class. Softmax is an output for reuse, not a
// differentiable one. Rows labelled ignore_index get loss 0 and gradient 0;
// on the CPU any other label outside [0, C) is an error naming Label and
// the value. With nranks 1 and no communicator the op runs alone, as
// softmax_with_cross_entropy does.
#include "ops/c_softmax_with_cross_entropy_op.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/c_split_concat.h"
#include "ops/collective_helpers.h"
#include "ops/label_helpers.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

ClassBlock ReadClassBlock(const ExecutionContext& ctx,
                          const std::string& scores_slot, bool check_labels) {
  const int nranks = ctx.Attr<int32_t>("nranks");
  Communicator* ring = RingOfSize(ctx, nranks);
  const LabelArgs a = ReadLabelArgs(ctx, scores_slot);
  const int64_t rank = ring == nullptr ? 0 : ring->rank();
  const ClassBlock b{a.rows,   a.classes, a.classes * rank, a.classes * nranks,
                     a.ignore, ring};
  if (check_labels)
    CheckLabels(ctx, a.label.data<int64_t>(), b.rows, b.whole_classes,
                b.ignore);
  return b;
}

Tensor* RowStats(const ExecutionContext& ctx, DataType dtype, int64_t rows) {
  // One per place kind, so that a thread that runs CPU and CUDA executors in
  // turn does not reallocate at each switch.
  thread_local Tensor host, device;
  Tensor* t = ctx.place().is_cpu() ? &host : &device;
  t->set_dtype(dtype);
  t->Resize(Shape{3, rows});
  t->raw_mutable_data(ctx.place());
  return t;
}

namespace {

// Reduces rows [first, last) of the statistics over the ring and waits.
void ReduceOverRing(const ExecutionContext& ctx, const ClassBlock& b,
                    Tensor* stats, int64_t first, int64_t last, ReduceOp op) {
  if (b.ring == nullptr || b.ring->size() == 1) return;
  b.ring
      ->AllReduceAsync(stats->Slice(first, last), op,
                       ctx.device_context().ReadyFence())
      ->Wait();
}

}  // namespace

void MaxOverRing(const ExecutionContext& ctx, const ClassBlock& b,
                 Tensor* stats) {
  ReduceOverRing(ctx, b, stats, 0, 1, ReduceOp::kMax);
}

void SumOverRing(const ExecutionContext& ctx, const ClassBlock& b,
                 Tensor* stats) {
  ReduceOverRing(ctx, b, stats, 1, 3, ReduceOp::kSum);
}

namespace {

void CSoftmaxInferShape(InferShapeContext* ctx) {
  const Shape loss =
      CheckScoresAndLabel(*ctx, "c_softmax_with_cross_entropy", "Logits");
  ctx->ShareShape("Logits", "Softmax");
  ctx->SetOutputShape("Loss", loss);
  ctx->SetOutputDtype("Loss", ctx->GetInputDtype("Logits"));
}

void CSoftmaxGradInferShape(InferShapeContext* ctx) {
  const char* op = "c_softmax_with_cross_entropy_grad";
  const Shape loss = CheckScoresAndLabel(*ctx, op, "Softmax");
  const Shape dloss = ctx->GetInputShape(GradSlot("Loss"));
  FLUID_ENFORCE(ShapesCompatible(loss, dloss), op, ": Loss@GRAD '",
                ctx->InputName(GradSlot("Loss")), "' has shape ", dloss,
                ", expected ", loss);
  ctx->ShareShape("Softmax", GradSlot("Logits"));
}

// The CPU's row passes of CSoftmaxForward, on the executor's threads.
struct CpuPasses {
  template <typename T>
  static void RowMax(const ExecutionContext& ctx, const ClassBlock& b,
                     const T* x, T* max) {
    const int64_t c = b.classes;
    ParallelFor(ctx.device(), b.rows, 1.0 + c, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        max[i] = c == 0 ? std::numeric_limits<T>::lowest()
                        : *std::max_element(x + i * c, x + (i + 1) * c);
    });
  }

  template <typename T>
  static void ShiftedExp(const ExecutionContext& ctx, const ClassBlock& b,
                         const T* x, const int64_t* label, const T* max,
                         T* softmax, T* sum, T* target) {
    const int64_t c = b.classes;
    ParallelFor(ctx.device(), b.rows, 4.0 * c + 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const T* row = x + i * c;
        T* s = softmax + i * c;
        const T m = max[i];
        T total = 0;
        for (int64_t j = 0; j < c; ++j) {
          s[j] = std::exp(row[j] - m);
          total += s[j];
        }
        sum[i] = total;
        const int64_t at = label[i] - b.start;
        target[i] =
            label[i] != b.ignore && at >= 0 && at < c ? row[at] - m : T(0);
      }
    });
  }

  template <typename T>
  static void Normalise(const ExecutionContext& ctx, const ClassBlock& b,
                        const int64_t* label, const T* sum, const T* target,
                        T* softmax, T* loss) {
    const int64_t c = b.classes;
    ParallelFor(ctx.device(), b.rows, 1.0 + c, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const T inv = T(1) / sum[i];
        T* s = softmax + i * c;
        for (int64_t j = 0; j < c; ++j) s[j] *= inv;
        loss[i] = LabelSelectsClass(label[i], b.whole_classes, b.ignore)
                      ? std::log(sum[i]) - target[i]
                      : T(0);
      }
    });
  }
};

template <typename T>
void CSoftmaxKernel(const ExecutionContext& ctx) {
  CSoftmaxForward<T, CpuPasses>(ctx, ReadClassBlock(ctx, "Logits", true));
}

template <typename T>
void CSoftmaxGradKernel(const ExecutionContext& ctx) {
  Tensor* dlogits = ctx.Output(GradSlot("Logits"));
  if (dlogits == nullptr) return;
  const ClassBlock b = ReadClassBlock(ctx, "Softmax", true);
  const int64_t c = b.classes;
  const int64_t* ld = ctx.Input("Label").data<int64_t>();
  const T* sd = ctx.Input("Softmax").data<T>();
  const T* dld = ctx.Input(GradSlot("Loss")).data<T>();
  T* dxd = dlogits->mutable_data<T>();
  ParallelFor(ctx.device(), b.rows, 2.0 * c, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      T* dx = dxd + i * c;
      if (!LabelSelectsClass(ld[i], b.whole_classes, b.ignore)) {
        std::fill_n(dx, c, T(0));
        continue;
      }
      const T g = dld[i];
      const T* s = sd + i * c;
      for (int64_t j = 0; j < c; ++j) dx[j] = s[j] * g;
      const int64_t at = ld[i] - b.start;
      if (at >= 0 && at < c) dx[at] -= g;
    }
  });
}

}  // namespace

REGISTER_OP(c_softmax_with_cross_entropy)
    .Doc(
        "softmax_with_cross_entropy over classes split across the nranks "
        "ranks of ring ring_id, each holding one block of Logits' classes: "
        "every rank gets the loss over the whole row, Loss[i] = "
        "logsumexp(whole Logits[i]) - whole Logits[i, Label[i]], the same "
        "on each, and its block of the whole row's softmax. Two allreduces "
        "(the row max; the sums of exp and the target logit); none in the "
        "gradient.")
    .Input("Logits",
           "this rank's block of the scores [..., C/nranks]: classes "
           "[r C/nranks, (r+1) C/nranks) of the whole row for rank r of the "
           "ring")
    .Input("Label",
           "int64 class ids of the whole row [..., 1], in [0, C) or "
           "ignore_index; the same on every rank")
    .Output("Softmax",
            "this rank's block of the whole row's softmax, Logits' shape "
            "(not differentiable)")
    .Output("Loss", "loss per row [..., 1], the same on every rank")
    .Attr<int32_t>("ring_id", 0, RingIdDoc())
    .InRange(0, kNoUpperBound)
    .Attr<int32_t>("nranks", 1,
                   "the ranks of the ring (blocks of the classes); 1 without "
                   "a communicator runs alone, as softmax_with_cross_entropy")
    .InRange(1, kNoUpperBound)
    .Attr<int32_t>("ignore_index", -100,
                   "rows with this label get loss 0 and gradient 0")
    .SetInferShape(CSoftmaxInferShape)
    .SetGrad(GradSpec("c_softmax_with_cross_entropy_grad")
                 .Inputs({"Label"})
                 .Outputs({"Softmax"})
                 .OutGrads({"Loss"})
                 .InGrads({"Logits"}))
    .CPUKernel<float>(CSoftmaxKernel<float>)
    .CPUKernel<double>(CSoftmaxKernel<double>);

REGISTER_GRAD_OP(c_softmax_with_cross_entropy_grad)
    .Doc(
        "Gradient of c_softmax_with_cross_entropy with respect to this "
        "rank's block of Logits: (Softmax - onehot(Label)) * Loss@GRAD, the "
        "one-hot on the rank whose block holds the label's class. No "
        "communication.")
    .KernelDtypeFrom("Softmax")
    .SetInferShape(CSoftmaxGradInferShape)
    .CPUKernel<float>(CSoftmaxGradKernel<float>)
    .CPUKernel<double>(CSoftmaxGradKernel<double>);

}  // namespace ops
}  // namespace fluid
