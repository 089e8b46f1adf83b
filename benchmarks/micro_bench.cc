// Micro-benchmarks: GEMM through math::Gemm at the shapes the built-in
// models use, and the executor's per-op dispatch overhead (a prepared
// program of 1,000 tiny ops).
#include <benchmark/benchmark.h>

#include <random>

#include "src/framework/executor.h"
#include "src/framework/math/blas.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace {

void BM_Gemm(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  CPUDeviceContext dev(threads);
  std::vector<float> a(m * k), b(k * n), c(m * n);
  std::mt19937 rng(1);
  for (auto& v : a) v = (rng() % 100) / 100.0f;
  for (auto& v : b) v = (rng() % 100) / 100.0f;
  for (auto _ : state) {
    math::Gemm<float>(dev, false, false, m, n, k, 1.0f, a.data(), b.data(),
                      0.0f, c.data());
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * m * n * k * state.iterations(), benchmark::Counter::kIsRate,
      benchmark::Counter::kIs1000);
}
// mlp layers at batch 64, the lenet fc1, and a square reference.
BENCHMARK(BM_Gemm)
    ->Args({64, 512, 784, 1})
    ->Args({64, 256, 512, 1})
    ->Args({64, 500, 800, 1})
    ->Args({512, 512, 512, 1})
    ->Args({64, 512, 784, 2})
    ->Args({512, 512, 512, 2})
    ->Unit(benchmark::kMicrosecond);

// A chain of 1,000 `scale` ops on a one-element tensor: what a run costs
// beyond its kernels.
void BM_ExecutorDispatch(benchmark::State& state) {
  const int num_ops = static_cast<int>(state.range(0));
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* block = p.mutable_blocks(0);
  AddVarDesc(block, "v0", DataType::kFloat32, Shape{1});
  for (int i = 0; i < num_ops; ++i) {
    std::string in = "v" + std::to_string(i), out = "v" + std::to_string(i + 1);
    proto::OpDesc op =
        MakeOp("scale", {{"X", {in}}}, {{"Out", {out}}}, {{"scale", 1.0f}});
    *block->add_ops() = op;
    InferShapeAtCompileTime(op, block);
  }
  Executor exe;
  Scope scope;
  auto prepared = exe.Prepare(p, &scope);
  Tensor x;
  x.mutable_data<float>(Shape{1})[0] = 1.0f;
  FeedList feeds = {{"v0", x}};
  for (auto _ : state) exe.Run(prepared.get(), feeds);
  state.counters["ns/op"] = benchmark::Counter(
      static_cast<double>(num_ops) * state.iterations(),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert,
      benchmark::Counter::kIs1000);
}
BENCHMARK(BM_ExecutorDispatch)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace fluid

BENCHMARK_MAIN();
