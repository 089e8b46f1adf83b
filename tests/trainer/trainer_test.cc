// The trainer as a library (RunTrainer) and as a command (exit status and
// the one-line error for each kind of bad input).
#include "src/trainer/trainer.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>

#include "src/builder/models.h"
#include "src/framework/device.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "src/io/checkpoint.h"
#include "src/io/inference_model.h"
#include "src/io/job_io.h"

#ifndef FLUID_TRAINER_BIN
#error "FLUID_TRAINER_BIN must name the trainer binary"
#endif

namespace fluid {
namespace {

std::string ReadFile(const std::string& path) {
  return DefaultFileSystem()->ReadFile(path);
}

void WriteBigEndian(std::ofstream& f, uint32_t v) {
  unsigned char b[4] = {
      static_cast<unsigned char>(v >> 24), static_cast<unsigned char>(v >> 16),
      static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
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

// The built-in convolutional nets with batch_norm (and vgg's dropout) train
// an epoch and report the test accuracy.
TEST_F(TrainerTest, ResnetAndVggTrainFromTheCommandLine) {
  for (std::string model : {"resnet", "vgg"}) {
    Outcome run = RunCli("--model " + model + " --batch-size 32");
    ASSERT_EQ(run.status, 0) << model << ": " << run.err;
    EXPECT_NE(run.out.find("epoch 1/1"), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("test accuracy"), std::string::npos) << run.out;
  }
}

// --amp: the opening line says the type and what computes it; bf16 and fp16
// train an epoch and report; --amp-lists moves ops between the lists and
// names a bad line or op.
TEST_F(TrainerTest, MixedPrecisionFromTheCommandLine) {
  for (std::string amp : {"bf16", "fp16"}) {
    Outcome run = RunCli("--model lenet --batch-size 32 --amp " + amp);
    ASSERT_EQ(run.status, 0) << amp << ": " << run.err;
    EXPECT_NE(run.out.find("mixed precision " + amp), std::string::npos)
        << run.out;
    EXPECT_NE(run.out.find("test accuracy"), std::string::npos) << run.out;
  }
  const std::string lists = dir_ + "/lists.txt";
  std::ofstream(lists) << "# pools in float32\nblack: pool2d\nwhite: relu\n";
  Outcome run = RunCli("--model lenet --amp bf16 --amp-lists '" + lists +
                       "' --print-strategy");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("custom_black_list: \"pool2d\""), std::string::npos)
      << run.out;
  std::ofstream(lists) << "grey: relu\n";
  Outcome grey = RunCli("--model lenet --amp bf16 --amp-lists '" + lists + "'");
  EXPECT_EQ(grey.status, 2);  // read with the flags: a usage error
  EXPECT_NE(grey.err.find("line 1: expected \"white: op ...\" or \"black: "
                          "op ...\", got 'grey: relu'"),
            std::string::npos)
      << grey.err;
  std::ofstream(lists) << "white: conv9d\n";
  ExpectOneLineError(
      RunCli("--model lenet --amp bf16 --amp-lists '" + lists + "'"),
      "names op 'conv9d', which does not exist");
  // A bad flag value is a usage error (status 2), as for every flag.
  Outcome bad = RunCli("--model lenet --amp fp8");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--amp takes bf16, fp16 or none, got 'fp8'"),
            std::string::npos)
      << bad.err;
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

// Looked at before it is read: a device would be read until memory runs
// out, a fifo forever.
TEST_F(TrainerTest, ProgramThatIsNotARegularFile) {
  ExpectOneLineError(RunCli("--program /dev/zero"), "not a regular file");
  ExpectOneLineError(RunCli("--program '" + dir_ + "'"), "not a regular file");
}

TEST_F(TrainerTest, NewerProgramVersion) {
  std::string path =
      SaveMlp([](proto::TrainingJob* j) { j->mutable_main()->set_version(99); },
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

// Edits op `type`'s `nth` occurrence in the main program.
void EditOp(proto::TrainingJob* job, const std::string& type, int nth,
            const std::function<void(proto::OpDesc*)>& edit) {
  for (auto& op : *job->mutable_main()->mutable_blocks(0)->mutable_ops()) {
    if (op.type() == type && nth-- == 0) {
      edit(&op);
      return;
    }
  }
  FAIL() << "no " << type;
}

// Found by fuzzing saved jobs: these ended by SIGSEGV, SIGBUS or a malloc
// abort. Each is now one line naming the attribute.
TEST_F(TrainerTest, OutOfRangeAttributesAreOneLineErrors) {
  struct Case {
    std::string op;
    std::string attr;
    Attribute value;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"mul_grad", "x_num_col_dims", int32_t{0},
       "attribute 'x_num_col_dims' of op 'mul_grad': 0 is out of its range"},
      {"mul_grad", "y_num_col_dims", int32_t{0},
       "attribute 'y_num_col_dims' of op 'mul_grad': 0 is out of its range"},
      {"elementwise_add", "axis", std::numeric_limits<int32_t>::max(),
       "attribute 'axis' of op 'elementwise_add': 2147483647 is out of its "
       "range"},
      {"elementwise_add_grad", "axis", std::numeric_limits<int32_t>::max(),
       "of op 'elementwise_add_grad': 2147483647 is out of its range"},
  };
  for (const Case& c : cases) {
    std::string path = SaveMlp(
        [&c](proto::TrainingJob* j) {
          EditOp(j, c.op, 0,
                 [&c](proto::OpDesc* op) { SetOpAttr(op, c.attr, c.value); });
        },
        "a.pb");
    ExpectOneLineError(RunCli("--program '" + path + "'"), c.want);
  }
  // An attribute whose value was lost (the field unset) reads as 0.
  std::string path = SaveMlp(
      [](proto::TrainingJob* j) {
        EditOp(j, "mul_grad", 0, [](proto::OpDesc* op) {
          for (auto& a : *op->mutable_attrs())
            if (a.name() == "x_num_col_dims") a.clear_i();
        });
      },
      "l.pb");
  ExpectOneLineError(RunCli("--program '" + path + "'"),
                     "'x_num_col_dims' of op 'mul_grad': 0 is out of its");
}

// A gradient op made for other attributes than its forward op's trained
// to a wrong model with exit status 0; now the job is refused.
TEST_F(TrainerTest, GradOpAttributesMustMatchTheForwardOp) {
  for (int32_t dims : {2, 3}) {
    std::string path = SaveMlp(
        [dims](proto::TrainingJob* j) {
          EditOp(j, "mul_grad", 0, [dims](proto::OpDesc* op) {
            SetOpAttr(op, "x_num_col_dims", dims);
          });
        },
        "g.pb");
    ExpectOneLineError(
        RunCli("--program '" + path + "'"),
        "'mul_grad' has x_num_col_dims = " + std::to_string(dims) +
            " but the op it differentiates");
  }
}

TEST_F(TrainerTest, JobWithoutOptimizerIsRefused) {
  std::string path = SaveMlp(
      [](proto::TrainingJob* j) {
        auto* ops = j->mutable_main()->mutable_blocks(0)->mutable_ops();
        for (int i = ops->size() - 1; i >= 0; --i)
          if (OpRoleOf(ops->Get(i)) & static_cast<int>(OpRole::kOptimize))
            ops->DeleteSubrange(i, 1);
      },
      "n.pb");
  ExpectOneLineError(RunCli("--program '" + path + "'"), "has no optimizer op");
}

TEST_F(TrainerTest, EmptyOrUnknownMetricNamesAreRefused) {
  std::string path = SaveMlp(
      [](proto::TrainingJob* j) { j->set_metric_names(0, ""); }, "e.pb");
  ExpectOneLineError(RunCli("--program '" + path + "'"),
                     "metric 0 has an empty name");
  path = SaveMlp([](proto::TrainingJob* j) { j->set_metric_names(0, "nope"); },
                 "k.pb");
  ExpectOneLineError(RunCli("--program '" + path + "'"),
                     "metric 'nope' is not a variable");
}

// Adam at the model's momentum learning rate (0.1) diverged to a loss of
// hundreds with exit status 0. Without --lr, adam takes Fluid's 0.001; a
// run whose loss still grows fails.
TEST_F(TrainerTest, AdamWithoutLrTakesFluidsDefault) {
  Outcome run = RunCli("--model mlp --optimizer adam --batch-size 8");
  ASSERT_EQ(run.status, 0) << run.err;
  Outcome sgd = RunCli("--model mlp --optimizer sgd");
  ExpectOneLineError(sgd, "--optimizer sgd needs --lr");
}

TEST_F(TrainerTest, ADivergedRunExitsNonZero) {
  Outcome run =
      RunCli("--model mlp --optimizer adam --lr 5 --batch-size 8 --seed 3");
  EXPECT_EQ(run.status, 1) << run.out << run.err;
  EXPECT_NE(run.err.find("training diverged on rank 0"), std::string::npos)
      << run.err;
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
        SetVarShape(
            FindMutableVarDesc(j->mutable_main()->mutable_blocks(0), "image"),
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
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir"), std::string::npos)
        << e.what();
  }
}

TEST_F(TrainerTest, BadFlagsExitNonZero) {
  EXPECT_NE(RunCli("--model mlp --epochs 0").status, 0);
  EXPECT_NE(RunCli("--model alexnet").status, 0);
  EXPECT_NE(RunCli("").status, 0);
}

// The strategy: printed as text proto (every field, the passes it runs),
// carried by a saved job, read from a file, and each flag overriding one
// field; a bad field is one line naming it.
TEST_F(TrainerTest, PrintStrategySaveAndReadIt) {
  Outcome plain = RunCli("--model mlp --print-strategy");
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_NE(plain.out.find("# passes for more than one rank: bucketing, "
                           "allreduce, startup_broadcast\n"),
            std::string::npos)
      << plain.out;
  EXPECT_NE(plain.out.find("bucket_bytes: 4194304"), std::string::npos);
  EXPECT_NE(plain.out.find("sharding: false"), std::string::npos);

  // --shard-optimizer alone: the default stage (2).
  const std::string path = dir_ + "/sharded.pb";
  ASSERT_EQ(RunCli("--model mlp --shard-optimizer --bucket-mb 0.5 --save '" +
                   path + "'")
                .status,
            0);
  Outcome carried = RunCli("--program '" + path + "' --print-strategy");
  ASSERT_EQ(carried.status, 0) << carried.err;
  EXPECT_NE(carried.out.find("shard_updates"), std::string::npos);
  EXPECT_NE(carried.out.find("bucket_bytes: 524288"), std::string::npos);
  EXPECT_NE(carried.out.find("sharding: true"), std::string::npos);
  EXPECT_NE(carried.out.find("stage: 2"), std::string::npos);

  // A file, then the flags over it, field by field.
  const std::string file = dir_ + "/strategy.txt";
  std::ofstream(file) << "sharding: true\nsharding_configs { stage: 1 }\n"
                         "sync_batch_norm: true\n";
  Outcome mixed = RunCli("--program '" + path + "' --strategy '" + file +
                         "' --strategy-set sharding_configs.overlap_gather="
                         "true --shard-optimizer 0 --print-strategy");
  EXPECT_EQ(mixed.status, 1);  // overlap_gather without sharding
  EXPECT_NE(mixed.err.find("sharding_configs.overlap_gather needs sharding"),
            std::string::npos)
      << mixed.err;
  mixed = RunCli("--program '" + path + "' --strategy '" + file +
                 "' --print-strategy");
  ASSERT_EQ(mixed.status, 0) << mixed.err;
  EXPECT_NE(mixed.out.find("stage: 1"), std::string::npos) << mixed.out;
  EXPECT_NE(mixed.out.find("sync_batch_norm: true"), std::string::npos);
  EXPECT_NE(mixed.out.find("bucket_bytes: 524288"), std::string::npos);

  std::ofstream(file) << "bucket_size: 3\n";
  ExpectOneLineError(
      RunCli("--model mlp --strategy '" + file + "' --print-strategy"),
      "strategy.txt: not a DistributedStrategy: line 1");
  ExpectOneLineError(RunCli("--model mlp --strategy-set "
                            "sharding_configs.stage=7 --print-strategy"),
                     "DistributedStrategy.sharding_configs.stage must be in "
                     "[1, 3], got 7");
  EXPECT_EQ(RunCli("--model mlp --strategy-set nope=1").status, 2);
}

TEST_F(TrainerTest, NegativeCheckConsistencyIsRefused) {
  ExpectOneLineError(RunCli("--model mlp --check-consistency -1"),
                     "--check-consistency must be >= 0 (0: never), got -1");
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
    ExpectOneLineError(
        RunCli("--model mlp --place cuda:" + std::to_string(CudaDeviceCount())),
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

// ------------------------------------------------ resume and checkpoints

class TrainerCheckpointTest : public TrainerTest {
 protected:
  void SetUp() override {
    TrainerTest::SetUp();
    ckpt_ = dir_ + "/ckpt";
  }
  TrainerOptions Options(int epochs) {
    TrainerOptions o;
    o.model = "mlp";
    o.data_dir = dir_;
    o.batch_size = 64;  // 4 steps per epoch
    o.epochs = epochs;
    o.checkpoint_dir = ckpt_;
    return o;
  }
  // Flips one byte in the first non-empty tensor file of `ckpt`.
  void Corrupt(const std::string& ckpt) {
    for (const auto& e : std::filesystem::directory_iterator(ckpt)) {
      if (e.path().extension() != ".tensor" || e.file_size() == 0) continue;
      std::string bytes = ReadFile(e.path().string());
      bytes[bytes.size() / 2] ^= 0x40;
      std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << bytes;
      return;
    }
    FAIL() << "no tensor file in " << ckpt;
  }
  std::string Cli(const std::string& extra) {
    return "--model mlp --batch-size 64 --checkpoint-dir '" + ckpt_ + "' " +
           extra;
  }

  std::string ckpt_;
};

TEST_F(TrainerCheckpointTest, CorruptNewestCheckpointFallsBackToThePrevious) {
  std::ostringstream log1;
  RunTrainer(Options(2), log1);  // ckpt-4 and ckpt-8
  Corrupt(ckpt_ + "/ckpt-8");
  TrainerOptions o = Options(3);
  o.resume = true;
  std::ostringstream log2;
  TrainerResult r = RunTrainer(o, log2);
  const std::string out = log2.str();
  EXPECT_NE(out.find("skipped a checkpoint: checkpoint '" + ckpt_ +
                     "/ckpt-8' is damaged"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("is corrupt: crc32"), std::string::npos) << out;
  EXPECT_NE(out.find("resumed from " + ckpt_ + " at epoch 1, step 4 (" + ckpt_ +
                     "/ckpt-4)"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("epoch 1/3"), std::string::npos) << out;
  EXPECT_EQ(r.steps, 12);
}

// One bit flipped in the newest manifest's epoch (2 -> 6): its checksum
// catches it and the run resumes from the checkpoint before, instead of
// taking epoch 6 of 3 as done and never training epoch 3.
TEST_F(TrainerCheckpointTest, AFlippedManifestBitFallsBackToThePrevious) {
  std::ostringstream log1;
  RunTrainer(Options(2), log1);  // ckpt-4 and ckpt-8
  const std::string path = ckpt_ + "/ckpt-8/manifest.pb";
  std::string bytes = ReadFile(path);
  proto::CheckpointManifest m;
  ASSERT_TRUE(m.ParseFromString(bytes));
  m.DiscardUnknownFields();
  ASSERT_EQ(m.epoch(), 2);
  ASSERT_TRUE(m.has_position());
  // The epoch (field 4) serializes just before the position (field 5) and
  // the layout (field 7), each a tag, a one-byte length and the message.
  ASSERT_TRUE(m.has_layout());
  const size_t at = m.ByteSizeLong() - (2 + m.position().ByteSizeLong()) -
                    (2 + m.layout().ByteSizeLong()) - 1;
  ASSERT_EQ(bytes[at], 2);
  bytes[at] ^= 4;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  TrainerOptions o = Options(3);
  o.resume = true;
  std::ostringstream log2;
  const TrainerResult r = RunTrainer(o, log2);
  const std::string out = log2.str();
  EXPECT_NE(out.find("skipped a checkpoint: checkpoint '" + ckpt_ +
                     "/ckpt-8' has a damaged manifest '" + path +
                     "': its checksum does not match"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("resumed from " + ckpt_ + " at epoch 1, step 4 (" + ckpt_ +
                     "/ckpt-4)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("epoch 2/3"), std::string::npos) << out;
  EXPECT_NE(out.find("epoch 3/3"), std::string::npos) << out;
  EXPECT_EQ(r.steps, 12);
}

// An older build's manifest (no checksum) with more epochs done than the
// run has: a flipped bit, maybe, so the run falls back to the one before.
TEST_F(TrainerCheckpointTest, AnUnsealedManifestBeyondTheEpochsFallsBack) {
  std::ostringstream log1;
  RunTrainer(Options(2), log1);  // ckpt-4 and ckpt-8
  proto::CheckpointManifest m;
  ASSERT_TRUE(m.ParseFromString(ReadFile(ckpt_ + "/ckpt-8/manifest.pb")));
  m.DiscardUnknownFields();
  m.set_version(2);
  m.clear_layout();  // which version 2 never had
  m.set_epoch(6);
  std::ofstream(ckpt_ + "/ckpt-8/manifest.pb",
                std::ios::binary | std::ios::trunc)
      << m.SerializeAsString();
  TrainerOptions o = Options(3);
  o.resume = true;
  std::ostringstream log2;
  const TrainerResult r = RunTrainer(o, log2);
  const std::string out = log2.str();
  EXPECT_NE(out.find("skipped a checkpoint: checkpoint '" + ckpt_ +
                     "/ckpt-8' does not fit this run: it has 6 epoch(s) done, "
                     "more than --epochs 3"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("has no checksum"), std::string::npos) << out;
  EXPECT_NE(out.find("(" + ckpt_ + "/ckpt-4)"), std::string::npos) << out;
  EXPECT_EQ(r.steps, 12);
}

// A sealed checkpoint with more epochs done than --epochs: the run's
// settings are wrong, not the checkpoint, which stays as it is.
TEST_F(TrainerCheckpointTest, FewerEpochsThanTheCheckpointHasDoneIsRefused) {
  std::ostringstream log1;
  RunTrainer(Options(2), log1);  // ckpt-4 and ckpt-8
  const Outcome o = RunCli(Cli("--resume --epochs 1"));
  ExpectOneLineError(o, "checkpoint '" + ckpt_ +
                            "/ckpt-8' does not fit this run: it has 2 "
                            "epoch(s) done, more than --epochs 1 (resume "
                            "with --epochs 2 or more)");
  EXPECT_EQ(o.out.find("test accuracy"), std::string::npos) << o.out;
  EXPECT_EQ(ReadFile(ckpt_ + "/LATEST"), "ckpt-8");
  EXPECT_TRUE(std::filesystem::exists(ckpt_ + "/ckpt-4"));
}

TEST_F(TrainerCheckpointTest, ResumeWithoutLatestFindsTheNewestByScanning) {
  std::ostringstream log1;
  RunTrainer(Options(2), log1);
  std::filesystem::remove(ckpt_ + "/LATEST");
  TrainerOptions o = Options(3);
  o.resume = true;
  std::ostringstream log2;
  TrainerResult r = RunTrainer(o, log2);
  const std::string out = log2.str();
  EXPECT_NE(out.find("LATEST' does not exist"), std::string::npos) << out;
  EXPECT_NE(out.find("resumed from " + ckpt_ + " at epoch 2, step 8"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("epoch 1/3"), std::string::npos) << out;
  EXPECT_EQ(out.find("epoch 2/3"), std::string::npos) << out;
  EXPECT_EQ(r.steps, 12);
  // LATEST is back, and only the two newest checkpoints are left.
  EXPECT_EQ(ReadFile(ckpt_ + "/LATEST"), "ckpt-12");
  EXPECT_FALSE(std::filesystem::exists(ckpt_ + "/ckpt-4"));
}

TEST_F(TrainerCheckpointTest, ResumeInAMissingOrEmptyDirectoryStartsOver) {
  Outcome o = RunCli(Cli("--resume"));
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("no checkpoint in " + ckpt_ + ": starting from scratch"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("epoch 1/1"), std::string::npos) << o.out;
}

TEST_F(TrainerCheckpointTest, NothingUsableInANonEmptyDirectoryIsRefused) {
  std::ostringstream log1;
  RunTrainer(Options(1), log1);  // ckpt-4 only
  Corrupt(ckpt_ + "/ckpt-4");
  Outcome refused = RunCli(Cli("--resume --epochs 2"));
  ExpectOneLineError(
      refused, "--resume: no usable checkpoint in non-empty '" + ckpt_ + "'");
  EXPECT_NE(refused.err.find("--start-fresh"), std::string::npos);
  EXPECT_EQ(refused.out.find("epoch 1/2"), std::string::npos) << refused.out;
  EXPECT_TRUE(std::filesystem::exists(ckpt_ + "/ckpt-4"));

  Outcome fresh = RunCli(Cli("--resume --start-fresh --epochs 2"));
  ASSERT_EQ(fresh.status, 0) << fresh.err;
  EXPECT_NE(fresh.out.find("starting fresh in " + ckpt_), std::string::npos)
      << fresh.out;
  EXPECT_NE(fresh.out.find("removed 1 unusable checkpoint(s)"),
            std::string::npos)
      << fresh.out;
  EXPECT_NE(fresh.out.find("epoch 1/2"), std::string::npos) << fresh.out;
  EXPECT_EQ(ReadFile(ckpt_ + "/LATEST"), "ckpt-8");
}

TEST_F(TrainerCheckpointTest, StrayFilesAloneAreNotACheckpoint) {
  std::filesystem::create_directories(ckpt_);
  std::ofstream(ckpt_ + "/notes.txt") << "mine";
  ExpectOneLineError(RunCli(Cli("--resume")), "no usable checkpoint");
  Outcome fresh = RunCli(Cli("--resume --start-fresh"));
  ASSERT_EQ(fresh.status, 0) << fresh.err;
  EXPECT_TRUE(std::filesystem::exists(ckpt_ + "/notes.txt"));
  ExpectOneLineError(RunCli("--model mlp --start-fresh"),
                     "--start-fresh needs --resume");
}

// -------------------------------------------- failures found before step 1

TEST_F(TrainerCheckpointTest, UnwritableCheckpointDirFailsBeforeTraining) {
  std::ofstream(dir_ + "/file") << "x";
  Outcome o = RunCli("--model mlp --checkpoint-dir '" + dir_ + "/file/ckpt'");
  ExpectOneLineError(
      o, "checkpoint directory '" + dir_ + "/file/ckpt' is not writable");
  EXPECT_NE(o.err.find("Not a directory"), std::string::npos) << o.err;
  EXPECT_EQ(o.out.find("epoch 1/1"), std::string::npos) << o.out;
}

// Replaces the test split with `n` images of rows x cols and these labels.
void WriteTestSplit(const std::string& dir, int rows, int cols,
                    const std::vector<int>& labels) {
  std::ofstream img(dir + "/t10k-images-idx3-ubyte",
                    std::ios::binary | std::ios::trunc);
  WriteBigEndian(img, 0x803);
  WriteBigEndian(img, static_cast<uint32_t>(labels.size()));
  WriteBigEndian(img, rows);
  WriteBigEndian(img, cols);
  for (size_t i = 0; i < labels.size() * rows * cols; ++i) img.put(7);
  std::ofstream lab(dir + "/t10k-labels-idx1-ubyte",
                    std::ios::binary | std::ios::trunc);
  WriteBigEndian(lab, 0x801);
  WriteBigEndian(lab, static_cast<uint32_t>(labels.size()));
  for (int l : labels) lab.put(static_cast<char>(l));
}

TEST_F(TrainerTest, TestImagesOfAnotherSizeFailBeforeTraining) {
  WriteTestSplit(dir_, 32, 32, std::vector<int>(20, 1));
  Outcome o = RunCli("--model mlp");
  ExpectOneLineError(o, "does not fit the evaluation program");
  EXPECT_NE(o.err.find("feed 'image'"), std::string::npos) << o.err;
  EXPECT_EQ(o.out.find("epoch 1/1"), std::string::npos) << o.out;
}

TEST_F(TrainerTest, TestLabelsOutOfRangeFailBeforeTraining) {
  std::vector<int> labels(40, 3);
  labels[33] = 200;
  WriteTestSplit(dir_, 28, 28, labels);
  Outcome o = RunCli("--model mlp");
  ExpectOneLineError(o,
                     "label 200 of sample 33 is outside the model's 10 "
                     "classes [0, 10)");
  EXPECT_EQ(o.out.find("epoch 1/1"), std::string::npos) << o.out;
}

TEST_F(TrainerTest, MissingTestFileFailsBeforeTraining) {
  std::filesystem::remove(dir_ + "/t10k-labels-idx1-ubyte");
  Outcome o = RunCli("--model mlp");
  ExpectOneLineError(o, "t10k-labels-idx1-ubyte");
  EXPECT_EQ(o.out.find("epoch 1/1"), std::string::npos) << o.out;
}

// ------------------------------------------------------------ --predict

// The scores the job's accuracy op ranks.
std::string ScoresVar(const proto::TrainingJob& job) {
  for (const auto& op : job.main().blocks(0).ops())
    if (op.type() == "accuracy") return OpInput(op, "Out")[0];
  return "";
}

// A saved inference model of a trained mlp scores the test split as the
// trainer's own evaluation did.
TEST_F(TrainerTest, PredictReportsTheAccuracyTrainingReported) {
  const std::string job_path = SaveMlp([](proto::TrainingJob*) {}, "m.pb");
  TrainerOptions o;
  o.data_dir = dir_;
  o.batch_size = 32;
  o.program = job_path;
  o.checkpoint_dir = dir_ + "/ckpt";
  std::ostringstream log;
  const TrainerResult trained = RunTrainer(o, log);
  ASSERT_GE(trained.test_accuracy, 0);
  const proto::TrainingJob job = LoadJob(job_path);
  Scope scope;
  LoadCheckpoint(&scope, job.main(), o.checkpoint_dir);
  const std::string model = dir_ + "/infer";
  SaveInferenceModel(scope, job.main(), {"image"}, {ScoresVar(job)}, model);

  Outcome run = RunCli("--predict '" + model + "'");
  ASSERT_EQ(run.status, 0) << run.err;
  char want[64];
  std::snprintf(want, sizeof(want), "test accuracy %.4f (64 samples)",
                trained.test_accuracy);
  EXPECT_NE(run.out.find(want), std::string::npos) << run.out;

  TrainerOptions p;
  p.data_dir = dir_;
  p.predict = model;
  p.test_samples = 10;
  std::ostringstream plog;
  EXPECT_GE(RunTrainer(p, plog).test_accuracy, 0);
  EXPECT_NE(plog.str().find("(10 samples)"), std::string::npos) << plog.str();
}

TEST_F(TrainerTest, PredictErrorsAreOneLine) {
  ExpectOneLineError(RunCli("--predict '" + dir_ + "/none'"), "__model__");
  const proto::TrainingJob job = BuildModel("mlp");
  Scope scope;
  Executor().RunOnce(job.startup(), &scope);
  const std::string model = dir_ + "/loss_model";
  SaveInferenceModel(scope, job.main(), {"image", "label"}, {job.loss_name()},
                     model);
  ExpectOneLineError(RunCli("--predict '" + model + "'"), "per-class scores");
  ExpectOneLineError(
      RunCli("--predict '" + model + "' --program '" + model + "'"),
      "neither --program nor --model");
}

// ------------------------------------------------------------ evaluation

std::string Persistables(const Scope& scope, const proto::ProgramDesc& p) {
  std::string all;
  for (const std::string& name : PersistableVars(p)) {
    const Tensor& t = scope.GetVar(name)->GetTensor();
    all += name + ":" +
           std::string(static_cast<const char*>(t.raw_data()), t.bytes());
  }
  return all;
}

// A job without a test program evaluates with the forward part of its main
// program: the same accuracy as with the explicit test program, no training
// on the test set.
TEST_F(TrainerTest, JobWithoutTestProgramEvaluatesForwardOnly) {
  const std::string with = SaveMlp([](proto::TrainingJob*) {}, "with.pb");
  const std::string without =
      SaveMlp([](proto::TrainingJob* j) { j->clear_test(); }, "without.pb");
  TrainerOptions o;
  o.data_dir = dir_;
  o.batch_size = 32;
  o.program = with;
  std::ostringstream log1, log2;
  TrainerResult a = RunTrainer(o, log1);
  o.program = without;
  TrainerResult b = RunTrainer(o, log2);
  ASSERT_GE(a.test_accuracy, 0);
  EXPECT_DOUBLE_EQ(a.test_accuracy, b.test_accuracy);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_NE(log2.str().find("the job has no test program: evaluating with "
                            "the forward part of the main program"),
            std::string::npos)
      << log2.str();
}

TEST(EvaluationProgramTest, DerivedProgramRunsNoOptimizerAndChangesNothing) {
  proto::TrainingJob job = BuildModel("mlp");
  job.clear_test();
  std::ostringstream log;
  const proto::ProgramDesc eval = EvaluationProgram(job, log);
  for (const proto::OpDesc& op : eval.blocks(0).ops()) {
    EXPECT_EQ(OpRoleOf(op) & (OpRole::kBackward | OpRole::kOptimize), 0)
        << OpToString(op);
    EXPECT_NE(op.type(), "momentum");
  }
  Executor exe(Place::CPU(), 1);
  Scope scope;
  exe.RunOnce(job.startup(), &scope);
  const std::string before = Persistables(scope, job.main());
  Tensor image(DataType::kFloat32, Shape{8, 1, 28, 28});
  float* px = image.mutable_data<float>(Place::CPU());
  for (int i = 0; i < 8 * 784; ++i) px[i] = (i % 13) / 13.0f;
  Tensor label(DataType::kInt64, Shape{8, 1});
  int64_t* pl = label.mutable_data<int64_t>(Place::CPU());
  for (int i = 0; i < 8; ++i) pl[i] = i;
  auto prepared = exe.Prepare(eval, &scope);
  std::vector<Tensor> fetched;
  for (int i = 0; i < 3; ++i)
    exe.Run(prepared.get(), {{"image", image}, {"label", label}},
            {job.metric_names(0)}, &fetched);
  EXPECT_EQ(Persistables(scope, job.main()), before)
      << "evaluation changed a parameter";
}

TEST(EvaluationProgramTest, TestProgramThatTrainsIsRefused) {
  proto::TrainingJob job = BuildModel("mlp");
  *job.mutable_test() = job.main();
  std::ostringstream log;
  try {
    EvaluationProgram(job, log);
    FAIL() << "a test program with optimizer ops was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the job's test program holds op"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("trains or communicates"),
              std::string::npos)
        << e.what();
  }
}

// --recompute: auto on resnet trains an epoch; named checkpoints that are
// no variables of the program are named in a one-line error.
TEST_F(TrainerTest, RecomputeFromTheCommandLine) {
  Outcome run = RunCli("--model resnet --batch-size 32 --recompute");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("test accuracy"), std::string::npos) << run.out;
  Outcome printed =
      RunCli("--model mlp --recompute fc_0.tmp_2,fc_1.tmp_2 --print-strategy");
  ASSERT_EQ(printed.status, 0) << printed.err;
  EXPECT_NE(printed.out.find("checkpoints: \"fc_1.tmp_2\""), std::string::npos)
      << printed.out;
  ExpectOneLineError(RunCli("--model mlp --recompute nope"),
                     "checkpoints 'nope' are not variables of the program");
}

}  // namespace
}  // namespace fluid
