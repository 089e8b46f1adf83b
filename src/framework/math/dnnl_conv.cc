#include "src/framework/math/dnnl_conv.h"

#include "src/framework/enforce.h"
#include "src/framework/float16.h"
#include "src/framework/math/dnnl_context.h"
#include "src/framework/math/dnnl_internal.h"

namespace fluid {
namespace math {

#ifdef FLUID_WITH_DNNL

namespace {

using dnnl::memory;
using namespace dnnl_internal;
using Tag = memory::format_tag;

template <typename T>
memory::data_type DnnlType();
template <>
memory::data_type DnnlType<bfloat16>() {
  return memory::data_type::bf16;
}
template <>
memory::data_type DnnlType<float16>() {
  return memory::data_type::f16;
}

// The tensors as the op holds them (NCHW, filters OIHW or GOIHW) and the
// geometry in oneDNN's terms (a dilation of 0 is a dense kernel).
struct Geometry {
  memory::desc x, w, y;
  memory::dims strides, dilates, pad;
};

memory::desc FilterDesc(const ConvDims& d, memory::data_type dt) {
  if (d.groups == 1) return memory::desc({d.m, d.c, d.kh, d.kw}, dt, Tag::oihw);
  return memory::desc({d.groups, d.m / d.groups, d.c / d.groups, d.kh, d.kw},
                      dt, Tag::goihw);
}

Geometry UserGeometry(const ConvDims& d, memory::data_type dt) {
  Geometry g;
  g.x = memory::desc({d.n, d.c, d.h, d.w}, dt, Tag::nchw);
  g.w = FilterDesc(d, dt);
  g.y = memory::desc({d.n, d.m, d.oh, d.ow}, dt, Tag::nchw);
  g.strides = {d.stride_h, d.stride_w};
  g.dilates = {d.dilation_h - 1, d.dilation_w - 1};
  g.pad = {d.pad_h, d.pad_w};
  return g;
}

// `md` with its layout left to the primitive.
memory::desc Any(const memory::desc& md) {
  return memory::desc(md.dims(), md.data_type(), Tag::any);
}

// An operand as the op holds it (`user`) and as the primitive reads or
// writes it (`inner`): when the layouts differ, a reorder between them
// through a buffer the cache entry owns.
struct Operand {
  memory user, inner;
  bool reorder = false;
  Step convert;
  std::unique_ptr<OwnedBuffer> buffer;
};

Operand MakeOperand(const memory::desc& user, const memory::desc& inner,
                    bool input) {
  Operand o;
  o.user = Unbound(user);
  if (inner == user) {
    o.inner = o.user;
    return o;
  }
  o.reorder = true;
  o.buffer = std::make_unique<OwnedBuffer>(inner.get_size());
  o.inner = memory(inner, Engine(), o.buffer->data());
  const memory& from = input ? o.user : o.inner;
  const memory& to = input ? o.inner : o.user;
  o.convert.prim = dnnl::reorder(from, to);
  o.convert.args = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  return o;
}

// Points an input operand at `p` and brings it into the primitive's layout.
void Load(Operand& o, const void* p) {
  o.user.set_data_handle(const_cast<void*>(p));
  if (o.reorder) o.convert.prim.execute(ThreadStream(), o.convert.args);
}

// Points an output operand at `p` (written by Store after the primitive).
void Bind(Operand& o, void* p) { o.user.set_data_handle(p); }
void Store(Operand& o) {
  if (o.reorder) o.convert.prim.execute(ThreadStream(), o.convert.args);
}

// One cached convolution step: the primitive, its operands in the order
// (input, input, output), and its scratchpad.
struct ConvEntry {
  bool ok = false;
  Step step;
  Operand in0, in1, out;
  memory scratch;
  size_t scratch_bytes = 0;
  std::unique_ptr<OwnedBuffer> out_f32;  // the filter gradient in float32
};

dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::convolution_forward::primitive_desc ForwardPd(const Geometry& g) {
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
      Any(g.x), Any(g.w), Any(g.y), g.strides, g.dilates, g.pad, g.pad);
  return dnnl::convolution_forward::primitive_desc(desc, UserScratchpad(),
                                                   Engine());
}

// Fills `e` from a primitive descriptor: the primitive (a Prim), its args
// and scratchpad.
template <typename Prim, typename Pd>
void Finish(ConvEntry* e, const Pd& pd, int in0_arg, int in1_arg, int out_arg) {
  e->step.prim = Prim(pd);
  e->scratch = Unbound(pd.scratchpad_desc());
  e->scratch_bytes = pd.scratchpad_desc().get_size();
  e->step.args = {{in0_arg, e->in0.inner},
                  {in1_arg, e->in1.inner},
                  {out_arg, e->out.inner},
                  {DNNL_ARG_SCRATCHPAD, e->scratch}};
  e->ok = true;
}

enum class Pass : int64_t { kForward, kInputGrad, kFilterGrad };

ConvEntry MakeForward(const Geometry& g) {
  ConvEntry e;
  const auto pd = ForwardPd(g);
  e.in0 = MakeOperand(g.x, pd.src_desc(), true);
  e.in1 = MakeOperand(g.w, pd.weights_desc(), true);
  e.out = MakeOperand(g.y, pd.dst_desc(), false);
  Finish<dnnl::convolution_forward>(&e, pd, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS,
                                    DNNL_ARG_DST);
  return e;
}

ConvEntry MakeInputGrad(const Geometry& g) {
  ConvEntry e;
  dnnl::convolution_backward_data::desc desc(
      dnnl::algorithm::convolution_direct, Any(g.x), Any(g.w), Any(g.y),
      g.strides, g.dilates, g.pad, g.pad);
  const dnnl::convolution_backward_data::primitive_desc pd(
      desc, UserScratchpad(), Engine(), ForwardPd(g));
  e.in0 = MakeOperand(g.y, pd.diff_dst_desc(), true);
  e.in1 = MakeOperand(g.w, pd.weights_desc(), true);
  e.out = MakeOperand(g.x, pd.diff_src_desc(), false);
  Finish<dnnl::convolution_backward_data>(&e, pd, DNNL_ARG_DIFF_DST,
                                          DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC);
  return e;
}

// The filter gradient is asked for in float32 (oneDNN sums the images'
// contributions in float32 either way); the kernel rounds it once.
ConvEntry MakeFilterGrad(const Geometry& g) {
  ConvEntry e;
  const memory::desc dw(g.w.dims(), memory::data_type::f32,
                        g.w.dims().size() == 4 ? Tag::oihw : Tag::goihw);
  dnnl::convolution_backward_weights::desc desc(
      dnnl::algorithm::convolution_direct, Any(g.x), Any(dw), Any(g.y),
      g.strides, g.dilates, g.pad, g.pad);
  const dnnl::convolution_backward_weights::primitive_desc pd(
      desc, UserScratchpad(), Engine(), ForwardPd(g));
  e.in0 = MakeOperand(g.x, pd.src_desc(), true);
  e.in1 = MakeOperand(g.y, pd.diff_dst_desc(), true);
  e.out = MakeOperand(dw, pd.diff_weights_desc(), false);
  e.out_f32 = std::make_unique<OwnedBuffer>(dw.get_size());
  Finish<dnnl::convolution_backward_weights>(
      &e, pd, DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS);
  return e;
}

ConvEntry MakeEntry(Pass pass, const Geometry& g) {
  try {
    switch (pass) {
      case Pass::kForward:
        return MakeForward(g);
      case Pass::kInputGrad:
        return MakeInputGrad(g);
      case Pass::kFilterGrad:
        return MakeFilterGrad(g);
    }
  } catch (const dnnl::error&) {
    // No implementation: the caller computes in float32.
  }
  return ConvEntry();
}

// The calling thread's cached convolutions.
std::map<Key, ConvEntry>& ThreadCache() {
  thread_local std::map<Key, ConvEntry> cache;
  return cache;
}

// Cached convolutions per thread beyond which the cache starts over (each
// entry may own copies of its operands in oneDNN's layouts). Called before
// a call's lookups, so that no entry a call holds is dropped.
constexpr size_t kMaxConvEntries = 64;
void TrimCache() {
  if (ThreadCache().size() >= kMaxConvEntries) ThreadCache().clear();
}

ConvEntry& Lookup(Pass pass, const ConvDims& d, memory::data_type dt,
                  int threads) {
  std::map<Key, ConvEntry>& cache = ThreadCache();
  const Key key{static_cast<int64_t>(pass),
                static_cast<int64_t>(dt),
                d.n,
                d.c,
                d.h,
                d.w,
                d.m,
                d.kh,
                d.kw,
                d.oh,
                d.ow,
                d.stride_h,
                d.stride_w,
                d.pad_h,
                d.pad_w,
                d.dilation_h,
                d.dilation_w,
                d.groups,
                threads};
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, MakeEntry(pass, UserGeometry(d, dt))).first;
  return it->second;
}

// Runs `e`: the inputs in, the primitive, the output out.
void Run(ConvEntry& e, const void* in0, const void* in1, void* out) {
  e.scratch.set_data_handle(Scratchpad(e.scratch_bytes));
  Load(e.in0, in0);
  Load(e.in1, in1);
  Bind(e.out, out);
  e.step.prim.execute(ThreadStream(), e.step.args);
  Store(e.out);
  ThreadStream().wait();
}

bool Usable(const ConvDims& d) {
  return DnnlEnabled() && d.n > 0 && d.c > 0 && d.m > 0 && d.oh > 0 &&
         d.ow > 0 && d.h > 0 && d.w > 0;
}

[[noreturn]] void Failed(const char* what, const ConvDims& d,
                         const dnnl::error& err) {
  FLUID_THROW(ErrorCode::kInternal, "oneDNN convolution ", what, " of [", d.n,
              ", ", d.c, ", ", d.h, ", ", d.w, "] by [", d.m, ", ",
              d.c / d.groups, ", ", d.kh, ", ", d.kw, "] failed: ", err.what());
}

}  // namespace

template <typename T>
bool DnnlConvForward(const CPUDeviceContext& dev, const ConvDims& d, const T* x,
                     const T* w, T* y) {
  if (!Usable(d)) return false;
  UseThreads(dev.num_threads());
  TrimCache();
  ConvEntry& e = Lookup(Pass::kForward, d, DnnlType<T>(), dev.num_threads());
  if (!e.ok) return false;
  try {
    Run(e, x, w, y);
  } catch (const dnnl::error& err) {
    Failed("forward", d, err);
  }
  return true;
}

template <typename T>
bool DnnlConvBackward(const CPUDeviceContext& dev, const ConvDims& d,
                      const T* x, const T* w, const T* dy, T* dx, T* dw) {
  if (!Usable(d)) return false;
  const int threads = dev.num_threads();
  UseThreads(threads);
  TrimCache();
  ConvEntry* data = nullptr;
  ConvEntry* filter = nullptr;
  if (dx != nullptr)
    data = &Lookup(Pass::kInputGrad, d, DnnlType<T>(), threads);
  if (dw != nullptr)
    filter = &Lookup(Pass::kFilterGrad, d, DnnlType<T>(), threads);
  if ((data != nullptr && !data->ok) || (filter != nullptr && !filter->ok))
    return false;
  try {
    if (data != nullptr) Run(*data, dy, w, dx);
    if (filter != nullptr) {
      float* f32 = static_cast<float*>(filter->out_f32->data());
      Run(*filter, x, dy, f32);
      const int64_t size = d.m * (d.c / d.groups) * d.kh * d.kw;
      for (int64_t i = 0; i < size; ++i) dw[i] = FromFloat<T>(f32[i]);
    }
  } catch (const dnnl::error& err) {
    Failed("gradient", d, err);
  }
  return true;
}

#else  // !FLUID_WITH_DNNL

template <typename T>
bool DnnlConvForward(const CPUDeviceContext&, const ConvDims&, const T*,
                     const T*, T*) {
  return false;
}

template <typename T>
bool DnnlConvBackward(const CPUDeviceContext&, const ConvDims&, const T*,
                      const T*, const T*, T*, T*) {
  return false;
}

#endif  // FLUID_WITH_DNNL

#define FLUID_DNNL_CONV_INSTANCES(T)                                          \
  template bool DnnlConvForward<T>(const CPUDeviceContext&, const ConvDims&,  \
                                   const T*, const T*, T*);                   \
  template bool DnnlConvBackward<T>(const CPUDeviceContext&, const ConvDims&, \
                                    const T*, const T*, const T*, T*, T*)
FLUID_DNNL_CONV_INSTANCES(bfloat16);
FLUID_DNNL_CONV_INSTANCES(float16);
#undef FLUID_DNNL_CONV_INSTANCES

}  // namespace math
}  // namespace fluid
