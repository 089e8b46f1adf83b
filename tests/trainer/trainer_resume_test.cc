// Checkpoints within an epoch (--checkpoint-every) and resuming from the
// sample position they record; ResumedBatchSize's rule for another number
// of ranks. The multi-rank and restart cases are in
// tests/mpi/trainer_restart_test.sh.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <sstream>

#include "src/io/checkpoint.h"
#include "src/trainer/resume.h"
#include "src/trainer/trainer.h"

namespace fluid {
namespace {

namespace fs = std::filesystem;

constexpr const char* kData = "/usr/share/datasets/fashion-mnist";

bool HaveData() {
  struct stat st;
  return ::stat((std::string(kData) + "/train-images-idx3-ubyte.gz").c_str(),
                &st) == 0;
}

class TrainerResumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveData()) GTEST_SKIP() << "Fashion-MNIST not installed at " << kData;
    char tmpl[] = "/tmp/fluid_trainer_resume_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // The mlp on 256 samples, batch 32: 8 steps per epoch, checkpoints in
  // `ckpt` every 3 steps.
  TrainerOptions Options(const std::string& ckpt) {
    TrainerOptions o;
    o.model = "mlp";
    o.train_samples = 256;
    o.test_samples = 200;
    o.batch_size = 32;
    o.log_every = 0;
    o.checkpoint_dir = dir_ + "/" + ckpt;
    o.checkpoint_every = 3;
    return o;
  }
  std::string dir_;
};

std::string Bytes(const fs::path& p) {
  return DefaultFileSystem()->ReadFile(p.string());
}

TEST_F(TrainerResumeTest, MidEpochCheckpointResumesWhereItStood) {
  std::ostringstream whole_log;
  const TrainerResult whole = RunTrainer(Options("whole"), whole_log);
  EXPECT_EQ(whole.steps, 8);
  EXPECT_NE(whole_log.str().find("(epoch 1 at sample 96, step 3)"),
            std::string::npos)
      << whole_log.str();
  // Kept: the end of the epoch (step 8) and the one before (step 6).
  ASSERT_TRUE(fs::exists(dir_ + "/whole/ckpt-6")) << whole_log.str();
  ASSERT_TRUE(fs::exists(dir_ + "/whole/ckpt-8"));

  // The same run, its epoch's end lost: resume from step 6, sample 192.
  std::ostringstream first;
  RunTrainer(Options("cut"), first);
  fs::remove_all(dir_ + "/cut/ckpt-8");
  fs::remove(dir_ + "/cut/LATEST");
  TrainerOptions o = Options("cut");
  o.resume = true;
  std::ostringstream log;
  const TrainerResult resumed = RunTrainer(o, log);
  const std::string out = log.str();
  EXPECT_NE(out.find("at epoch 0, step 6 (" + dir_ + "/cut/ckpt-6)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("resume position: epoch 1 at sample 192 of 256, step 6"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("epoch 1/1  step 8/8"), std::string::npos) << out;
  EXPECT_EQ(resumed.steps, 8);
  // Two steps on the samples the whole run trained last: the same values,
  // to the bit (one process is deterministic).
  EXPECT_EQ(resumed.test_accuracy, whole.test_accuracy);
  int compared = 0;
  for (const auto& e : fs::directory_iterator(dir_ + "/whole/ckpt-8")) {
    if (e.path().extension() != ".tensor") continue;
    EXPECT_EQ(Bytes(e.path()),
              Bytes(dir_ + "/cut/ckpt-8/" + e.path().filename().string()))
        << e.path();
    ++compared;
  }
  EXPECT_GT(compared, 0);
}

TEST_F(TrainerResumeTest, CheckpointEveryNeedsADirectory) {
  TrainerOptions o = Options("x");
  o.checkpoint_dir.clear();
  std::ostringstream log;
  try {
    RunTrainer(o, log);
    FAIL() << "trained without a checkpoint directory";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("--checkpoint-every needs --checkpoint-dir"),
        std::string::npos)
        << e.what();
  }
}

TEST(ResumedBatchSize, KeepsTheGlobalBatchOnAnotherNumberOfRanks) {
  std::ostringstream log;
  ResumePoint fresh;
  EXPECT_EQ(ResumedBatchSize(fresh, 16, 2, log), 16);
  EXPECT_EQ(log.str(), "");
  ResumePoint at;
  at.global_batch = 64;
  at.nranks = 4;
  EXPECT_EQ(ResumedBatchSize(at, 16, 4, log), 16);
  EXPECT_EQ(log.str(), "");
  EXPECT_EQ(ResumedBatchSize(at, 16, 2, log), 32);
  EXPECT_NE(log.str().find("resuming on 2 rank(s), the checkpoint was taken "
                           "on 4: batch 32 per rank keeps its global batch "
                           "of 64 (--batch-size 16 not used)"),
            std::string::npos)
      << log.str();
  try {
    ResumedBatchSize(at, 16, 3, log);
    FAIL() << "64 divided among 3 ranks";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(
                  "global batch of 64 samples per step (4 rank(s)) does not "
                  "divide among 3 ranks"),
              std::string::npos)
        << e.what();
  }
}

TEST(ResumePoint, BeyondTheTrainingSetIsRefused) {
  ResumePoint at;
  at.epoch = 1;
  at.epoch_samples = 640;
  at.global_batch = 64;
  std::ostringstream log;
  EXPECT_THROW(CheckAndLogResumePoint(at, 500, 64, 1, log), Error);
  CheckAndLogResumePoint(at, 1000, 32, 2, log);
  EXPECT_EQ(log.str(),
            "resume position: epoch 2 at sample 640 of 1000, step 0; global "
            "batch 64 (32 per rank x 2 rank(s))\n");
}

TEST(CheckCheckpointFits, EpochsAndPositionWithinTheRun) {
  CheckpointInfo at{12, 3};
  CheckCheckpointFits(at, 3, 256);  // done: nothing left to train
  CheckCheckpointFits(at, 5, 256);
  auto refusal = [](const CheckpointInfo& c, int64_t epochs,
                    int64_t samples) -> std::string {
    try {
      CheckCheckpointFits(c, epochs, samples);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(refusal(at, 2, 256),
            "it has 3 epoch(s) done, more than --epochs 2 (resume with "
            "--epochs 3 or more)");
  at.epoch_samples = 64;
  at.global_batch = 32;
  at.nranks = 2;
  EXPECT_EQ(refusal(at, 3, 256),
            "it stands at sample 64 of epoch 4, beyond --epochs 3 (resume "
            "with --epochs 4 or more)");
  CheckCheckpointFits(at, 4, 256);
  EXPECT_EQ(refusal(at, 4, 48),
            "it stands at sample 64 of epoch 4, beyond the 48 training "
            "samples: was it taken with other --data or --train-samples?");
}

// A version-2 manifest (an older build's, without a checksum) must carry
// the position: one cut just before it would otherwise read as the start of
// the epoch. (This build's version 3 is sealed by its checksum.)
TEST_F(TrainerResumeTest, ManifestWithoutItsPositionIsDamaged) {
  Scope scope;
  Tensor* t = scope.Var("w")->GetMutable<Tensor>();
  t->mutable_data<float>(Shape{2})[0] = 1;
  t->mutable_data<float>(Shape{2})[1] = 2;
  CheckpointInfo info{5, 1};
  info.epoch_samples = 320;
  info.global_batch = 64;
  info.nranks = 4;
  const std::string ckpt = dir_ + "/m";
  SaveCheckpoint(scope, {"w"}, ckpt, info);
  CheckpointVarSpec spec{"w", DataType::kFloat32, Shape{2}};
  Scope loaded;
  CheckpointInfo got = LoadCheckpoint(&loaded, {spec}, ckpt);
  EXPECT_EQ(got.epoch_samples, 320);
  EXPECT_EQ(got.global_batch, 64);
  EXPECT_EQ(got.nranks, 4);
  const std::string manifest = ckpt + "/ckpt-5/manifest.pb";
  proto::CheckpointManifest m;
  ASSERT_TRUE(m.ParseFromString(Bytes(manifest)));
  EXPECT_EQ(m.version(), 4);
  m.DiscardUnknownFields();  // the seal
  m.set_version(2);
  m.clear_position();
  m.clear_layout();
  DefaultFileSystem()->WriteFile(manifest, m.SerializeAsString());
  try {
    LoadCheckpoint(&loaded, {spec}, ckpt);
    FAIL() << "loaded a manifest without its position";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("without the epoch position"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fluid
