// How the CPU convolutions (conv2d, conv2d_transpose) cut a batch into
// chunks of images whose column matrices stay in cache, spread over the
// pool, each chunk's GEMMs on a serial device.
#pragma once

#include <algorithm>
#include <cstdint>

#include "src/framework/device_context.h"
#include "src/framework/math/im2col.h"
#include "src/framework/math/int_math.h"

namespace fluid {
namespace ops {

// Column-matrix elements per chunk: 256 KiB of floats, so the matrix im2col
// writes is still in L2 when the GEMM reads it, yet wide enough for an
// efficient GEMM. At LeNet's shapes (batch 64) this is 4 images a chunk for
// conv1 and 2 for conv2; measured on an AVX-512 core, 64K to 128K elements
// were fastest, 1M elements 10-30% slower, one image at a time slower still
// for conv1.
constexpr int64_t kColChunkElements = 1 << 16;

// A GEMM run inside a parallel chunk must not itself wait on the pool.
inline const CPUDeviceContext& SerialDevice() {
  static const CPUDeviceContext dev(1);
  return dev;
}

// How the batch is cut: `chunks` chunks of at most `per` images.
struct ChunkPlan {
  int64_t per = 1;
  int64_t chunks = 0;
};

// At most kColChunkElements of column matrix a chunk, at least as many
// chunks as threads where the batch allows, and even chunks: 64 images at
// most 18 a chunk go as 4 chunks of 16, not 18 + 18 + 18 + 10.
inline ChunkPlan PlanChunks(const CPUDeviceContext& dev,
                            const math::ConvGeometry& g, int64_t batch) {
  ChunkPlan plan;
  if (batch <= 0) return plan;
  const int64_t col = std::max<int64_t>(g.ColRows() * g.ColCols(), 1);
  const int64_t per = std::clamp<int64_t>(kColChunkElements / col, 1, batch);
  int64_t chunks = CeilDiv(batch, per);
  const int threads = dev.num_threads();
  if (threads > 1 && chunks < batch)
    chunks = std::min(batch, CeilDiv(chunks, threads) * threads);
  plan.per = CeilDiv(batch, chunks);
  plan.chunks = CeilDiv(batch, plan.per);
  return plan;
}

}  // namespace ops
}  // namespace fluid
