// Training with every knob on CUDA against the CPU: an mlp with each
// optimizer, an exponential_decay learning rate, L2 decay (L1 on the first
// weight through its ParamAttr) and global-norm clipping, float64, from the
// same initial weights and batches, ends with the same parameters and the
// same step counter. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "src/builder/layers.h"
#include "src/builder/lr_schedules.h"
#include "src/builder/optimizer.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "tests/testing/cuda_op_check.h"
#include "tests/testing/synthetic_batch.h"

namespace fluid {
namespace {

struct Job {
  proto::ProgramDesc main = NewProgram();
  proto::ProgramDesc startup = NewProgram();
  std::string loss;
  ParamGradList pairs;
};

Job Build(const std::string& type) {
  Job j;
  ProgramBuilder b(&j.main, &j.startup, 3);
  std::string x =
      layers::Data(&b, "image", Shape{1, 28, 28}, DataType::kFloat64);
  std::string y = layers::Data(&b, "label", Shape{1}, DataType::kInt64);
  ParamAttr l1;
  l1.regularizer = {Regularization::Kind::kL1, 1e-4f};
  std::string h = layers::Fc(&b, x, 16, "relu", 1, l1);
  std::string logits = layers::Fc(&b, h, 10);
  j.loss = layers::Mean(&b, layers::SoftmaxWithCrossEntropy(&b, logits, y));
  LrSchedule s;
  s.kind = "exponential_decay";
  s.learning_rate = 0.05f;
  s.decay_steps = 2;
  s.decay_rate = 0.5f;
  OptimizerConfig c;
  c.type = type;
  c.learning_rate_var = BuildLrSchedule(&b, s);
  c.regularization = {Regularization::Kind::kL2, 1e-3f};
  c.gradient_clip.kind = GradientClip::Kind::kByGlobalNorm;
  c.gradient_clip.clip_norm = 0.5f;
  j.pairs = MakeOptimizer(c)->Minimize(&b, j.loss);
  return j;
}

// The parameters and the step counter after `steps` steps on `place`.
std::vector<Tensor> Train(const Job& j, const Place& place, int steps) {
  Executor exe(place);
  Scope scope;
  exe.RunOnce(j.startup, &scope);
  auto main = exe.Prepare(j.main, &scope);
  Tensor x, y;
  for (int s = 0; s < steps; ++s) {
    testing::SyntheticBatch<double>(91 + s, 8, &x, &y, 12);
    exe.Run(main.get(), {{"image", x}, {"label", y}});
  }
  std::vector<Tensor> out;
  std::vector<std::string> names = {kLrCounter};
  for (const auto& pg : j.pairs) names.push_back(pg.first);
  for (const auto& n : names) {
    out.emplace_back();
    out.back().CopyFrom(scope.GetVar(n)->GetTensor(), Place::CPU());
  }
  return out;
}

TEST(KnobsTrainingCuda, EveryOptimizerMatchesCpu) {
  REQUIRE_GPU();
  for (std::string type :
       {"sgd", "momentum", "adam", "adagrad", "decayed_adagrad", "rmsprop",
        "adamax", "adadelta", "lars_momentum"}) {
    Job j = Build(type);
    std::vector<Tensor> cpu = Train(j, Place::CPU(), 6);
    std::vector<Tensor> cuda = Train(j, Place::CUDA(0), 6);
    ASSERT_EQ(cpu.size(), cuda.size());
    EXPECT_EQ(cpu[0].data<double>()[0], 5.0) << "the step counter";
    for (size_t k = 0; k < cpu.size(); ++k)
      EXPECT_TRUE(testing::TensorsClose(cpu[k], cuda[k], 1e-9, type))
          << type << " var " << k;
  }
}

}  // namespace
}  // namespace fluid
