// CUDA kernels for nce and nce_grad (schema, shape inference and the
// sampler in nce_op.cc). The labels, the Step counter and the custom_dist
// tables are copied to the host, where the samples and their noise terms
// are drawn by the CPU kernel's own code, then uploaded: both places train
// on the same classes. Each row's cost and each weight row's gradient are
// summed in a fixed order (no atomics): the same bits on every run.
#include <vector>

#include "ops/cuda/touched_rows.cuh"
#include "ops/nce_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct NceLogits {
  const T* x;
  const T* w;
  const T* bias;
  const int64_t* samples;
  const T* noise;
  T* probs;
  T* terms;
  int64_t dim, width, num_true;
  __device__ void operator()(int64_t p) const {
    const int64_t i = p / width, c = samples[p];
    T z = bias != nullptr ? bias[c] : T(0);
    for (int64_t k = 0; k < dim; ++k) z += x[i * dim + k] * w[c * dim + k];
    const T o = NceSigmoid(z);
    probs[p] = o;
    terms[p] = NceSampleCost(o, noise[p], p % width < num_true);
  }
};

template <typename T>
struct NceRowCost {
  const T* terms;
  const T* weight;
  T* cost;
  int64_t width;
  __device__ void operator()(int64_t i) const {
    T s = T(0);
    for (int64_t j = 0; j < width; ++j) s += terms[i * width + j];
    cost[i] = (weight != nullptr ? weight[i] : T(1)) * s;
  }
};

// Host copies of the optional inputs the sampler reads.
struct NceHostInputs {
  Tensor tables[3];
  bool has_tables = false;
};

const char* kTables[] = {"CustomDistProbs", "CustomDistAlias",
                         "CustomDistAliasProbs"};

NceSampler HostSampler(const ExecutionContext& ctx, const NceDims& d,
                       int64_t step, NceHostInputs* h) {
  h->has_tables = ctx.HasInput(kTables[0]) && ctx.HasInput(kTables[1]) &&
                  ctx.HasInput(kTables[2]);
  if (h->has_tables)
    for (int k = 0; k < 3; ++k)
      cuda::Download(ctx, ctx.Input(kTables[k]), &h->tables[k]);
  const Tensor* t = h->has_tables ? h->tables : nullptr;
  return NceSampler(ctx, d, t ? &t[0] : nullptr, t ? &t[1] : nullptr,
                    t ? &t[2] : nullptr, step);
}

const Tensor* OptionalInput(const ExecutionContext& ctx, const char* slot) {
  return ctx.HasInput(slot) ? &ctx.Input(slot) : nullptr;
}

template <typename T>
const T* OptionalData(const ExecutionContext& ctx, const char* slot) {
  const Tensor* t = OptionalInput(ctx, slot);
  return t != nullptr ? t->data<T>() : nullptr;
}

int64_t StepOnHost(const ExecutionContext& ctx) {
  if (!ctx.HasInput("Step")) return 0;
  Tensor host;
  cuda::Download(ctx, ctx.Input("Step"), &host);
  return NceStep(ctx, &host);
}

template <typename T>
void NceKernel(const ExecutionContext& ctx) {
  const NceDims d = ReadNceDims(ctx);
  const int64_t step = StepOnHost(ctx);
  NceHostInputs h;
  const NceSampler sampler = HostSampler(ctx, d, step, &h);
  Tensor labels;
  cuda::Download(ctx, ctx.Input("Label"), &labels);
  sampler.CheckLabels(ctx, labels.data<int64_t>());
  const int64_t n = d.rows * d.width;
  std::vector<int64_t> samples(n);
  sampler.Draw(labels.data<int64_t>(), samples.data());
  std::vector<double> noise;
  sampler.Noise(samples.data(), n, &noise);
  const Shape shape{d.rows, d.width};
  int64_t* samples_d =
      ctx.Output("SampleLabels")->mutable_data<int64_t>(shape, ctx.place());
  Tensor holders[2];
  if (n > 0)
    cuda::CopyAsync(cuda::Dev(ctx), samples_d,
                    cuda::Upload(ctx, samples, &holders[0]),
                    sizeof(int64_t) * n);
  NceLogits<T> f{
      ctx.Input("Input").data<T>(),
      ctx.Input("Weight").data<T>(),
      OptionalData<T>(ctx, "Bias"),
      samples_d,
      cuda::UploadAs<T>(ctx, noise, &holders[1]),
      ctx.Output("SampleLogits")->mutable_data<T>(shape, ctx.place()),
      nullptr,
      d.dim,
      d.width,
      d.num_true};
  Tensor terms;
  f.terms = terms.mutable_data<T>(Shape({n > 0 ? n : 1}), ctx.place());
  cuda::ForEach(cuda::Dev(ctx), n, f);
  NceRowCost<T> cost{
      f.terms, OptionalData<T>(ctx, "SampleWeight"),
      ctx.Output("Cost")->mutable_data<T>(Shape({d.rows, 1}), ctx.place()),
      d.width};
  cuda::ForEach(cuda::Dev(ctx), d.rows, cost);
  if (ctx.HasInput("Step") && ctx.HasOutput("StepOut")) {
    const std::vector<int64_t> next{step + 1};
    int64_t* out =
        ctx.Output("StepOut")->mutable_data<int64_t>(Shape{1}, ctx.place());
    cuda::CopyAsync(cuda::Dev(ctx), out, cuda::Upload(ctx, next, &holders[0]),
                    sizeof(int64_t));
  }
  cuda::Dev(ctx).Wait();  // the holders are freed on return
}

template <typename T>
struct NceLogitGrad {
  const T* probs;
  const T* noise;
  const T* weight;
  const T* dcost;
  T* g;
  int64_t width, num_true;
  __device__ void operator()(int64_t p) const {
    const int64_t i = p / width;
    const T w = weight != nullptr ? weight[i] : T(1);
    g[p] =
        NceSampleGrad(probs[p], noise[p], p % width < num_true, w) * dcost[i];
  }
};

template <typename T>
struct NceInputGrad {
  const T* g;
  const T* w;
  const int64_t* samples;
  T* dx;
  int64_t dim, width;
  __device__ void operator()(int64_t e) const {
    const int64_t i = e / dim, k = e % dim;
    T acc = T(0);
    for (int64_t j = 0; j < width; ++j) {
      const int64_t p = i * width + j;
      acc += g[p] * w[samples[p] * dim + k];
    }
    dx[e] = acc;
  }
};

template <typename T>
void NceGradKernel(const ExecutionContext& ctx) {
  const NceDims d = ReadNceDims(ctx);
  NceHostInputs h;
  const NceSampler sampler = HostSampler(ctx, d, 0, &h);
  Tensor samples;
  cuda::Download(ctx, ctx.Input("SampleLabels"), &samples);
  const int64_t n = d.rows * d.width;
  const int64_t* s = samples.data<int64_t>();
  for (int64_t p = 0; p < n; ++p)
    FLUID_ENFORCE(s[p] >= 0 && s[p] < d.classes, ctx.type(), ": SampleLabels '",
                  ctx.InputName("SampleLabels"), "' holds class ", s[p],
                  " at position ", p, ", outside [0, ", d.classes, ")");
  std::vector<double> noise;
  sampler.Noise(s, n, &noise);
  Tensor holder, g_t;
  NceLogitGrad<T> lg{ctx.Input("SampleLogits").data<T>(),
                     cuda::UploadAs<T>(ctx, noise, &holder),
                     OptionalData<T>(ctx, "SampleWeight"),
                     ctx.Input(GradSlot("Cost")).data<T>(),
                     g_t.mutable_data<T>(Shape({n > 0 ? n : 1}), ctx.place()),
                     d.width,
                     d.num_true};
  cuda::ForEach(cuda::Dev(ctx), n, lg);
  const T* w = ctx.Input("Weight").data<T>();
  if (ctx.HasOutput(GradSlot("Input"))) {
    NceInputGrad<T> ig{
        lg.g,
        w,
        ctx.Input("SampleLabels").data<int64_t>(),
        cuda::OutputLike<T>(ctx, GradSlot("Input"), ctx.Input("Input")),
        d.dim,
        d.width};
    cuda::ForEach(cuda::Dev(ctx), d.rows * d.dim, ig);
  }
  const TouchedRows t = CollectTouchedRows(s, n);
  const bool sparse = ctx.Attr<bool>("is_sparse");
  if (ctx.HasOutput(GradSlot("Weight")))
    cuda::TouchedTableGrad<T>(ctx, GradSlot("Weight"),
                              ctx.Input("Weight").shape(), sparse, t, lg.g,
                              ctx.Input("Input").data<T>(), d.width);
  if (ctx.HasOutput(GradSlot("Bias")) && ctx.HasInput("Bias"))
    cuda::TouchedTableGrad<T>(ctx, GradSlot("Bias"), ctx.Input("Bias").shape(),
                              sparse, t, lg.g, nullptr, d.width);
  cuda::Dev(ctx).Wait();  // the scratch tensors are freed on return
}

}  // namespace

REGISTER_FLOAT_KERNELS(nce, kCUDA, NceKernel);
REGISTER_FLOAT_KERNELS(nce_grad, kCUDA, NceGradKernel);

}  // namespace ops
}  // namespace fluid
