// The trainer on the text models, with a small fortunes-style directory of
// its own (so it needs no installed package): the language model reports
// its validation loss and perplexity, the classifier its accuracy, and a
// saved text job trains from --program.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>

#include "src/builder/models.h"
#include "src/data/fortunes.h"
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

// A directory whose quotations all fall in the training split (none has
// crc32 % 100 < 10): training runs, and the trainer says up front and at
// the end that there is nothing to evaluate, and why.
TEST_F(TrainerTextTest, NoValidationSplitIsSaidClearly) {
  const std::string dir = dir_ + "/train_only";
  fs::create_directories(dir);
  std::ofstream f(dir + "/solo");
  std::mt19937 rng(7);
  int kept = 0;
  while (kept < 60) {
    std::string q;
    for (int w = 0; w < 8; ++w) {
      for (int c = 0; c < 5; ++c) q.push_back("abcdefgh"[rng() % 8]);
      q.push_back(w == 7 ? '\n' : ' ');
    }
    if (IsValidationQuotation(DecodeUtf8(q.substr(0, q.size() - 1)))) continue;
    f << q << "%\n";
    ++kept;
  }
  f.close();
  for (const char* model : {"textcnn", "transformer"}) {
    TrainerOptions o = Options(model);
    o.data_dir = dir;
    std::ostringstream out;
    const TrainerResult r = RunTrainer(o, out);
    const std::string why = "the validation split of '" + dir +
                            "' is empty: none of its 60 quotations falls in "
                            "it";
    EXPECT_NE(out.str().find("nothing to evaluate: " + why), std::string::npos)
        << model << ": " << out.str();
    EXPECT_NE(out.str().find("samples/s; not evaluated: " + why),
              std::string::npos)
        << model << ": " << out.str();
    EXPECT_GT(r.steps, 0) << model;
    EXPECT_EQ(r.test_accuracy, -1) << model;
    EXPECT_EQ(r.test_loss, -1) << model;
  }
}

// What ranks compare about their data: another directory of the same
// size has another vocabulary (and content); the topics are listed.
TEST_F(TrainerTextTest, DataSettingsTellDirectoriesApart) {
  const proto::TrainingJob job = BuildModel("textcnn");
  Dataset train, test;
  DataDescription mine;
  LoadJobData(job, dir_, false, &train, &test, &mine);
  EXPECT_EQ(mine.topics, "alpha,beta,gamma");
  // <pad>, <unk>, <eos>, the 15 letters and the space.
  EXPECT_EQ(mine.vocabulary.rfind("19 ids, crc32 0x", 0), 0u)
      << mine.vocabulary;
  EXPECT_EQ(mine.empty_test, "");
  const std::vector<RunSetting> settings = DataSettings(mine, train, test);
  std::vector<std::string> names;
  for (const RunSetting& r : settings) names.push_back(r.name);
  EXPECT_EQ(
      names,
      (std::vector<std::string>{
          "--data (vocabulary)", "--data (topics)",
          "--data (crc32 of training words)",
          "--data (crc32 of training length)",
          "--data (crc32 of training label)", "--data (crc32 of test words)",
          "--data (crc32 of test length)", "--data (crc32 of test label)"}));
  // The same quotations with one letter more often than another.
  const std::string other = dir_ + "/other";
  fs::create_directories(other);
  for (const char* topic : {"alpha", "beta", "gamma"}) {
    std::ifstream in(dir_ + "/" + topic);
    std::string text((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    for (char& c : text)
      if (c == 'a') c = 'b';
    std::ofstream(other + "/" + topic) << text;
  }
  Dataset train2, test2;
  DataDescription theirs;
  LoadJobData(job, other, false, &train2, &test2, &theirs);
  EXPECT_NE(theirs.vocabulary, mine.vocabulary);
  EXPECT_EQ(theirs.topics, mine.topics);
  const std::vector<RunSetting> again = DataSettings(mine, train, test);
  ASSERT_EQ(again.size(), settings.size());
  for (size_t i = 0; i < again.size(); ++i)
    EXPECT_EQ(again[i].value, settings[i].value) << again[i].name;
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

// The data set is what the job declares, whatever its feeds are called; a
// job file from before the declaration is recognised by its feed names.
TEST_F(TrainerTextTest, DataSetIsDeclaredNotGuessedFromFeedNames) {
  EXPECT_EQ(BuildModel("transformer").data_set(),
            proto::TrainingJob::CHARACTER_LM);
  EXPECT_EQ(BuildModel("lstm").data_set(), proto::TrainingJob::TOPICS);
  EXPECT_EQ(BuildModel("lenet").data_set(), proto::TrainingJob::IMAGES);

  proto::TrainingJob renamed = BuildModel("transformer");
  renamed.set_feed_names(0, "ids");
  renamed.set_feed_names(1, "targets");
  EXPECT_EQ(JobDataOf(renamed), JobData::kLanguageModel);
  // (the feeds' names are the job's: they need not exist for the choice)

  proto::TrainingJob images = BuildModel("mlp");
  images.set_feed_names(0, "tokens");
  images.set_feed_names(1, "next");
  EXPECT_EQ(JobDataOf(images), JobData::kImages);

  proto::TrainingJob old_file = BuildModel("textcnn");
  old_file.clear_data_set();
  EXPECT_EQ(JobDataOf(old_file), JobData::kTopics);
  old_file = BuildModel("transformer");
  old_file.clear_data_set();
  EXPECT_EQ(JobDataOf(old_file), JobData::kLanguageModel);
}

}  // namespace
}  // namespace fluid
