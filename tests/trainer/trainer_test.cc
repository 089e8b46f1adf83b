// The trainer as a library (RunTrainer) and as a command (exit status and
// the one-line error for each kind of bad input).
#include "src/trainer/trainer.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "src/builder/models.h"
#include "src/framework/device.h"
#include "src/framework/program_desc.h"

#ifndef FLUID_TRAINER_BIN
#error "FLUID_TRAINER_BIN must name the trainer binary"
#endif

namespace fluid {
namespace {

void WriteBigEndian(std::ofstream& f, uint32_t v) {
  unsigned char b[4] = {static_cast<unsigned char>(v >> 24),
                        static_cast<unsigned char>(v >> 16),
                        static_cast<unsigned char>(v >> 8),
                        static_cast<unsigned char>(v)};
  f.write(reinterpret_cast<char*>(b), 4);
}

// A tiny MNIST-shaped data set in `dir` (plain, uncompressed IDX files).
void WriteTinyDataset(const std::string& dir, int train, int test) {
  std::mt19937 rng(1);
  for (auto [prefix, n] : {std::pair<std::string, int>{"train", train},
                           std::pair<std::string, int>{"t10k", test}}) {
    std::ofstream img(dir + "/" + prefix + "-images-idx3-ubyte",
                      std::ios::binary);
    WriteBigEndian(img, 0x803);
    WriteBigEndian(img, n);
    WriteBigEndian(img, 28);
    WriteBigEndian(img, 28);
    std::ofstream lab(dir + "/" + prefix + "-labels-idx1-ubyte",
                      std::ios::binary);
    WriteBigEndian(lab, 0x801);
    WriteBigEndian(lab, n);
    for (int i = 0; i < n; ++i) {
      unsigned char cls = rng() % 10;
      lab.put(static_cast<char>(cls));
      for (int p = 0; p < 784; ++p)
        img.put(static_cast<char>(p / 78 == cls ? 200 : rng() % 40));
    }
  }
}

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fluid_trainer_test_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    WriteTinyDataset(dir_, 256, 64);
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }

  struct Outcome {
    int status;
    std::string out;
    std::string err;
  };
  Outcome RunCli(const std::string& args) {
    std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    std::string cmd = std::string(FLUID_TRAINER_BIN) + " " + args +
                      " --data '" + dir_ + "' >'" + out + "' 2>'" + err + "'";
    int raw = std::system(cmd.c_str());
    Outcome o;
    o.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    o.out = ReadFile(out);
    o.err = ReadFile(err);
    return o;
  }
  std::string SaveMlp(const std::function<void(proto::TrainingJob*)>& edit,
                      const std::string& name) {
    proto::TrainingJob job = BuildModel("mlp");
    edit(&job);
    std::string path = dir_ + "/" + name;
    SaveJob(job, path);
    return path;
  }
  // The command failed with exactly one line on stderr containing `want`.
  void ExpectOneLineError(const Outcome& o, const std::string& want) {
    EXPECT_EQ(o.status, 1) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
    EXPECT_EQ(o.err.rfind("trainer: error: ", 0), 0u) << o.err;
    EXPECT_NE(o.err.find(want), std::string::npos)
        << "wanted '" << want << "' in: " << o.err;
  }

  std::string dir_;
};

TEST_F(TrainerTest, SavedModelTrainsFromTheCommandLine) {
  std::string path = dir_ + "/model.pb";
  Outcome saved = RunCli("--model mlp --save '" + path + "'");
  ASSERT_EQ(saved.status, 0) << saved.err;
  Outcome run = RunCli("--program '" + path + "' --batch-size 32");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("epoch 1/1"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("samples/s"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("test accuracy"), std::string::npos) << run.out;
}

TEST_F(TrainerTest, TruncatedProgram) {
  std::string path = SaveMlp([](proto::TrainingJob*) {}, "t.pb");
  std::string bytes = ReadFile(path);
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      << bytes.substr(0, bytes.size() / 3);
  ExpectOneLineError(RunCli("--program '" + path + "'"),
                     "truncated or corrupt");
}

TEST_F(TrainerTest, MissingProgramFile) {
  ExpectOneLineError(RunCli("--program '" + dir_ + "/nope.pb'"), "nope.pb");
}

TEST_F(TrainerTest, NewerProgramVersion) {
  std::string path = SaveMlp(
      [](proto::TrainingJob* j) { j->mutable_main()->set_version(99); },
      "v.pb");
  ExpectOneLineError(RunCli("--program '" + path + "'"),
                     "newer than this build");
}

TEST_F(TrainerTest, UnknownOp) {
  std::string path = SaveMlp(
      [](proto::TrainingJob* j) {
        j->mutable_main()->mutable_blocks(0)->mutable_ops(1)->set_type(
            "bogus_op");
      },
      "u.pb");
  ExpectOneLineError(RunCli("--program '" + path + "'"),
                     "unknown op type 'bogus_op'");
}

TEST_F(TrainerTest, MissingFeed) {
  std::string path = SaveMlp(
      [](proto::TrainingJob* j) {
        auto* block = j->mutable_main()->mutable_blocks(0);
        AddVarDesc(block, "extra", DataType::kFloat32, Shape{-1, 1, 28, 28});
        SetOpInput(block->mutable_ops(0), "X", {"extra"});
      },
      "m.pb");
  ExpectOneLineError(RunCli("--program '" + path + "'"),
                     "missing feed 'extra'");
}

TEST_F(TrainerTest, FeedOfWrongShape) {
  std::string path = SaveMlp(
      [](proto::TrainingJob* j) {
        SetVarShape(FindMutableVarDesc(j->mutable_main()->mutable_blocks(0),
                                       "image"),
                    Shape{-1, 784});
      },
      "s.pb");
  ExpectOneLineError(RunCli("--program '" + path + "'"), "feed 'image'");
}

TEST_F(TrainerTest, FeedOfWrongDtype) {
  std::string path = SaveMlp(
      [](proto::TrainingJob* j) {
        FindMutableVarDesc(j->mutable_main()->mutable_blocks(0), "label")
            ->set_dtype(proto::INT32);
      },
      "d.pb");
  ExpectOneLineError(RunCli("--program '" + path + "'"), "feed 'label'");
}

// Sets a VarDesc's shape as a hand-edited model.pb would (SetVarShape
// refuses shapes too large to allocate).
void SetRawShape(proto::TrainingJob* job, const std::string& var,
                 const std::vector<int64_t>& dims) {
  for (proto::ProgramDesc* p : {job->mutable_startup(), job->mutable_main()}) {
    proto::VarDesc* v = FindMutableVarDesc(p->mutable_blocks(0), var);
    if (v == nullptr) continue;
    v->clear_shape();
    for (int64_t d : dims) v->add_shape(d);
  }
}

TEST_F(TrainerTest, VarShapeTooLargeIsOneLineError) {
  // 2^32 * 2^30 float32s are 2^64 bytes: 0 once wrapped.
  std::string path = SaveMlp(
      [](proto::TrainingJob* j) {
        SetRawShape(j, "fc_0.w_0", {int64_t{1} << 32, int64_t{1} << 30});
      },
      "big_var.pb");
  ExpectOneLineError(RunCli("--program '" + path + "'"),
                     "variable 'fc_0.w_0' of shape [4294967296, 1073741824] "
                     "(float32) is too large");
}

TEST_F(TrainerTest, InitShapeTooLargeIsOneLineError) {
  // The initialiser's shape attr alone: the var is sized at run time.
  std::string path = SaveMlp(
      [](proto::TrainingJob* j) {
        for (auto& op :
             *j->mutable_startup()->mutable_blocks(0)->mutable_ops()) {
          if (OpOutput(op, "Out") != std::vector<std::string>{"fc_0.w_0"})
            continue;
          SetOpAttr(&op, "shape",
                    std::vector<int64_t>{int64_t{1} << 31, int64_t{1} << 31});
        }
      },
      "big_init.pb");
  ExpectOneLineError(RunCli("--program '" + path + "'"),
                     "variable 'fc_0.w_0' of shape [2147483648, 2147483648] "
                     "(float32) is too large");
}

TEST_F(TrainerTest, HostileVarNamesGiveOneShortPrintableLine) {
  const std::string names[] = {std::string("image\x1b[2J\r\nx\0y", 14),
                               std::string(1 << 20, 'v')};
  for (const std::string& name : names) {
    std::string path = SaveMlp(
        [&](proto::TrainingJob* j) {
          SetOpInput(j->mutable_main()->mutable_blocks(0)->mutable_ops(0), "X",
                     {name});
        },
        "hostile.pb");
    Outcome o = RunCli("--program '" + path + "'");
    ExpectOneLineError(o, "which the program does not declare");
    EXPECT_LT(o.err.size(), 1000u) << o.err.substr(0, 300);
    for (char c : o.err.substr(0, o.err.size() - 1))
      ASSERT_TRUE(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f)
          << o.err.substr(0, 300);
  }
}

TEST_F(TrainerTest, MissingDataDirectory) {
  TrainerOptions opts;
  opts.model = "mlp";
  opts.data_dir = "/nonexistent/dir";
  std::ostringstream sink;
  try {
    RunTrainer(opts, sink);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(TrainerTest, BadFlagsExitNonZero) {
  EXPECT_NE(RunCli("--model mlp --epochs 0").status, 0);
  EXPECT_NE(RunCli("--model resnet").status, 0);
  EXPECT_NE(RunCli("").status, 0);
}

TEST_F(TrainerTest, BadPlaceIsOneLineError) {
  ExpectOneLineError(RunCli("--model mlp --place tpu"),
                     "--place must be cpu, cuda or cuda:N");
}

// Without a GPU, --place cuda says why it cannot run; with one, the same
// run trains on it.
TEST_F(TrainerTest, PlaceCuda) {
  Outcome o = RunCli("--model mlp --batch-size 32 --place cuda");
  if (!BuiltWithCuda()) {
    ExpectOneLineError(o, "this build has no CUDA");
  } else if (CudaDeviceCount() == 0) {
    ExpectOneLineError(o, "--place cuda: no CUDA device is visible");
  } else {
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.out.find("cuda:0"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("test accuracy"), std::string::npos) << o.out;
  }
  if (BuiltWithCuda() && CudaDeviceCount() > 0) {
    ExpectOneLineError(RunCli("--model mlp --place cuda:" +
                              std::to_string(CudaDeviceCount())),
                       "visible");
  }
}

TEST_F(TrainerTest, CheckpointAndResume) {
  TrainerOptions o;
  o.model = "mlp";
  o.data_dir = dir_;
  o.batch_size = 64;
  o.checkpoint_dir = dir_ + "/ckpt";
  std::ostringstream log1;
  TrainerResult first = RunTrainer(o, log1);
  EXPECT_EQ(first.steps, 4);
  o.epochs = 2;
  o.resume = true;
  std::ostringstream log2;
  TrainerResult second = RunTrainer(o, log2);
  EXPECT_NE(log2.str().find("resumed from"), std::string::npos) << log2.str();
  EXPECT_EQ(second.steps, 8) << "resumes at step 4 and runs epoch 2 only";
  EXPECT_EQ(log2.str().find("epoch 1/2"), std::string::npos) << log2.str();
}

}  // namespace
}  // namespace fluid
