// The trainer on the text models, with a small fortunes-style directory of
// its own (so it needs no installed package): the language model reports
// its validation loss and perplexity, the classifier its accuracy, and a
// saved text job trains from --program.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "src/builder/models.h"
#include "src/io/job_io.h"
#include "src/trainer/text_data.h"
#include "src/trainer/trainer.h"

namespace fluid {
namespace {

namespace fs = std::filesystem;

class TrainerTextTest : public ::testing::Test {
 protected:
  // Three topics of 80 quotations, each of words drawn from the topic's
  // own letters, separated by "%" lines.
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("fluid_trainer_text_" + std::to_string(::getpid())))
               .string();
    fs::create_directories(dir_);
    std::mt19937 rng(1);
    const std::pair<const char*, const char*> topics[] = {
        {"alpha", "abcde"}, {"beta", "fghij"}, {"gamma", "klmno"}};
    for (const auto& [topic, letters] : topics) {
      std::ofstream f(dir_ + "/" + topic);
      for (int q = 0; q < 80; ++q) {
        for (int w = 0; w < 8; ++w) {
          for (int c = 0; c < 4; ++c) f << letters[rng() % 5];
          f << (w == 7 ? "\n" : " ");
        }
        f << "%\n";
      }
    }
    std::ofstream(dir_ + "/alpha.dat") << "not a topic";
  }
  void TearDown() override { fs::remove_all(dir_); }

  TrainerOptions Options(const std::string& model) const {
    TrainerOptions o;
    o.model = model;
    o.data_dir = dir_;
    o.batch_size = 8;
    o.log_every = 0;
    o.warmup_steps = 2;
    o.learning_rate = 3e-3f;
    return o;
  }
  std::string dir_;
};

TEST_F(TrainerTextTest, TransformerReportsPerplexity) {
  std::ostringstream out;
  const TrainerResult r = RunTrainer(Options("transformer"), out);
  EXPECT_EQ(r.test_accuracy, -1);
  ASSERT_GT(r.test_loss, 0) << out.str();
  EXPECT_LT(r.test_loss, std::log(256.0)) << out.str();
  EXPECT_NE(out.str().find("validation loss"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("perplexity"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("accuracy"), std::string::npos) << out.str();
}

TEST_F(TrainerTextTest, TextCnnReportsAccuracy) {
  TrainerOptions o = Options("textcnn");
  o.epochs = 3;
  std::ostringstream out;
  const TrainerResult r = RunTrainer(o, out);
  EXPECT_EQ(r.test_loss, -1);
  EXPECT_GT(r.test_accuracy, 0.5) << out.str();  // 3 topics
  EXPECT_NE(out.str().find("test accuracy"), std::string::npos) << out.str();
}

// A saved text job is recognised by its feeds.
TEST_F(TrainerTextTest, SavedTextJobsTrainFromProgram) {
  for (const char* model : {"transformer", "textcnn", "lstm"}) {
    const proto::TrainingJob job = BuildModel(model);
    EXPECT_NE(JobDataOf(job), JobData::kImages) << model;
    const std::string path = dir_ + "/job.pb";
    SaveJob(job, path);
    TrainerOptions o = Options("");
    o.program = path;
    o.train_samples = 16;
    std::ostringstream out;
    RunTrainer(o, out);
    EXPECT_NE(out.str().find("trained 2 steps"), std::string::npos)
        << out.str();
  }
  EXPECT_EQ(JobDataOf(BuildModel("mlp")), JobData::kImages);
}

}  // namespace
}  // namespace fluid
