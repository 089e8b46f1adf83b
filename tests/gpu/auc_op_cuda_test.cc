// The CUDA kernel of auc against its CPU kernel: the histograms and the AUC
// must be equal (tolerance 0: the counts are integers and one thread adds
// the area in the CPU's order), for float32 and float64 predictions, one
// and two columns, windows of several batches and histograms that start
// non-empty; then several runs of a program whose histograms persist on the
// device. Every test skips, saying why, without a CUDA build or a visible
// device.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::MakeTensor;
using testing::ToVector;

proto::OpDesc AucOp(int num_thresholds, int slide_steps) {
  return MakeOp(
      "auc",
      {{"Predict", {"predict"}},
       {"Label", {"label"}},
       {"StatPos", {"pos"}},
       {"StatNeg", {"neg"}}},
      {{"AUC", {"auc"}}, {"StatPosOut", {"pos"}}, {"StatNegOut", {"neg"}}},
      {{"num_thresholds", int32_t{num_thresholds}},
       {"slide_steps", int32_t{slide_steps}}});
}

// Probabilities in [0, 1] (the ends included), [rows, width] whose last
// column is the probability of class 1.
Tensor RandomPredict(DataType dt, int64_t rows, int64_t width, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> v;
  for (int64_t i = 0; i < rows; ++i) {
    const double p = i % 17 == 0 ? double(i % 2) : u(rng);
    if (width == 2) v.push_back(1 - p);
    v.push_back(p);
  }
  if (dt == DataType::kFloat64) return MakeTensor<double>({rows, width}, v);
  return MakeTensor<float>({rows, width},
                           std::vector<float>(v.begin(), v.end()));
}

Tensor RandomLabels(int64_t rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(rows));
  for (auto& x : v) x = static_cast<int64_t>(rng() % 2);
  return MakeTensor<int64_t>({rows, 1}, v);
}

Tensor RandomCounts(int64_t rows, int64_t buckets, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(rows * buckets));
  for (auto& x : v) x = static_cast<int64_t>(rng() % 5);
  return MakeTensor<int64_t>({rows, buckets}, v);
}

TEST(AucOpCuda, OneRunMatchesTheCpu) {
  REQUIRE_GPU();
  struct Case {
    int64_t rows, width;
    int num_thresholds, slide_steps;
  };
  testing::CudaCheckOptions exact;
  exact.tolerance = 0;
  uint64_t seed = 700;
  for (DataType dt : kFloatTypes) {
    for (const Case& c : std::vector<Case>{{1, 2, 4095, 1},
                                           {64, 2, 4095, 0},
                                           {1000, 1, 200, 3},
                                           {5000, 2, 4095, 20},
                                           {0, 2, 10, 2},
                                           {300, 2, 1, 1}}) {
      const int64_t window = c.slide_steps > 0 ? c.slide_steps : 1;
      const int64_t buckets = c.num_thresholds + 1;
      EXPECT_TRUE(CudaMatchesCpu(
          AucOp(c.num_thresholds, c.slide_steps),
          {{"predict", RandomPredict(dt, c.rows, c.width, seed++)},
           {"label", RandomLabels(c.rows, seed++)},
           {"pos", RandomCounts(window, buckets, seed++)},
           {"neg", RandomCounts(window, buckets, seed++)}},
          exact))
          << DataTypeName(dt) << " " << c.rows << "x" << c.width << " nt "
          << c.num_thresholds << " steps " << c.slide_steps;
    }
  }
}

// The histograms persist on the device across runs, as a layer's do.
class DeviceRuns {
 public:
  DeviceRuns(const Place& place, int slide_steps)
      : exe_(place), rows_(slide_steps > 0 ? slide_steps : 1) {
    proto::ProgramDesc program = NewProgram();
    proto::BlockDesc* block = program.mutable_blocks(0);
    AddVarDesc(block, "predict", DataType::kFloat32, Shape{-1, 2});
    AddVarDesc(block, "label", DataType::kInt64, Shape{-1, 1});
    for (const char* s : {"pos", "neg"}) {
      AddVarDesc(block, s, DataType::kInt64, Shape{rows_, 4096}, true);
      scope_.Var(s)->GetMutableTensor()->CopyFrom(
          MakeTensor<int64_t>({rows_, 4096},
                              std::vector<int64_t>(size_t(rows_) * 4096)),
          place);
    }
    *block->add_ops() = AucOp(4095, slide_steps);
    InferShapeAtCompileTime(block->ops(0), block);
    prepared_ = exe_.Prepare(program, &scope_);
  }
  // The AUC, then the histograms, as host tensors.
  std::vector<Tensor> Step(const Tensor& predict, const Tensor& label) {
    std::vector<Tensor> out;
    exe_.Run(prepared_.get(), {{"predict", predict}, {"label", label}},
             {"auc", "pos", "neg"}, &out);
    return out;
  }

 private:
  Scope scope_;
  Executor exe_;
  int64_t rows_;
  std::unique_ptr<PreparedProgram> prepared_;
};

TEST(AucOpCuda, RunsOfAProgramMatchTheCpu) {
  REQUIRE_GPU();
  for (int steps : {0, 1, 4}) {
    DeviceRuns cpu(Place::CPU(), steps), cuda(Place::CUDA(0), steps);
    for (uint64_t b = 0; b < 7; ++b) {
      const Tensor predict = RandomPredict(DataType::kFloat32, 256, 2, 800 + b);
      const Tensor label = RandomLabels(256, 900 + b);
      std::vector<Tensor> want = cpu.Step(predict, label);
      std::vector<Tensor> got = cuda.Step(predict, label);
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_TRUE(testing::TensorsClose(want[i], got[i], 0,
                                          "output " + std::to_string(i)))
            << "steps " << steps << " batch " << b;
    }
  }
}

// Rows the CPU kernel refuses are left out of the device's counts (the
// data is not copied back to check it).
TEST(AucOpCuda, RowsOutsideTheRangeAreNotCounted) {
  REQUIRE_GPU();
  DeviceRuns cuda(Place::CUDA(0), 0);
  const Tensor predict =
      MakeTensor<float>({4, 2}, {0.5f, 0.5f, -1, 2, 0.9f, 0.1f, 0.2f, 0.8f});
  const Tensor label = MakeTensor<int64_t>({4, 1}, {1, 1, 0, 3});
  std::vector<Tensor> out = cuda.Step(predict, label);
  const std::vector<int64_t> pos = ToVector<int64_t>(out[1]);
  const std::vector<int64_t> neg = ToVector<int64_t>(out[2]);
  int64_t counted = 0;
  for (size_t i = 0; i < pos.size(); ++i) counted += pos[i] + neg[i];
  EXPECT_EQ(counted, 2);
  EXPECT_EQ(pos[static_cast<size_t>(0.5f * 4095.0f)], 1);
  EXPECT_EQ(neg[static_cast<size_t>(0.1f * 4095.0f)], 1);
}

}  // namespace
}  // namespace fluid
