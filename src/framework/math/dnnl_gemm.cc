#include "src/framework/math/dnnl_gemm.h"

#include <cstring>

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

// [batch or 1, rows, cols], stored row-major or (trans) column-major, the
// batch `stride` elements apart; a stride of 0 is one matrix the batch
// shares (oneDNN broadcasts a batch dim of 1).
memory::desc OperandDesc(memory::data_type dt, int64_t batch, int64_t stride,
                         int64_t rows, int64_t cols, bool trans) {
  const int64_t b = stride == 0 ? 1 : batch;
  const int64_t s = stride == 0 ? rows * cols : stride;
  return memory::desc(
      {b, rows, cols}, dt,
      trans ? memory::dims{s, 1, rows} : memory::dims{s, cols, 1});
}

// One cached product: `ok` false when oneDNN has no implementation for it
// (remembered, so that the fallback is chosen without asking again).
struct GemmEntry {
  bool ok = false;
  Step step;
  memory a, b, c, scratch;
  size_t scratch_bytes = 0;
  std::unique_ptr<OwnedBuffer> acc;  // float32 sum of the batch (g.sum)
};

GemmEntry MakeEntry(const GemmBatch& g, memory::data_type dt) {
  GemmEntry e;
  // A summed batch runs one product at a time into a float32 C that the
  // sum post-op adds to.
  const int64_t batch = g.sum ? 1 : g.batch;
  const int64_t as = g.sum ? 0 : g.a_stride, bs = g.sum ? 0 : g.b_stride;
  const memory::desc a = OperandDesc(dt, batch, as, g.m, g.k, g.trans_a);
  const memory::desc b = OperandDesc(dt, batch, bs, g.k, g.n, g.trans_b);
  const memory::desc c({batch, g.m, g.n}, g.sum ? memory::data_type::f32 : dt,
                       memory::format_tag::abc);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (g.alpha != 1.0f) attr.set_output_scales(0, {g.alpha});
  if (g.sum) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  dnnl::matmul::primitive_desc pd;
  try {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr,
                                      Engine());
  } catch (const dnnl::error&) {
    return e;  // no implementation: the caller computes in float32
  }
  e.ok = true;
  e.step.prim = dnnl::matmul(pd);
  e.a = Unbound(a);
  e.b = Unbound(b);
  e.c = Unbound(c);
  e.scratch = Unbound(pd.scratchpad_desc());
  e.scratch_bytes = pd.scratchpad_desc().get_size();
  e.step.args = {{DNNL_ARG_SRC, e.a},
                 {DNNL_ARG_WEIGHTS, e.b},
                 {DNNL_ARG_DST, e.c},
                 {DNNL_ARG_SCRATCHPAD, e.scratch}};
  if (g.sum) e.acc = std::make_unique<OwnedBuffer>(sizeof(float) * g.m * g.n);
  return e;
}

Key GemmKey(const GemmBatch& g, memory::data_type dt, int threads) {
  int32_t alpha_bits;
  std::memcpy(&alpha_bits, &g.alpha, sizeof(alpha_bits));
  return Key{static_cast<int64_t>(dt),
             g.trans_a,
             g.trans_b,
             g.batch,
             g.m,
             g.n,
             g.k,
             alpha_bits,
             g.a_stride,
             g.b_stride,
             g.sum,
             threads};
}

// Cached products per thread beyond which the cache starts over (shapes
// that vary step to step, e.g. sequence lengths, would otherwise grow it
// without bound).
constexpr size_t kMaxGemmEntries = 512;

GemmEntry& Lookup(const GemmBatch& g, memory::data_type dt, int threads) {
  thread_local std::map<Key, GemmEntry> cache;
  if (cache.size() >= kMaxGemmEntries) cache.clear();
  const Key key = GemmKey(g, dt, threads);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, MakeEntry(g, dt)).first;
  return it->second;
}

void Execute(GemmEntry& e, const void* a, const void* b, void* c) {
  e.a.set_data_handle(const_cast<void*>(a));
  e.b.set_data_handle(const_cast<void*>(b));
  e.c.set_data_handle(c);
  e.step.prim.execute(ThreadStream(), e.step.args);
}

template <typename T>
void Run(GemmEntry& e, const GemmBatch& g, const T* a, const T* b, T* c) {
  e.scratch.set_data_handle(Scratchpad(e.scratch_bytes));
  if (!g.sum) {
    Execute(e, a, b, c);
  } else {
    float* acc = static_cast<float*>(e.acc->data());
    std::memset(acc, 0, sizeof(float) * g.m * g.n);
    for (int64_t i = 0; i < g.batch; ++i)
      Execute(e, a + i * g.a_stride, b + i * g.b_stride, acc);
    for (int64_t i = 0; i < g.m * g.n; ++i) c[i] = FromFloat<T>(acc[i]);
  }
  ThreadStream().wait();
}

}  // namespace

template <typename T>
bool DnnlGemm(const CPUDeviceContext& dev, const GemmBatch& g, const T* a,
              const T* b, T* c) {
  if (!DnnlEnabled() || g.batch <= 0 || g.m <= 0 || g.n <= 0 || g.k <= 0)
    return false;
  const int threads = dev.num_threads();
  UseThreads(threads);
  GemmEntry& e = Lookup(g, DnnlType<T>(), threads);
  if (!e.ok) return false;
  try {
    Run(e, g, a, b, c);
  } catch (const dnnl::error& err) {
    FLUID_THROW(ErrorCode::kInternal, "oneDNN matmul [", g.batch, " x ", g.m,
                " x ", g.k, "] * [", g.k, " x ", g.n, "] failed: ", err.what());
  }
  return true;
}

#else  // !FLUID_WITH_DNNL

template <typename T>
bool DnnlGemm(const CPUDeviceContext&, const GemmBatch&, const T*, const T*,
              T*) {
  return false;
}

#endif  // FLUID_WITH_DNNL

template bool DnnlGemm<bfloat16>(const CPUDeviceContext&, const GemmBatch&,
                                 const bfloat16*, const bfloat16*, bfloat16*);
template bool DnnlGemm<float16>(const CPUDeviceContext&, const GemmBatch&,
                                const float16*, const float16*, float16*);

}  // namespace math
}  // namespace fluid
