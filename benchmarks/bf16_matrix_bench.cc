// GFLOP/s of the 16-bit matrix kernels against float32, through the ops
// (mul, matmul, conv2d and conv2d_grad, one prepared program each), at one
// and two threads; each line names what computed it (Eigen for float32,
// oneDNN and its ISA or the float32 path for bfloat16, both timed and the
// kernels' default marked, float32 compute for float16 where oneDNN has
// no float16 kernels). Then the CPU's AMX bfloat16 peak, from a
// loop of tile products, so that the rates can be read as a fraction of
// it.
//
//   build/benchmarks/bf16_matrix_bench [seconds per measurement, 0.5]
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "src/framework/cpu_isa.h"
#include "src/framework/executor.h"
#include "src/framework/float16.h"
#include "src/framework/math/dnnl_context.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace {

double g_seconds = 0.5;

// A random tensor of `dtype` (float32, bfloat16 or float16) in [-1, 1).
Tensor Random(DataType dtype, const Shape& shape, unsigned seed) {
  Tensor t;
  srand(seed);
  for (int64_t i = 0, n = shape.numel(); i < n; ++i) {
    const float v = static_cast<float>(rand()) / RAND_MAX * 2.0f - 1.0f;
    if (dtype == DataType::kBFloat16)
      t.mutable_data<bfloat16>(shape)[i] = FromFloat<bfloat16>(v);
    else if (dtype == DataType::kFloat16)
      t.mutable_data<float16>(shape)[i] = FromFloat<float16>(v);
    else
      t.mutable_data<float>(shape)[i] = v;
  }
  return t;
}

struct Input {
  std::string name;
  Shape shape;
};

// Seconds per run of `op` on random inputs of `dtype`, at `threads`.
double TimeOp(const proto::OpDesc& op, const std::vector<Input>& inputs,
              DataType dtype, int threads) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* block = p.mutable_blocks(0);
  FeedList feeds;
  unsigned seed = 1;
  for (const Input& in : inputs) {
    AddVarDesc(block, in.name, dtype, in.shape);
    feeds.push_back({in.name, Random(dtype, in.shape, seed++)});
  }
  *block->add_ops() = op;
  InferShapeAtCompileTime(op, block);
  Executor exe(Place::CPU(), threads);
  Scope scope;
  auto prepared = exe.Prepare(p, &scope);
  for (int i = 0; i < 2; ++i) exe.Run(prepared.get(), feeds);  // warm up
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  int runs = 0;
  double elapsed = 0;
  do {
    exe.Run(prepared.get(), feeds);
    ++runs;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < g_seconds || runs < 3);
  return elapsed / runs;
}

// What computes `dtype` on the CPU now.
std::string Engine(DataType dtype) {
  if (dtype == DataType::kFloat32) return "Eigen/packed float32";
  if (dtype == DataType::kFloat16)
    return "float32 compute (oneDNN 2.6: no f16)";
  return math::DnnlEnabled() ? "oneDNN " + math::DnnlCpuIsa()
                             : "float32 compute";
}

void Line(const std::string& what, int threads, DataType dtype, double flops,
          double s, const std::string& note) {
  std::printf("%-34s %d thr  %-9s %8.1f GFLOP/s  %8.3f ms  [%s%s]\n",
              what.c_str(), threads, DataTypeName(dtype), flops / s / 1e9,
              s * 1e3, Engine(dtype).c_str(), note.c_str());
  std::fflush(stdout);
}

// bfloat16 runs both ways where oneDNN is built in: on oneDNN and on the
// float32 path, the one the kernels take by default marked.
void Report(const std::string& what, double flops, const proto::OpDesc& op,
            const std::vector<Input>& inputs) {
  const bool chosen = math::DnnlEnabled();
  for (int threads : {1, 2}) {
    for (DataType dtype :
         {DataType::kFloat32, DataType::kBFloat16, DataType::kFloat16}) {
      if (dtype != DataType::kBFloat16 || !math::DnnlBuilt()) {
        Line(what, threads, dtype, flops, TimeOp(op, inputs, dtype, threads),
             "");
        continue;
      }
      for (bool on : {true, false}) {
        math::SetDnnlEnabled(on);
        Line(what, threads, dtype, flops, TimeOp(op, inputs, dtype, threads),
             on == chosen ? ", default" : "");
      }
      math::SetDnnlEnabled(chosen);
    }
  }
}

void Gemm(int64_t m, int64_t n, int64_t k, const std::string& label) {
  Report("mul " + label + " " + std::to_string(m) + "x" + std::to_string(n) +
             "x" + std::to_string(k),
         2.0 * m * n * k,
         MakeOp("mul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}}),
         {{"x", {m, k}}, {"y", {k, n}}});
}

void Conv(int64_t n, int64_t c, int64_t hw, int64_t m, int64_t kk) {
  const double fwd = 2.0 * n * m * hw * hw * c * kk * kk;  // pad keeps H, W
  const std::string shape = std::to_string(n) + "x" + std::to_string(c) + "x" +
                            std::to_string(hw) + "x" + std::to_string(hw) +
                            " " + std::to_string(c) + "->" + std::to_string(m) +
                            " " + std::to_string(kk) + "x" + std::to_string(kk);
  const int32_t pad = static_cast<int32_t>(kk / 2);
  const proto::OpDesc conv = MakeOp(
      "conv2d", {{"Input", {"x"}}, {"Filter", {"w"}}}, {{"Output", {"y"}}},
      {{"paddings", std::vector<int32_t>{pad, pad}}});
  Report("conv2d " + shape, fwd, conv,
         {{"x", {n, c, hw, hw}}, {"w", {m, c, kk, kk}}});
  const proto::OpDesc grad =
      MakeOp("conv2d_grad",
             {{"Input", {"x"}}, {"Filter", {"w"}}, {"Output@GRAD", {"dy"}}},
             {{"Input@GRAD", {"dx"}}, {"Filter@GRAD", {"dw"}}},
             {{"paddings", std::vector<int32_t>{pad, pad}}});
  Report(
      "conv2d_grad " + shape, 2 * fwd, grad,
      {{"x", {n, c, hw, hw}}, {"w", {m, c, kk, kk}}, {"dy", {n, m, hw, hw}}});
}

// The AMX bfloat16 peak: each thread keeps four accumulator tiles busy
// with TDPBF16PS (16 x 16 results of 32-long dot products: 16,384 flops
// each), operands loaded once.
#ifdef __AMX_BF16__
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

void TileLoop(int64_t iters) {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
  alignas(64) static thread_local uint16_t operand[16 * 32];
  alignas(64) static thread_local float result[16 * 16];
  for (auto& v : operand) v = 0x3c00;  // bf16 0.0078125
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t i = 0; i < iters; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, result, 64);
  _tile_release();
  if (result[0] < 0) std::printf("unexpected\n");
}

void AmxPeak() {
  // Linux hands out the tile data state on request (ARCH_REQ_XCOMP_PERM,
  // XFEATURE_XTILEDATA).
  if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) {
    std::printf("amx peak: the kernel refused the tile state\n");
    return;
  }
  const int64_t iters = 20000000;
  for (int threads : {1, 2}) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(TileLoop, iters);
    for (auto& t : pool) t.join();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    std::printf("amx_bf16 peak (TDPBF16PS loop)     %d thr  %8.1f GFLOP/s\n",
                threads, 4.0 * 16384.0 * iters * threads / s / 1e9);
  }
}
#else
void AmxPeak() { std::printf("amx peak: built without AMX intrinsics\n"); }
#endif

}  // namespace
}  // namespace fluid

int main(int argc, char** argv) {
  using namespace fluid;
  if (argc > 1) g_seconds = std::atof(argv[1]);
  std::printf("# %s\n", HalfComputeDescription().c_str());
  Gemm(512, 512, 512, "square");
  Gemm(1024, 1024, 1024, "square");
  // The transformer's width-512 layers, 16 sequences of 128 tokens.
  Gemm(2048, 512, 512, "qkv/out proj");
  Gemm(2048, 2048, 512, "ffn up");
  Gemm(2048, 512, 2048, "ffn down");
  Report("matmul attention 128x[128x64]x[64x128]", 2.0 * 128 * 128 * 128 * 64,
         MakeOp("matmul", {{"X", {"q"}}, {"Y", {"k"}}}, {{"Out", {"s"}}},
                {{"transpose_Y", true}}),
         {{"q", {16, 8, 128, 64}}, {"k", {16, 8, 128, 64}}});
  Conv(32, 64, 28, 64, 3);
  if (HasAmxBf16()) {
    AmxPeak();
  } else {
    std::printf("amx peak: this CPU has no AMX bfloat16\n");
  }
  return 0;
}
