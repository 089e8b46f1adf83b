// CUDA kernels for gather and gather_grad (schemas, shape inference and
// checks in gather_op.cc). An index outside X's rows gives a row of zeros
// and no gradient (the device does not stop to check).
//
// The gradient groups the positions of Index by the row they name, on the
// host (Index is copied there: O(N), no sort), each group in Index's order;
// then one thread per (group, column) sums its group's Out@GRAD values (or,
// with overwrite, takes the last). Work O(N x width) besides zeroing
// X@GRAD, no atomics, and the additions run in the CPU kernel's order, so
// the result equals the CPU's bit for bit, float32 included.
#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ops/cuda/cuda_helpers.cuh"
#include "ops/gather_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T, typename I>
struct GatherFill {
  const T* x;
  const I* index;
  int64_t rows, width;
  T* out;
  __device__ void operator()(int64_t e) const {
    const int64_t i = e / width, c = e - i * width;
    const int64_t r = static_cast<int64_t>(index[i]);
    out[e] = r >= 0 && r < rows ? x[r * width + c] : T(0);
  }
};

// X@GRAD's rows named by Index: group g writes row rows[g] from the
// Out@GRAD rows members[offsets[g]] .. members[offsets[g + 1] - 1].
template <typename T>
struct GatherGradFill {
  const T* dout;
  const int64_t* rows;     // [groups]
  const int64_t* offsets;  // [groups + 1]
  const int64_t* members;  // positions of Index, grouped, in order
  int64_t width;
  bool overwrite;
  T* dx;
  __device__ void operator()(int64_t e) const {
    const int64_t g = e / width, c = e - g * width;
    T acc = T(0);
    for (int64_t k = offsets[g]; k < offsets[g + 1]; ++k) {
      const T v = dout[members[k] * width + c];
      acc = overwrite ? v : acc + v;
    }
    dx[rows[g] * width + c] = acc;
  }
};

template <typename T>
struct ZeroFill {
  T* p;
  __device__ void operator()(int64_t e) const { p[e] = T(0); }
};

template <typename T, typename I>
void Gather(const ExecutionContext& ctx, const GatherArgs& a) {
  T* out = cuda::OutputData<T>(ctx, "Out");
  cuda::ForEach(
      cuda::Dev(ctx), a.count * a.width,
      GatherFill<T, I>{a.x.data<T>(), a.index.data<I>(), a.rows, a.width, out});
}

template <typename T>
void GatherKernel(const ExecutionContext& ctx) {
  const GatherArgs a = ReadGatherArgs(ctx);
  if (a.index.dtype() == DataType::kInt32) {
    Gather<T, int32_t>(ctx, a);
  } else {
    Gather<T, int64_t>(ctx, a);
  }
}

// Index's positions grouped by row: `groups` groups, in one int64 host
// tensor holding the rows [G], the offsets [G + 1], then the members
// (positions in Index's order). Rows outside [0, rows) get no group.
struct RowGroups {
  Tensor plan;
  int64_t groups;
};

template <typename I>
RowGroups GroupByRow(const Tensor& index_host, int64_t count, int64_t rows) {
  const I* idx = index_host.data<I>();
  std::unordered_map<int64_t, int64_t> group_of;
  std::vector<int64_t> group_rows, sizes, group(count, -1);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t r = static_cast<int64_t>(idx[i]);
    if (r < 0 || r >= rows) continue;
    auto it = group_of.emplace(r, static_cast<int64_t>(group_rows.size()));
    if (it.second) {
      group_rows.push_back(r);
      sizes.push_back(0);
    }
    group[i] = it.first->second;
    ++sizes[group[i]];
  }
  const int64_t groups = static_cast<int64_t>(group_rows.size());
  int64_t members = 0;
  for (int64_t s : sizes) members += s;
  Tensor out(DataType::kInt64, Shape{2 * groups + 1 + members});
  int64_t* p = out.mutable_data<int64_t>();
  std::copy(group_rows.begin(), group_rows.end(), p);
  int64_t* offsets = p + groups;
  offsets[0] = 0;
  for (int64_t g = 0; g < groups; ++g) offsets[g + 1] = offsets[g] + sizes[g];
  std::vector<int64_t> next(offsets, offsets + groups);
  for (int64_t i = 0; i < count; ++i)
    if (group[i] >= 0) offsets[groups + 1 + next[group[i]]++] = i;
  return {std::move(out), groups};
}

template <typename T>
void GatherGrad(const ExecutionContext& ctx, const GatherArgs& a, T* dx) {
  Tensor index_host;
  index_host.CopyFrom(a.index, Place::CPU());
  const RowGroups host = a.index.dtype() == DataType::kInt32
                             ? GroupByRow<int32_t>(index_host, a.count, a.rows)
                             : GroupByRow<int64_t>(index_host, a.count, a.rows);
  cuda::ForEach(cuda::Dev(ctx), a.rows * a.width, ZeroFill<T>{dx});
  if (host.groups == 0) return;
  Tensor plan;
  plan.CopyFrom(host.plan, ctx.place());
  const int64_t* p = plan.data<int64_t>();
  const int64_t g = host.groups;
  cuda::ForEach(cuda::Dev(ctx), g * a.width,
                GatherGradFill<T>{ctx.Input(GradSlot("Out")).data<T>(), p,
                                  p + g, p + 2 * g + 1, a.width,
                                  ctx.Attr<bool>("overwrite"), dx});
}

template <typename T>
void GatherGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const GatherArgs a = ReadGatherArgs(ctx);
  FLUID_ENFORCE(ctx.Input(GradSlot("Out")).numel() == a.count * a.width,
                "gather_grad: Out@GRAD '", ctx.InputName(GradSlot("Out")), "' ",
                ctx.Input(GradSlot("Out")).shape(),
                " does not hold one row of X per index");
  GatherGrad<T>(ctx, a, dx->mutable_data<T>(ctx.place()));
}

}  // namespace

REGISTER_FLOAT_KERNELS(gather, kCUDA, GatherKernel);
REGISTER_KERNEL(gather, kCUDA, int32_t, GatherKernel<int32_t>);
REGISTER_KERNEL(gather, kCUDA, int64_t, GatherKernel<int64_t>);
REGISTER_FLOAT_KERNELS(gather_grad, kCUDA, GatherGradKernel);

}  // namespace ops
}  // namespace fluid
