// Whole models on CUDA against the CPU: the same job, the same initial
// weights (the random initialisers draw on the host on either place) and
// the same batches give the same losses step after step. Also the
// executor's handling of feeds and fetches on a device. Skips without a GPU;
// the refusal tests run everywhere.
#include <gtest/gtest.h>

#include <cmath>

#include "src/builder/models.h"
#include "src/framework/device.h"
#include "src/framework/executor.h"
#include "src/io/checkpoint.h"
#include "tests/testing/cuda_op_check.h"
#include "tests/testing/synthetic_batch.h"

namespace fluid {
namespace {

double Scalar(const Tensor& t) {
  return t.dtype() == DataType::kFloat64 ? t.data<double>()[0]
                                         : t.data<float>()[0];
}

struct Run {
  std::vector<double> losses;
  Scope scope;
};

// `steps` steps of `model` with its default optimizer on `place`.
std::unique_ptr<Run> Train(const std::string& model, DataType dtype,
                           const Place& place, int steps) {
  ModelOptions mo;
  mo.dtype = dtype;
  proto::TrainingJob job = BuildModel(model, mo);
  auto run = std::make_unique<Run>();
  Executor exe(place);
  exe.RunOnce(job.startup(), &run->scope);
  auto main = exe.Prepare(job.main(), &run->scope);
  Tensor x, y;
  std::vector<Tensor> out;
  for (int s = 0; s < steps; ++s) {
    if (dtype == DataType::kFloat64) {
      testing::SyntheticBatch<double>(77 + s, 16, &x, &y, 12);
    } else {
      testing::SyntheticBatch<float>(77 + s, 16, &x, &y, 12);
    }
    exe.Run(main.get(), {{"image", x}, {"label", y}}, {job.loss_name()}, &out);
    EXPECT_TRUE(out[0].place().is_cpu()) << "fetches come back to the host";
    run->losses.push_back(Scalar(out[0]));
  }
  return run;
}

void ExpectSameLosses(const std::string& model, DataType dtype, double rel) {
  auto cpu = Train(model, dtype, Place::CPU(), 20);
  auto cuda = Train(model, dtype, Place::CUDA(0), 20);
  for (int s = 0; s < 20; ++s) {
    double a = cpu->losses[s], b = cuda->losses[s];
    EXPECT_LE(std::fabs(a - b), rel * std::fabs(a))
        << model << " step " << s << ": CUDA " << b << " vs CPU " << a;
  }
  EXPECT_LT(cpu->losses.back(), cpu->losses.front()) << "it should learn";
}

TEST(CudaTraining, MlpFloat64LossesMatchCpu) {
  REQUIRE_GPU();
  ExpectSameLosses("mlp", DataType::kFloat64, 1e-9);
}

TEST(CudaTraining, LenetFloat64LossesMatchCpu) {
  REQUIRE_GPU();
  ExpectSameLosses("lenet", DataType::kFloat64, 1e-9);
}

TEST(CudaTraining, MlpFloat32LossesMatchCpu) {
  REQUIRE_GPU();
  ExpectSameLosses("mlp", DataType::kFloat32, 1e-4);
}

TEST(CudaTraining, LenetFloat32LossesMatchCpu) {
  REQUIRE_GPU();
  ExpectSameLosses("lenet", DataType::kFloat32, 1e-4);
}

TEST(CudaTraining, ParametersLiveOnTheDeviceAndCheckpointThroughTheHost) {
  REQUIRE_GPU();
  auto run = Train("mlp", DataType::kFloat32, Place::CUDA(0), 2);
  ModelOptions mo;
  proto::TrainingJob job = BuildModel("mlp", mo);
  int params = 0;
  for (const auto& v : job.main().blocks(0).vars()) {
    if (!v.persistable()) continue;
    const Tensor& t = run->scope.GetVar(v.name())->GetTensor();
    EXPECT_EQ(t.place(), Place::CUDA(0)) << v.name();
    ++params;
  }
  EXPECT_GT(params, 0);

  // CPU kernels cannot read them: a CPU executor on this scope says so.
  Executor cpu;
  Tensor x, y;
  testing::SyntheticBatch<float>(1, 4, &x, &y);
  try {
    cpu.RunOnce(job.main(), &run->scope, {{"image", x}, {"label", y}});
    FAIL() << "a CPU run read device parameters";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lives on cuda:0"), std::string::npos)
        << e.what();
  }

  // Save from the device, load into a fresh device scope: same values.
  std::string dir = ::testing::TempDir() + "/cuda_ckpt";
  SaveCheckpoint(run->scope, PersistableVars(job.main()), dir,
                 CheckpointInfo{2, 0});
  auto other = Train("mlp", DataType::kFloat32, Place::CUDA(0), 1);
  LoadCheckpoint(&other->scope, job.main(), dir);
  for (const auto& v : job.main().blocks(0).vars()) {
    if (!v.persistable()) continue;
    const Tensor& loaded = other->scope.GetVar(v.name())->GetTensor();
    EXPECT_EQ(loaded.place(), Place::CUDA(0)) << v.name();
    Tensor a, b;
    a.CopyFrom(run->scope.GetVar(v.name())->GetTensor(), Place::CPU());
    b.CopyFrom(loaded, Place::CPU());
    EXPECT_TRUE(testing::TensorsClose(a, b, 0, v.name()));
  }
}

TEST(CudaExecutor, RefusesADeviceItCannotUse) {
  if (BuiltWithCuda() && CudaDeviceCount() > 0) {
    try {
      Executor exe(Place::CUDA(CudaDeviceCount()));
      FAIL() << "a device past the visible count was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("visible"), std::string::npos)
          << e.what();
    }
    return;
  }
  try {
    Executor exe(Place::CUDA(0));
    FAIL() << "a CUDA place was accepted without a device";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    const std::string what = e.what();
    EXPECT_TRUE(what.find("no CUDA device is visible") != std::string::npos ||
                what.find("no CUDA") != std::string::npos)
        << what;
  }
}

}  // namespace
}  // namespace fluid
