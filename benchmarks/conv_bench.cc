// conv2d through the op kernels at LeNet's shapes (batch 64, fp32): the
// forward op, the grad op (Input@GRAD and Filter@GRAD), and both in one
// program, as a training step runs them (conv1 without Input@GRAD, as in
// training, where its input is the image). Each benchmark prepares a one- or
// two-op program once and runs it with no feeds (the inputs are persistable
// vars set once), so what is timed is the kernels plus the executor's
// dispatch, which is what a training step pays.
//
// pool2d (max 2x2 / 2) at the shapes that follow each conv is timed too.
//
//   conv_bench --benchmark_filter=Lenet
//
// Args: {layer (0 = conv1 1->20 5x5 on 28x28, 1 = conv2 20->50 5x5 on
// 12x12), threads}.
//
// The resnet model's 3x3 convolutions (padding 1) are timed the same way:
//
//   conv_bench --benchmark_filter=Resnet
//
// Args: {layer (0..2 = stride-1 16, 32, 64 channels on 28, 14, 7 pixels;
// 3, 4 = the stride-2 16->32 and 32->64 that open stages 2 and 3),
// threads}.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "src/framework/executor.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace {

struct ConvLayer {
  const char* name;
  int64_t c, h, w, m, k, pad, stride;
  // The first layer's input is the image: training needs no Input@GRAD
  // there, and the autodiff does not ask for one.
  bool input_grad;
};

// models.cc's LeNet: conv(20, 5) -> pool 2 -> conv(50, 5) -> pool 2.
constexpr ConvLayer kLenet[] = {
    {"conv1", 1, 28, 28, 20, 5, 0, 1, false},
    {"conv2", 20, 12, 12, 50, 5, 0, 1, true},
};

// models.cc's resnet: its 3x3 convolutions, one per shape.
constexpr ConvLayer kResnet[] = {
    {"stage1 16->16", 16, 28, 28, 16, 3, 1, 1, true},
    {"stage2 32->32", 32, 14, 14, 32, 3, 1, 1, true},
    {"stage3 64->64", 64, 7, 7, 64, 3, 1, 1, true},
    {"stage2 16->32 /2", 16, 28, 28, 32, 3, 1, 2, true},
    {"stage3 32->64 /2", 32, 14, 14, 64, 3, 1, 2, true},
};
constexpr int64_t kBatch = 64;

void Fill(Tensor* t, const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  float* p = t->mutable_data<float>(shape);
  for (int64_t i = 0; i < t->numel(); ++i) p[i] = dist(rng);
}

enum class Pass { kForward, kBackward, kBoth };

// The program: conv2d (forward, both) and conv2d_grad (backward, both).
// x, w and y@GRAD are persistable so no feed is copied per run.
struct ConvProgram {
  Executor exe;
  Scope scope;
  std::unique_ptr<PreparedProgram> prepared;
  double flops = 0;

  ConvProgram(const ConvLayer& l, Pass pass, int threads)
      : exe(Place::CPU(), threads) {
    const int64_t oh = (l.h + 2 * l.pad - l.k) / l.stride + 1;
    const int64_t ow = (l.w + 2 * l.pad - l.k) / l.stride + 1;
    const Shape xs{kBatch, l.c, l.h, l.w}, ws{l.m, l.c, l.k, l.k},
        ys{kBatch, l.m, oh, ow};
    proto::ProgramDesc p = NewProgram();
    proto::BlockDesc* block = p.mutable_blocks(0);
    AddVarDesc(block, "x", DataType::kFloat32, xs, /*persistable=*/true);
    AddVarDesc(block, "w", DataType::kFloat32, ws, true);
    AddVarDesc(block, "y@GRAD", DataType::kFloat32, ys, true);
    AttributeMap attrs = {
        {"paddings", std::vector<int32_t>{int32_t(l.pad), int32_t(l.pad)}},
        {"strides",
         std::vector<int32_t>{int32_t(l.stride), int32_t(l.stride)}}};
    if (pass != Pass::kBackward) {
      proto::OpDesc fwd =
          MakeOp("conv2d", {{"Input", {"x"}}, {"Filter", {"w"}}},
                 {{"Output", {"y"}}}, attrs);
      *block->add_ops() = fwd;
      InferShapeAtCompileTime(fwd, block);
    }
    if (pass != Pass::kForward) {
      proto::OpDesc bwd = MakeOp(
          "conv2d_grad",
          {{"Input", {"x"}}, {"Filter", {"w"}}, {"Output@GRAD", {"y@GRAD"}}},
          {{"Input@GRAD", {l.input_grad ? "x@GRAD" : kEmptyVarName}},
           {"Filter@GRAD", {"w@GRAD"}}},
          attrs);
      *block->add_ops() = bwd;
      InferShapeAtCompileTime(bwd, block);
    }
    prepared = exe.Prepare(p, &scope);
    Fill(scope.GetVar("x")->GetMutableTensor(), xs, 1);
    Fill(scope.GetVar("w")->GetMutableTensor(), ws, 2);
    Fill(scope.GetVar("y@GRAD")->GetMutableTensor(), ys, 3);
    // A forward pass is one GEMM of 2 M (C k k) (N Ho Wo) flops; the
    // backward pass is one per gradient.
    double gemm = 2.0 * l.m * l.c * l.k * l.k * kBatch * oh * ow;
    double bwd = l.input_grad ? 2 : 1;
    flops = gemm * (pass == Pass::kForward    ? 1
                    : pass == Pass::kBackward ? bwd
                                              : 1 + bwd);
  }
};

void RunConv(benchmark::State& state, const ConvLayer& layer, Pass pass) {
  const int threads = static_cast<int>(state.range(1));
  ConvProgram prog(layer, pass, threads);
  prog.exe.Run(prog.prepared.get());  // warm the scratch buffers
  for (auto _ : state) prog.exe.Run(prog.prepared.get());
  state.SetLabel(std::string(layer.name) + " batch 64, " +
                 std::to_string(threads) + " thread(s)");
  state.counters["GFLOP/s"] = benchmark::Counter(
      prog.flops * state.iterations(), benchmark::Counter::kIsRate,
      benchmark::Counter::kIs1000);
}

void BM_LenetConvForward(benchmark::State& state) {
  RunConv(state, kLenet[state.range(0)], Pass::kForward);
}
void BM_LenetConvBackward(benchmark::State& state) {
  RunConv(state, kLenet[state.range(0)], Pass::kBackward);
}
void BM_LenetConvForwardBackward(benchmark::State& state) {
  RunConv(state, kLenet[state.range(0)], Pass::kBoth);
}
void BM_ResnetConvForward(benchmark::State& state) {
  RunConv(state, kResnet[state.range(0)], Pass::kForward);
}
void BM_ResnetConvBackward(benchmark::State& state) {
  RunConv(state, kResnet[state.range(0)], Pass::kBackward);
}
void BM_ResnetConvForwardBackward(benchmark::State& state) {
  RunConv(state, kResnet[state.range(0)], Pass::kBoth);
}

// pool2d (max, 2x2, stride 2) after each LeNet conv: forward, and forward +
// grad. Args: {layer, threads}.
void RunPool(benchmark::State& state, bool backward) {
  const ConvLayer& l = kLenet[state.range(0)];
  const int threads = static_cast<int>(state.range(1));
  const int64_t oh = l.h - l.k + 1, ow = l.w - l.k + 1;
  const Shape xs{kBatch, l.m, oh, ow}, ys{kBatch, l.m, oh / 2, ow / 2};
  Executor exe(Place::CPU(), threads);
  Scope scope;
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* block = p.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, xs, true);
  AddVarDesc(block, "y@GRAD", DataType::kFloat32, ys, true);
  AttributeMap attrs = {{"pooling_type", std::string("max")},
                        {"ksize", std::vector<int32_t>{2, 2}},
                        {"strides", std::vector<int32_t>{2, 2}}};
  proto::OpDesc fwd = MakeOp("pool2d", {{"X", {"x"}}}, {{"Out", {"y"}}}, attrs);
  *block->add_ops() = fwd;
  InferShapeAtCompileTime(fwd, block);
  if (backward) {
    proto::OpDesc bwd = MakeOp(
        "pool2d_grad", {{"X", {"x"}}, {"Out", {"y"}}, {"Out@GRAD", {"y@GRAD"}}},
        {{"X@GRAD", {"x@GRAD"}}}, attrs);
    *block->add_ops() = bwd;
    InferShapeAtCompileTime(bwd, block);
  }
  auto prepared = exe.Prepare(p, &scope);
  Fill(scope.GetVar("x")->GetMutableTensor(), xs, 4);
  Fill(scope.GetVar("y@GRAD")->GetMutableTensor(), ys, 5);
  exe.Run(prepared.get());
  for (auto _ : state) exe.Run(prepared.get());
  state.SetLabel(std::string("after ") + l.name + ", " +
                 std::to_string(threads) + " thread(s)");
}

void BM_LenetPoolForward(benchmark::State& state) { RunPool(state, false); }
void BM_LenetPoolForwardBackward(benchmark::State& state) {
  RunPool(state, true);
}

#define LENET_ARGS \
  ArgsProduct({{0, 1}, {1, 2}})->Unit(benchmark::kMicrosecond)->UseRealTime()

BENCHMARK(BM_LenetConvForward)->LENET_ARGS;
BENCHMARK(BM_LenetConvBackward)->LENET_ARGS;
BENCHMARK(BM_LenetConvForwardBackward)->LENET_ARGS;
BENCHMARK(BM_LenetPoolForward)->LENET_ARGS;
BENCHMARK(BM_LenetPoolForwardBackward)->LENET_ARGS;
BENCHMARK(BM_ResnetConvForward)
    ->ArgsProduct({{0, 1, 2, 3, 4}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_ResnetConvBackward)
    ->ArgsProduct({{0, 1, 2, 3, 4}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_ResnetConvForwardBackward)
    ->ArgsProduct({{0, 1, 2, 3, 4}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace fluid

BENCHMARK_MAIN();
