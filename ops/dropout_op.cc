// dropout: zeroes each element of X with probability dropout_prob in
// training. "downgrade_in_infer" (Fluid's default) keeps the survivors as
// they are and multiplies by 1 - dropout_prob in inference;
// "upscale_in_train" divides the survivors by 1 - dropout_prob in training
// and passes X through in inference. Mask (0 or 1, X's dtype) records which
// elements survived, for the gradient. bfloat16 and float16 X scale in
// float; their mask is the float32 kernel's for the same seed.
//
// The mask is a function of (seed, rank, step, index) (dropout_mask.h): the
// same on CPU and CUDA to the bit, different on every rank of a
// data-parallel job (each sees other samples, and should drop other
// units), and reproduced by a rerun. The optional Step input, a persistable
// int64 counter the layer creates per op, varies the mask from run to run:
// the op writes Step + 1 to StepOut (normally Step itself) after each
// training run, and checkpoints save it with the other persistables.
//
// A recompute replay (transpiler/recompute.h) is a copy of a dropout op run
// again in the backward pass, writing other variables: its replay_of attr
// names the replayed op's Out, so that it derives the same seed, and it
// reads its Step counter as that op read it, one before the value the op
// left there (Step - 1; attr replay_step, 0 in a pipeline whose replayed
// micro-batch has not advanced the counter yet); it has no StepOut, so the
// counter advances once per step whether or not the op is replayed. A
// replay that only the gradient's Mask needs has no Out either: it reads
// X's shape alone (REGISTER_SHAPE_ONLY_INPUT_WITHOUT below), so nothing
// before it is replayed for it.
#include <algorithm>
#include <cmath>
#include <string>

#include "ops/dropout_mask.h"
#include "ops/half_cpu.h"
#include "ops/op_helpers.h"
#include "src/distributed/communicator.h"
#include "src/framework/hash.h"
#include "src/framework/shape_only_inputs.h"

namespace fluid {
namespace ops {

DropoutParams GetDropoutParams(const ExecutionContext& ctx, bool forward) {
  const double p = ctx.Attr<float>("dropout_prob");
  FLUID_ENFORCE(p >= 0.0 && p <= 1.0, ctx.type(), ": dropout_prob ", p,
                " must be in [0, 1]");
  const std::string& impl = ctx.Attr<std::string>("dropout_implementation");
  const bool upscale = impl == "upscale_in_train";
  FLUID_ENFORCE(upscale || impl == "downgrade_in_infer", ctx.type(),
                ": dropout_implementation must be "
                "\"downgrade_in_infer\" or \"upscale_in_train\", is \"",
                impl, "\"");
  DropoutParams d;
  d.base = 0;
  d.threshold = static_cast<uint64_t>(std::llround(p * 0x1.0p53));
  d.keep_scale = upscale ? (p < 1.0 ? 1.0 / (1.0 - p) : 0.0) : 1.0;
  d.test_scale = upscale ? 1.0 : 1.0 - p;
  d.is_test = ctx.Attr<bool>("is_test");
  d.step_offset = 0;
  d.index_offset = 0;
  if (!forward) return d;
  const std::string& replay_of = ctx.Attr<std::string>("replay_of");
  if (!replay_of.empty()) d.step_offset = ctx.Attr<int32_t>("replay_step");
  // A pipeline's micro-batch k (its Out named "<out>@MB<k>") draws rows
  // k * numel.. of the whole batch's mask: its seed is the whole op's, its
  // elements follow the micro-batches before it.
  const int32_t micro_batch = ctx.Attr<int32_t>("micro_batch");
  FLUID_ENFORCE(micro_batch >= -1, ctx.type(), ": micro_batch ", micro_batch,
                " must be -1 (none) or a micro-batch number");
  std::string seed_name = replay_of.empty() ? ctx.OutputName("Out") : replay_of;
  if (micro_batch >= 0) {
    const size_t at = seed_name.rfind("@MB");
    if (at != std::string::npos) seed_name.resize(at);
    d.index_offset = micro_batch * ctx.Input("X").numel();
  }
  const int32_t attr_seed = ctx.Attr<int32_t>("seed");
  const uint64_t seed =
      attr_seed != 0 ? static_cast<uint32_t>(attr_seed) : Fnv1a64(seed_name);
  // The rank in the op's ring: under tensor parallelism the data-parallel
  // rank, so that the ranks of a group, which hold the same values, drop
  // the same elements of them.
  Communicator* comm = ctx.device_context().communicator();
  const uint64_t rank =
      comm != nullptr ? static_cast<uint64_t>(
                            comm->Group(ctx.Attr<int32_t>("ring_id"))->rank())
                      : 0;
  d.base = Mix64(Mix64(seed) ^ rank);
  return d;
}

namespace {

void DropoutInferShape(InferShapeContext* ctx) {
  FLUID_ENFORCE(
      ctx->HasOutput("Out") || !ctx->Attr<std::string>("replay_of").empty(),
      "dropout without Out draws a replayed op's mask alone (a "
      "recompute replay): replay_of must name that op's Out");
  if (ctx->HasOutput("Out")) ctx->ShareShape("X", "Out");
  ctx->ShareShape("X", "Mask");
  FLUID_ENFORCE(
      ctx->Attr<std::string>("replay_of").empty() || !ctx->HasOutput("StepOut"),
      "dropout: a replay (replay_of ",
      Quote(ctx->Attr<std::string>("replay_of")), ") must not write StepOut ",
      Quote(ctx->OutputName("StepOut")),
      ": the op it replays advances the counter");
  if (!ctx->HasInput("Step")) return;
  Shape s = ctx->GetInputShape("Step");
  FLUID_ENFORCE(s.rank() == 1 && s[0] == 1 &&
                    ctx->GetInputDtype("Step") == DataType::kInt64,
                "dropout: Step '", ctx->InputName("Step"),
                "' must be an int64 [1] counter, has shape ", s, " and dtype ",
                DataTypeName(ctx->GetInputDtype("Step")));
  ctx->ShareShape("Step", "StepOut");
}

void DropoutGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape(GradSlot("Out"), GradSlot("X"));
}

// out (allocated) = x * s, in float for 16-bit T.
template <typename T>
void ScaleElements(const ExecutionContext& ctx, const Tensor& x,
                   ComputeType<T> s, Tensor* out) {
  if constexpr (IsHalfType<T>::value) {
    HalfChunks(ctx.device(), x.numel(), 1.0, x.data<T>(),
               static_cast<const T*>(nullptr), out->data<T>(),
               [s](const float* a, const float*, float* o, int64_t len) {
                 for (int64_t i = 0; i < len; ++i) o[i] = a[i] * s;
               });
  } else {
    Assign(ctx.device(), Vec<T>(out), Vec<T>(x) * s);
  }
}

// The step the mask is drawn at: the counter as the op reads it (0 without
// one), offset for a replay.
int64_t MaskStep(const ExecutionContext& ctx, const DropoutParams& d) {
  return ctx.HasInput("Step")
             ? ctx.Input("Step").data<int64_t>()[0] + d.step_offset
             : 0;
}

// A replay's mask alone, from X's shape (dropout without Out).
template <typename T>
void DrawMask(const ExecutionContext& ctx, const DropoutParams& d,
              const Shape& shape, Tensor* mask) {
  T* mp = mask->mutable_data<T>(shape);
  if (d.is_test) {
    std::fill_n(mp, mask->numel(), T(1));
    return;
  }
  const uint64_t key = DropoutKey(d.base, MaskStep(ctx, d));
  ParallelFor(ctx.device(), mask->numel(), 10, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      mp[i] = DropoutKeeps(key, i + d.index_offset, d.threshold) ? T(1) : T(0);
  });
}

template <typename T>
void DropoutKernel(const ExecutionContext& ctx) {
  const DropoutParams d = GetDropoutParams(ctx, true);
  const Tensor& x = ctx.Input("X");
  Tensor* mask = ctx.Output("Mask");
  if (!ctx.HasOutput("Out")) return DrawMask<T>(ctx, d, x.shape(), mask);
  Tensor* out = ctx.Output("Out");
  out->mutable_data<T>(x.shape());
  mask->mutable_data<T>(x.shape());
  using C = ComputeType<T>;
  if (d.is_test) {
    ScaleElements<T>(ctx, x, static_cast<C>(d.test_scale), out);
    std::fill_n(mask->data<T>(), mask->numel(), T(1));
    return;
  }
  const int64_t step = MaskStep(ctx, d);
  const uint64_t key = DropoutKey(d.base, step);
  const C scale = static_cast<C>(d.keep_scale);
  const T* xp = x.data<T>();
  T* op = out->data<T>();
  T* mp = mask->data<T>();
  ParallelFor(ctx.device(), x.numel(), 20, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const bool keep = DropoutKeeps(key, i + d.index_offset, d.threshold);
      mp[i] = keep ? T(1) : T(0);
      op[i] = keep ? FromCompute<T>(ToCompute(xp[i]) * scale) : T(0);
    }
  });
  if (ctx.HasInput("Step") && ctx.HasOutput("StepOut"))
    ctx.Output("StepOut")->mutable_data<int64_t>(Shape{1})[0] = step + 1;
}

template <typename T>
void DropoutGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("X"))) return;
  const DropoutParams d = GetDropoutParams(ctx, false);
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  Tensor* dx = ctx.Output(GradSlot("X"));
  dx->mutable_data<T>(dout.shape());
  using C = ComputeType<T>;
  if (d.is_test) {
    ScaleElements<T>(ctx, dout, static_cast<C>(d.test_scale), dx);
  } else if constexpr (IsHalfType<T>::value) {
    const float s = static_cast<float>(d.keep_scale);
    HalfChunks(ctx.device(), dout.numel(), 2.0, dout.data<T>(),
               ctx.Input("Mask").data<T>(), dx->data<T>(),
               [s](const float* g, const float* m, float* o, int64_t len) {
                 for (int64_t i = 0; i < len; ++i) o[i] = g[i] * m[i] * s;
               });
  } else {
    Assign(ctx.device(), Vec<T>(dx),
           Vec<T>(dout) * Vec<T>(ctx.Input("Mask")) *
               static_cast<T>(d.keep_scale));
  }
}

}  // namespace

REGISTER_OP(dropout)
    .Doc(
        "Zeroes elements of X with probability dropout_prob (training), or "
        "scales X for inference, as dropout_implementation says.")
    .Input("X", "input")
    .OptionalInput("Step", "int64 [1] run counter varying the mask per run")
    .OptionalOutput("Out",
                    "X with dropped elements zeroed, same shape; absent in a "
                    "recompute replay that draws the mask alone")
    .Output("Mask", "1 where X was kept, 0 where dropped; all 1 in inference")
    .OptionalOutput("StepOut", "Step + 1 after a training run; normally Step")
    .Attr<float>("dropout_prob", 0.5f, "probability of dropping an element")
    .Attr<bool>("is_test", false, "inference: no mask, only the scaling")
    .Attr<int32_t>("seed", 0, "mask seed; 0 derives one from Out's name")
    .Attr<bool>("fix_seed", false,
                "accepted for Fluid programs: the mask is always a "
                "deterministic function of the seed")
    .Attr<std::string>("dropout_implementation", "downgrade_in_infer",
                       "\"downgrade_in_infer\" or \"upscale_in_train\"")
    .Attr<std::string>("replay_of", "",
                       "a recompute replay: the Out of the op it replays, "
                       "whose mask it draws (its seed, and Step - 1)")
    .Attr<int32_t>("replay_step", -1,
                   "a replay's Step offset: -1 when the replayed op has "
                   "advanced the counter since it drew (the usual case), 0 "
                   "when not yet (a pipeline's earlier micro-batches)")
    .InRange(-1, 0)
    .Attr<int32_t>("ring_id", 0,
                   "the ring whose rank varies the mask (0: all ranks; "
                   "tensor or pipeline parallelism: the data-parallel ring)")
    .Attr<int32_t>("micro_batch", -1,
                   "a pipeline's micro-batch k (-1: none): the mask is rows "
                   "k * numel(X).. of the whole batch's, the seed derived "
                   "from Out's name without its @MB<k> suffix")
    .SetInferShape(DropoutInferShape)
    .SetGrad(GradSpec("dropout_grad")
                 .Outputs({"Mask"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .CPUKernel<float>(DropoutKernel<float>)
    .CPUKernel<double>(DropoutKernel<double>)
    .CPUKernel<bfloat16>(DropoutKernel<bfloat16>)
    .CPUKernel<float16>(DropoutKernel<float16>);

// Without Out (a replay drawing the mask alone) X is read for its shape.
REGISTER_SHAPE_ONLY_INPUT_WITHOUT(dropout, "X", "Out");

REGISTER_GRAD_OP(dropout_grad)
    .Doc("Gradient of dropout: Out@GRAD times the forward pass's factor.")
    .SetInferShape(DropoutGradInferShape)
    .CPUKernel<float>(DropoutGradKernel<float>)
    .CPUKernel<double>(DropoutGradKernel<double>)
    .CPUKernel<bfloat16>(DropoutGradKernel<bfloat16>)
    .CPUKernel<float16>(DropoutGradKernel<float16>);

}  // namespace ops
}  // namespace fluid
