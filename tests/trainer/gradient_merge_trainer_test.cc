// The trainer with --gradient-merge: steps and samples count batches of
// --batch-size, checkpoints taken mid-accumulation resume to the bit, a
// checkpoint resumed under another K closes the merged step as the new K
// says, and the flag refuses a bad K by name.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "src/io/checkpoint.h"
#include "src/trainer/strategy_flags.h"
#include "src/trainer/trainer.h"

namespace fluid {
namespace {

namespace fs = std::filesystem;

constexpr const char* kData = "/usr/share/datasets/fashion-mnist";

class GradientMergeTrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct stat st;
    ASSERT_EQ(
        ::stat((std::string(kData) + "/train-images-idx3-ubyte.gz").c_str(),
               &st),
        0)
        << "Fashion-MNIST is not installed at " << kData;
    char tmpl[] = "/tmp/fluid_gradient_merge_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // The mlp on 256 samples, batch 32: 8 batches per epoch, merged 4 at a
  // time (2 merged steps), checkpoints every 3 batches (mid-accumulation).
  TrainerOptions Options(const std::string& ckpt, int k = 4) {
    TrainerOptions o;
    o.model = "mlp";
    o.data_dir = kData;
    o.train_samples = 256;
    o.test_samples = 200;
    o.batch_size = 32;
    o.log_every = 0;
    o.checkpoint_dir = dir_ + "/" + ckpt;
    o.checkpoint_every = 3;
    ApplyStrategySet("gradient_merge=true", &o.strategy);
    ApplyStrategySet("gradient_merge_configs.k_steps=" + std::to_string(k),
                     &o.strategy);
    return o;
  }
  std::string Bytes(const fs::path& p) {
    return DefaultFileSystem()->ReadFile(p.string());
  }
  std::string dir_;
};

TEST_F(GradientMergeTrainerTest, StepsCountBatchesAndResumeMidMergeIsExact) {
  std::ostringstream whole_log;
  const TrainerResult whole = RunTrainer(Options("whole"), whole_log);
  // Steps and samples count batches of --batch-size, as without merging.
  EXPECT_EQ(whole.steps, 8);
  EXPECT_NE(whole_log.str().find("8 steps/epoch"), std::string::npos)
      << whole_log.str();
  EXPECT_NE(whole_log.str().find("gradients merged over 4 steps (an update "
                                 "per 128 samples)"),
            std::string::npos)
      << whole_log.str();
  EXPECT_NE(whole_log.str().find("(epoch 1 at sample 96, step 3)"),
            std::string::npos)
      << whole_log.str();
  ASSERT_TRUE(fs::exists(dir_ + "/whole/ckpt-6")) << whole_log.str();

  std::ostringstream first;
  RunTrainer(Options("cut"), first);
  fs::remove_all(dir_ + "/cut/ckpt-8");
  fs::remove(dir_ + "/cut/LATEST");
  TrainerOptions o = Options("cut");
  o.resume = true;
  std::ostringstream log;
  const TrainerResult resumed = RunTrainer(o, log);
  EXPECT_NE(log.str().find("step 6"), std::string::npos) << log.str();
  EXPECT_EQ(resumed.steps, 8);
  EXPECT_EQ(resumed.test_accuracy, whole.test_accuracy);
  int compared = 0;
  for (const auto& e : fs::directory_iterator(dir_ + "/whole/ckpt-8")) {
    if (e.path().extension() != ".tensor") continue;
    EXPECT_EQ(Bytes(e.path()),
              Bytes(dir_ + "/cut/ckpt-8/" + e.path().filename().string()))
        << e.path();
    ++compared;
  }
  // The parameters, their momenta, the accumulators and the counter.
  EXPECT_GE(compared, 3 * 6 + 1);
}

// Resumed under K = 2 from a checkpoint 2 batches into a merged step of
// K = 4: the next batch closes it (its count, 3, is past 2), averaged over
// its 3 batches; the last batch opens the next one, so the final counter
// is 1 where the K = 4 run ends at 0.
TEST_F(GradientMergeTrainerTest, ResumeUnderAnotherKClosesTheMergedStep) {
  std::ostringstream first;
  RunTrainer(Options("k"), first);
  fs::remove_all(dir_ + "/k/ckpt-8");
  fs::remove(dir_ + "/k/LATEST");
  TrainerOptions o = Options("k", 2);
  o.resume = true;
  std::ostringstream log;
  const TrainerResult resumed = RunTrainer(o, log);
  EXPECT_EQ(resumed.steps, 8);
  // The counter's file: its raw int64.
  std::string counter;
  for (const auto& e : fs::directory_iterator(dir_ + "/k/ckpt-8"))
    if (e.path().filename().string().find("GRAD_MERGE_STEP") !=
        std::string::npos)
      counter = Bytes(e.path());
  ASSERT_EQ(counter.size(), sizeof(int64_t)) << log.str();
  int64_t value = -1;
  std::memcpy(&value, counter.data(), sizeof(value));
  EXPECT_EQ(value, 1);
}

TEST(GradientMergeFlag, RefusesABadKByName) {
  const StrategyFlag* flag = nullptr;
  for (const StrategyFlag& f : StrategyFlags())
    if (std::string(f.flag) == "--gradient-merge") flag = &f;
  ASSERT_NE(flag, nullptr);
  proto::DistributedStrategy s;
  flag->apply("4", &s);
  EXPECT_TRUE(s.gradient_merge());
  EXPECT_EQ(s.gradient_merge_configs().k_steps(), 4);
  for (const char* bad : {"0", "-1", "2.5", "x", ""}) {
    try {
      flag->apply(bad, &s);
      ADD_FAILURE() << "took " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--gradient-merge takes"),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"),
                std::string::npos)
          << e.what();
    }
  }
  ApplyStrategySet("gradient_merge_configs.avg=false", &s);
  EXPECT_FALSE(s.gradient_merge_configs().avg());
}

}  // namespace
}  // namespace fluid
