// Eager deletion: the executor drops each temporary's memory after its last
// use, keeps what is fetched, fed or asked for, changes no result, and in a
// steady state gets every block from the cache.
#include <gtest/gtest.h>

#include <cstring>

#include "src/builder/models.h"
#include "src/framework/executor.h"
#include "src/framework/memory.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/model_steps.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::MakeTensor;

// x [-1, 3] * w [3, 2] -> y, y * 2 -> z.
proto::ProgramDesc TwoOps() {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  AddVarDesc(b, "x", DataType::kFloat32, Shape{-1, 3});
  AddVarDesc(b, "w", DataType::kFloat32, Shape{3, 2}, true);
  for (auto op :
       {MakeOp("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"y"}}}),
        MakeOp("scale", {{"X", {"y"}}}, {{"Out", {"z"}}}, {{"scale", 2.0f}})}) {
    *b->add_ops() = op;
    InferShapeAtCompileTime(op, b);
  }
  return p;
}

class EagerDeletion : public ::testing::Test {
 protected:
  void SetUp() override {
    scope_.Var("w")->GetMutableTensor()->CopyFrom(
        MakeTensor<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  }
  const Tensor& Held(PreparedProgram* p, const std::string& name) {
    return p->local_scope()->FindVar(name)->GetTensor();
  }
  Executor exe_;
  Scope scope_;
  Tensor x_ = MakeTensor<float>({1, 3}, {1, 1, 1});
};

TEST_F(EagerDeletion, DropsTemporariesAfterTheirLastUseKeepsFetchesAndFeeds) {
  ASSERT_TRUE(exe_.eager_deletion());  // on by default
  auto p = exe_.Prepare(TwoOps(), &scope_);
  EXPECT_EQ(p->ReleasedAfter(0), std::vector<std::string>{});
  EXPECT_EQ(p->ReleasedAfter(1), (std::vector<std::string>{"y", "z"}));
  std::vector<Tensor> out;
  exe_.Run(p.get(), {{"x", x_}}, {"z"}, &out);
  EXPECT_EQ(testing::ToVector<float>(out[0]), (std::vector<float>{18, 24}));
  EXPECT_FALSE(Held(p.get(), "y").initialized());
  // The variable keeps its dtype and shape; only the memory is gone.
  EXPECT_EQ(Held(p.get(), "y").shape(), Shape({1, 2}));
  EXPECT_TRUE(Held(p.get(), "z").initialized());  // fetched
  EXPECT_TRUE(Held(p.get(), "x").initialized());  // fed
  EXPECT_TRUE(scope_.FindVar("w")->GetTensor().initialized());
  // Fetched once is not fetched for ever.
  exe_.Run(p.get(), {{"x", x_}}, {"y"}, &out);
  EXPECT_EQ(testing::ToVector<float>(out[0]), (std::vector<float>{9, 12}));
  EXPECT_TRUE(Held(p.get(), "y").initialized());
  EXPECT_FALSE(Held(p.get(), "z").initialized());
}

TEST_F(EagerDeletion, KeepAfterRunAndTheSwitch) {
  auto kept = exe_.Prepare(TwoOps(), &scope_);
  kept->KeepAfterRun({"y"});
  EXPECT_EQ(kept->ReleasedAfter(1), std::vector<std::string>{"z"});
  exe_.Run(kept.get(), {{"x", x_}});
  EXPECT_TRUE(Held(kept.get(), "y").initialized());
  EXPECT_FALSE(Held(kept.get(), "z").initialized());
  EXPECT_NE(ErrorOf([&] {
              kept->KeepAfterRun({"nope"});
            }).find("'nope' is not a variable of the program"),
            std::string::npos);

  exe_.set_eager_deletion(false);
  auto off = exe_.Prepare(TwoOps(), &scope_);
  EXPECT_FALSE(off->eager_deletion());
  EXPECT_EQ(off->ReleasedAfter(1), std::vector<std::string>{});
  exe_.Run(off.get(), {{"x", x_}});
  EXPECT_TRUE(Held(off.get(), "y").initialized());
  EXPECT_TRUE(Held(off.get(), "z").initialized());
}

TEST(MemoryUsage, CountsEveryBufferAndItsHighWaterMark) {
  const Place cpu = Place::CPU();
  const int64_t before = GetMemoryUsage(cpu).in_use;
  ResetPeakMemory(cpu);
  {
    Tensor a(DataType::kFloat32, Shape{1000});
    a.mutable_data<float>();
    EXPECT_EQ(GetMemoryUsage(cpu).in_use, before + 4000);
    Tensor b(DataType::kFloat32, Shape{500});
    b.mutable_data<float>();
    EXPECT_EQ(GetMemoryUsage(cpu).peak, before + 6000);
  }
  EXPECT_EQ(GetMemoryUsage(cpu).in_use, before);
  EXPECT_EQ(GetMemoryUsage(cpu).peak, before + 6000);
  ResetPeakMemory(cpu);
  EXPECT_EQ(GetMemoryUsage(cpu).peak, before);
}

// The bytes a model's steps hold at once and its losses and parameters
// after `steps` steps, with eager deletion `on` or off.
struct ModelRun {
  int64_t peak = 0;
  int64_t system_allocations_after_warmup = 0;
  std::vector<float> losses;
  std::vector<std::vector<char>> params;
};

ModelRun RunModel(const std::string& model, int64_t batch, bool on, int steps) {
  const proto::TrainingJob job = BuildModel(model);
  Executor exe;
  exe.set_eager_deletion(on);
  Scope scope;
  const int64_t base = GetMemoryUsage(Place::CPU()).in_use;
  ResetPeakMemory(Place::CPU());
  exe.RunOnce(job.startup(), &scope);
  auto main = exe.Prepare(job.main(), &scope);
  ModelRun run;
  for (int step = 0; step < steps; ++step) {
    if (step == 2)
      run.system_allocations_after_warmup =
          GetMemoryUsage(Place::CPU()).system_allocations;
    std::vector<Tensor> out;
    exe.Run(main.get(), testing::SyntheticFeeds(job, batch, step),
            {job.loss_name()}, &out);
    run.losses.push_back(out[0].data<float>()[0]);
  }
  run.peak = GetMemoryUsage(Place::CPU()).peak - base;
  for (const auto& v : job.main().blocks(0).vars()) {
    if (!v.trainable()) continue;
    const Tensor& t = scope.FindVar(v.name())->GetTensor();
    const char* p = static_cast<const char*>(t.raw_data());
    run.params.emplace_back(p, p + t.bytes());
  }
  return run;
}

TEST(EagerDeletionModels, SameResultsBitForBitLessMemoryNoSystemAllocations) {
  for (const auto& [model, batch] :
       std::vector<std::pair<std::string, int64_t>>{
           {"mlp", 64}, {"lenet", 32}, {"transformer", 4}}) {
    SCOPED_TRACE(model);
    const ModelRun off = RunModel(model, batch, false, 4);
    const ModelRun on = RunModel(model, batch, true, 4);
    ASSERT_EQ(on.losses.size(), off.losses.size());
    for (size_t i = 0; i < on.losses.size(); ++i)
      EXPECT_EQ(std::memcmp(&on.losses[i], &off.losses[i], sizeof(float)), 0)
          << "step " << i << ": " << on.losses[i] << " vs " << off.losses[i];
    EXPECT_EQ(on.params, off.params);
    EXPECT_LT(on.peak, off.peak);
    // From the third step on, every block comes from the cache.
    EXPECT_EQ(GetMemoryUsage(Place::CPU()).system_allocations,
              on.system_allocations_after_warmup);
  }
}

}  // namespace
}  // namespace fluid
