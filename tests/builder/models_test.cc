#include "src/builder/models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>

#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "tests/transpiler/testdata.h"

namespace fluid {
namespace {

std::vector<std::pair<std::string, Shape>> Params(
    const proto::TrainingJob& job) {
  std::vector<std::pair<std::string, Shape>> out;
  for (const auto& v : job.main().blocks(0).vars())
    if (v.trainable()) out.emplace_back(v.name(), VarShape(v));
  return out;
}

// The transpiler's tests start from jobs written out as text: they must
// stay what the builder makes. FLUID_UPDATE_TESTDATA=1 rewrites the files.
// "mlp_clip_decay" is the mlp with Adam, L2 decay and global-norm clipping.
TEST(Models, TranspilerTestdataIsWhatTheBuilderMakes) {
  ModelOptions clip_decay;
  clip_decay.default_optimizer = false;
  clip_decay.optimizer.type = "adam";
  clip_decay.optimizer.learning_rate = 0.01f;
  clip_decay.optimizer.regularization = {Regularization::Kind::kL2, 1e-3f};
  clip_decay.optimizer.gradient_clip.kind = GradientClip::Kind::kByGlobalNorm;
  clip_decay.optimizer.gradient_clip.clip_norm = 1.0f;
  const std::pair<const char*, proto::TrainingJob> jobs[] = {
      {"mlp", BuildModel("mlp")},
      {"mlp_clip_decay", BuildModel("mlp", clip_decay)}};
  for (const auto& [name, job] : jobs) {
    const std::string built = testing::TestJobText(job);
    if (std::getenv("FLUID_UPDATE_TESTDATA") != nullptr) {
      std::ofstream(testing::TestJobPath(name)) << built;
    }
    EXPECT_EQ(testing::TestJobText(testing::LoadTestJob(name)), built)
        << testing::TestJobPath(name) << " is out of date: rerun this test "
        << "with FLUID_UPDATE_TESTDATA=1 and review the difference";
  }
}

TEST(Models, MlpShapes) {
  auto params = Params(BuildModel("mlp"));
  std::vector<Shape> shapes;
  for (auto& p : params) shapes.push_back(p.second);
  EXPECT_EQ(shapes,
            (std::vector<Shape>{
                {784, 512}, {512}, {512, 256}, {256}, {256, 10}, {10}}));
}

TEST(Models, LenetShapes) {
  auto params = Params(BuildModel("lenet"));
  std::vector<Shape> shapes;
  for (auto& p : params) shapes.push_back(p.second);
  EXPECT_EQ(shapes, (std::vector<Shape>{{20, 1, 5, 5},
                                        {20},
                                        {50, 20, 5, 5},
                                        {50},
                                        {800, 500},
                                        {500},
                                        {500, 10},
                                        {10}}));
}

TEST(Models, JobNamesFeedsLossAndMetrics) {
  proto::TrainingJob job = BuildModel("lenet");
  EXPECT_EQ(job.feed_names_size(), 2);
  EXPECT_EQ(job.feed_names(0), "image");
  EXPECT_EQ(job.loss_name(), "loss");
  EXPECT_EQ(job.metric_names(0), "accuracy");
  EXPECT_TRUE(job.has_test());
  for (const auto& op : job.test().blocks(0).ops())
    EXPECT_EQ(OpRoleOf(op) & 0x3, 0) << op.type();
  EXPECT_THROW(BuildModel("alexnet"), Error);
}

// Trainable shapes of `name` whose var name starts with `prefix`.
std::vector<Shape> ShapesOf(const std::string& name,
                            const std::string& prefix) {
  std::vector<Shape> shapes;
  for (auto& p : Params(BuildModel(name)))
    if (p.first.rfind(prefix, 0) == 0) shapes.push_back(p.second);
  return shapes;
}

TEST(Models, ResnetShapes) {
  // 1 stem + 2 blocks x 3 stages x 2 convs + 2 projections, no biases.
  EXPECT_EQ(ShapesOf("resnet", "conv2d").size(), 15u);
  EXPECT_EQ(ShapesOf("resnet", "conv2d").front(), (Shape{16, 1, 3, 3}));
  EXPECT_EQ(ShapesOf("resnet", "batch_norm").size(), 30u);
  EXPECT_EQ(ShapesOf("resnet", "fc"), (std::vector<Shape>{{64, 10}, {10}}));
}

TEST(Models, VggShapes) {
  EXPECT_EQ(
      ShapesOf("vgg", "conv2d"),
      (std::vector<Shape>{
          {32, 1, 3, 3}, {32, 32, 3, 3}, {64, 32, 3, 3}, {64, 64, 3, 3}}));
  EXPECT_EQ(ShapesOf("vgg", "fc"),
            (std::vector<Shape>{{3136, 128}, {128}, {128, 10}, {10}}));
  EXPECT_EQ(ShapesOf("vgg", "batch_norm").back(), (Shape{128}));
}

// batch_norm and dropout run in test mode in the job's test program.
TEST(Models, TestProgramsEvaluate) {
  for (std::string name : {"resnet", "vgg"}) {
    proto::TrainingJob job = BuildModel(name);
    int switched = 0;
    for (const auto& op : job.test().blocks(0).ops()) {
      if (op.type() == "batch_norm" || op.type() == "dropout")
        switched += GetOpAttrAs<bool>(op, "is_test") ? 1 : 0;
    }
    EXPECT_EQ(switched, name == "resnet" ? 15 : 6) << name;
  }
}

// The models learn a synthetic task: the class is which quadrant of the
// image holds the brightest blob.
TEST(Models, LossFallsOnASyntheticTask) {
  for (std::string name : {"mlp", "lenet", "resnet", "vgg"}) {
    proto::TrainingJob job = BuildModel(name);
    Executor exe;
    Scope scope;
    exe.RunOnce(job.startup(), &scope);
    auto main = exe.Prepare(job.main(), &scope);
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> noise(0.0f, 0.2f);
    auto batch = [&](Tensor* x, Tensor* y) {
      float* xp = x->mutable_data<float>(Shape{32, 1, 28, 28});
      int64_t* yp = y->mutable_data<int64_t>(Shape{32, 1});
      for (int n = 0; n < 32; ++n) {
        int cls = rng() % 4;
        yp[n] = cls;
        for (int i = 0; i < 784; ++i) xp[n * 784 + i] = noise(rng);
        int r0 = (cls / 2) * 14, c0 = (cls % 2) * 14;
        for (int r = r0 + 3; r < r0 + 11; ++r)
          for (int c = c0 + 3; c < c0 + 11; ++c) xp[n * 784 + r * 28 + c] = 1;
      }
    };
    Tensor x, y;
    std::vector<Tensor> out;
    double first = 0, last = 0;
    for (int step = 0; step < 30; ++step) {
      batch(&x, &y);
      exe.Run(main.get(), {{"image", x}, {"label", y}}, {"loss", "accuracy"},
              &out);
      double loss = out[0].data<float>()[0];
      ASSERT_TRUE(std::isfinite(loss)) << name << " step " << step;
      if (step < 3) first += loss / 3;
      if (step >= 27) last += loss / 3;
    }
    EXPECT_LT(last, 0.5 * first)
        << name << ": loss " << first << " -> " << last;
  }
}

}  // namespace
}  // namespace fluid
