// Mixed precision of the one-step recurrences (lstm_unit, gru_unit) and of
// elementwise_max/min: where the rewrite puts them and what it keeps in
// float32, and a small model of them trained 20 steps in bf16 (and fp16)
// next to float32. Also: every op on the white or gray list that a
// built-in model uses has 16-bit kernels for itself and its gradient, so
// that the lists, not missing kernels, decide what runs in 16 bits.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "src/builder/attention_layers.h"
#include "src/builder/layers.h"
#include "src/builder/models.h"
#include "src/builder/optimizer.h"
#include "src/builder/recurrent_layers.h"
#include "src/builder/tensor_layers.h"
#include "src/framework/device.h"
#include "src/framework/executor.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/mixed_precision.h"
#include "transpiler/program_query.h"

namespace fluid {
namespace {

constexpr int kTime = 4;        // unrolled steps
constexpr int kFeatures = 6;    // per step
constexpr int64_t kWidth = 16;  // D of both recurrences
constexpr int kClasses = 3;
constexpr int kBatch = 32;

proto::AmpConfig Config(const std::string& dtype) {
  proto::AmpConfig c;
  c.set_dtype(dtype);
  return c;
}

// A classifier of kTime steps of kFeatures: an lstm_unit recurrence
// (Fluid's layer: fc of [x_t, h] into the gates) and a gru_unit one (fc of
// x_t into the gate input) from zero states, their last hidden states
// combined by elementwise_max and elementwise_min, then an fc.
proto::TrainingJob RecurrentUnitsJob() {
  proto::TrainingJob job;
  job.set_version(kProgramVersion);
  *job.mutable_main() = NewProgram();
  *job.mutable_startup() = NewProgram();
  ProgramBuilder b(job.mutable_main(), job.mutable_startup(), /*seed=*/11);
  std::vector<std::string> xs;
  for (int t = 0; t < kTime; ++t)
    xs.push_back(layers::Data(&b, "x" + std::to_string(t), Shape{kFeatures}));
  const std::string label =
      layers::Data(&b, "label", Shape{1}, DataType::kInt64);
  auto zeros = [&] {
    return layers::FillConstantBatchSizeLike(&b, xs[0], {-1, kWidth},
                                             DataType::kFloat32, 0.0f);
  };
  std::string h = zeros(), c = zeros(), g = zeros();
  for (int t = 0; t < kTime; ++t) {
    const std::vector<std::string> hc = layers::LstmUnit(&b, xs[t], h, c);
    h = hc[0];
    c = hc[1];
    const std::string proj = layers::Fc(&b, xs[t], 3 * kWidth);
    g = layers::GruUnit(&b, proj, g, 3 * kWidth)[0];
  }
  const std::string both =
      layers::Concat(&b,
                     {layers::Elementwise(&b, "elementwise_max", h, g),
                      layers::Elementwise(&b, "elementwise_min", h, g)},
                     1);
  const std::string logits = layers::Fc(&b, both, kClasses);
  RenameVar(
      job.mutable_main(),
      layers::Mean(&b, layers::SoftmaxWithCrossEntropy(&b, logits, label)),
      "loss");
  OptimizerConfig opt;
  opt.type = "momentum";
  opt.learning_rate = 0.05f;
  MakeOptimizer(opt)->Minimize(&b, "loss");
  for (int t = 0; t < kTime; ++t) job.add_feed_names("x" + std::to_string(t));
  job.add_feed_names("label");
  job.set_loss_name("loss");
  return job;
}

// Step `step`'s batch: the label is which third of [-3, 3) the sum of the
// first feature over time falls in.
FeedList Batch(int step) {
  std::mt19937 rng(500 + step);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  std::vector<Tensor> x(kTime);
  std::vector<float*> xp;
  for (auto& t : x)
    xp.push_back(t.mutable_data<float>(Shape{kBatch, kFeatures}));
  Tensor label;
  int64_t* y = label.mutable_data<int64_t>(Shape{kBatch, 1});
  for (int n = 0; n < kBatch; ++n) {
    float sum = 0;
    for (int t = 0; t < kTime; ++t)
      for (int f = 0; f < kFeatures; ++f) {
        xp[t][n * kFeatures + f] = u(rng);
        if (f == 0) sum += xp[t][n * kFeatures];
      }
    y[n] = sum < -1.0f ? 0 : (sum < 1.0f ? 1 : 2);
  }
  FeedList feeds;
  for (int t = 0; t < kTime; ++t)
    feeds.push_back({"x" + std::to_string(t), x[t]});
  feeds.push_back({"label", label});
  return feeds;
}

std::vector<double> TrainLosses(const proto::TrainingJob& job, int steps) {
  Executor exe;
  Scope scope;
  exe.RunOnce(job.startup(), &scope);
  auto main = exe.Prepare(job.main(), &scope);
  std::vector<double> losses;
  std::vector<Tensor> out;
  for (int step = 0; step < steps; ++step) {
    exe.Run(main.get(), Batch(step), {"loss"}, &out);
    losses.push_back(out[0].data<float>()[0]);
  }
  return losses;
}

DataType DtypeOf(const proto::BlockDesc& block, const std::string& var) {
  return VarDtype(GetVarDesc(block, var));
}

// lstm_unit and gru_unit are white: they run in bf16 with their GEMM
// operands and outputs in bf16 and the state they carry in float32, and
// so do their grad ops; elementwise_max/min (gray) follow the bf16 input.
TEST(MixedPrecisionUnits, RewritePlacesTheStepsIn16Bits) {
  const proto::TrainingJob job =
      MixedPrecisionRewrite(RecurrentUnitsJob(), Config("bf16"));
  const proto::BlockDesc& block = job.main().blocks(0);
  const DataType bf = DataType::kBFloat16, f32 = DataType::kFloat32;
  std::map<std::string, int> seen;
  for (const auto& op : block.ops()) {
    const std::string& t = op.type();
    ++seen[t];
    // The dtype of the slot's var; float32 for the empty name of a
    // gradient not computed (the first step's state is a constant).
    auto dt = [&](const std::string& slot, bool input) {
      const std::string v = (input ? OpInput(op, slot) : OpOutput(op, slot))[0];
      return v == kEmptyVarName ? f32 : DtypeOf(block, v);
    };
    if (t == "lstm_unit") {
      EXPECT_EQ(dt("X", true), bf);
      EXPECT_EQ(dt("C_prev", true), f32);
      EXPECT_EQ(dt("H", false), bf);
      EXPECT_EQ(dt("C", false), f32);
    } else if (t == "lstm_unit_grad") {
      EXPECT_EQ(dt("X", true), bf);
      EXPECT_EQ(dt(GradVarName("C"), true), f32);
      EXPECT_EQ(dt(GradVarName("X"), false), bf);
      EXPECT_EQ(dt(GradVarName("C_prev"), false), f32);
    } else if (t == "gru_unit") {
      EXPECT_EQ(dt("Input", true), bf);
      EXPECT_EQ(dt("Weight", true), bf);
      EXPECT_EQ(dt("HiddenPrev", true), f32);
      EXPECT_EQ(dt("Bias", true), f32);
      EXPECT_EQ(dt("Gate", false), f32);
      EXPECT_EQ(dt("ResetHiddenPrev", false), bf);
      EXPECT_EQ(dt("Hidden", false), f32);
    } else if (t == "gru_unit_grad") {
      EXPECT_EQ(dt(GradVarName("Hidden"), true), f32);
      EXPECT_EQ(dt(GradVarName("Weight"), false), bf);
      EXPECT_EQ(dt(GradVarName("Input"), false), bf);
    } else if (t == "elementwise_max" || t == "elementwise_min" ||
               t == "elementwise_max_grad" || t == "elementwise_min_grad") {
      EXPECT_EQ(dt("X", true), bf) << t;
      EXPECT_EQ(dt("Y", true), bf) << t;
    }
  }
  for (const char* t :
       {"lstm_unit", "lstm_unit_grad", "gru_unit", "gru_unit_grad"})
    EXPECT_EQ(seen[t], kTime) << t;
  for (const char* t : {"elementwise_max", "elementwise_min",
                        "elementwise_max_grad", "elementwise_min_grad"})
    EXPECT_EQ(seen[t], 1) << t;
}

// 20 steps from the same weights and batches: every bf16 loss within 1e-2
// relative of float32's, as the built-in models'
// (MixedPrecision.Bf16TrainsLikeFloat32 says why 1e-2). fp16, with its
// dynamic loss scaling from a scale that does not overflow here, keeps
// three more bits and stays within the same bound.
TEST(MixedPrecisionUnits, TrainsLikeFloat32For20Steps) {
  const proto::TrainingJob fp32 = RecurrentUnitsJob();
  const std::vector<double> want = TrainLosses(fp32, 20);
  EXPECT_LT(want.back(), want.front());  // it learns
  for (const std::string dtype : {"bf16", "fp16"}) {
    proto::AmpConfig config = Config(dtype);
    config.set_init_loss_scaling(1024);
    const std::vector<double> got =
        TrainLosses(MixedPrecisionRewrite(fp32, config), 20);
    for (int i = 0; i < 20; ++i)
      EXPECT_NEAR(got[i], want[i], 1e-2 * std::abs(want[i]))
          << dtype << " step " << i;
  }
}

// Every op of a built-in model that is on the white or gray list has
// bfloat16 and float16 kernels for itself and each of its grad ops on the
// CPU, and on CUDA in a CUDA build.
TEST(MixedPrecisionUnits, ListedOpsOfTheBuiltInModelsHave16BitKernels) {
  const AmpLists lists = MakeAmpLists(Config("bf16"));
  const OpRegistry& reg = OpRegistry::Global();
  std::vector<Place::Kind> places{Place::Kind::kCPU};
  if (BuiltWithCuda()) places.push_back(Place::Kind::kCUDA);
  std::set<std::string> checked;
  for (const std::string& name : BuiltInModels()) {
    const proto::TrainingJob job = BuildModel(name);
    for (const auto& op : job.main().blocks(0).ops()) {
      const std::string& t = op.type();
      if (!lists.white.count(t) && !lists.gray.count(t)) continue;
      checked.insert(t);
      std::vector<std::string> types{t};
      if (reg.Get(t).has_grad())
        for (const proto::OpDesc& g : reg.Get(t).grad_maker()(op))
          types.push_back(g.type());
      for (const std::string& k : types)
        for (Place::Kind p : places)
          for (DataType dt : {DataType::kBFloat16, DataType::kFloat16})
            EXPECT_TRUE(reg.HasKernel(k, p, dt))
                << name << ": " << k << " has no " << DataTypeName(dt)
                << (p == Place::Kind::kCPU ? " CPU" : " CUDA") << " kernel";
    }
  }
  // What the models use of the lists (a model that stops using one would
  // drop it from this check silently).
  for (const char* t : {"conv2d",
                        "mul",
                        "matmul",
                        "lstm",
                        "elementwise_add",
                        "elementwise_mul",
                        "elementwise_div",
                        "relu",
                        "gelu",
                        "pool2d",
                        "batch_norm",
                        "layer_norm",
                        "dropout",
                        "scale",
                        "reshape",
                        "transpose",
                        "concat",
                        "sum",
                        "clip",
                        "elementwise_max"})
    EXPECT_TRUE(checked.count(t)) << t;
}

}  // namespace
}  // namespace fluid
