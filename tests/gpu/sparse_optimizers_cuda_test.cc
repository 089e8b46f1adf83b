// The CUDA kernels of the optimizers' sparse path (a Grad of sparse rows,
// repeats included) against their CPU kernels: sgd, momentum, adagrad, and
// adam with and without lazy_mode, a few steps each; and a sum of sparse
// terms. Every test skips, saying why, without a CUDA build or a visible
// device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/cuda_op_check.h"
#include "tests/testing/sparse_rows.h"

namespace fluid {
namespace {

using testing::FilledTensor;
using testing::kFloatTypes;
using testing::MakeSelectedRows;
using testing::RandomTensor;
using testing::RunSparseSteps;
using testing::TensorMap;
using testing::TensorsClose;

constexpr int64_t kRows = 12, kWidth = 7;

std::vector<SelectedRows> Grads(DataType dt) {
  std::vector<SelectedRows> g;
  const std::vector<std::vector<int64_t>> rows = {{3, 0, 3, 11}, {5, 5}, {}};
  uint64_t seed = 50;
  for (const auto& r : rows)
    g.push_back(MakeSelectedRows(
        kRows, r,
        RandomTensor(dt, {static_cast<int64_t>(r.size()), kWidth}, -1, 1,
                     seed++)));
  return g;
}

proto::OpDesc Optimizer(const std::string& type,
                        const std::vector<std::string>& states,
                        AttributeMap attrs = {}) {
  std::vector<std::pair<std::string, std::vector<std::string>>> in = {
      {"Param", {"p"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}};
  std::vector<std::pair<std::string, std::vector<std::string>>> out = {
      {"ParamOut", {"p"}}};
  for (const auto& s : states) {
    in.push_back({s, {s}});
    out.push_back({s + "Out", {s}});
  }
  return MakeOp(type, in, out, attrs);
}

void ExpectCudaMatchesCpu(const proto::OpDesc& op, const TensorMap& state,
                          DataType dt) {
  TensorMap cpu = RunSparseSteps(op, state, "g", Grads(dt), Place::CPU());
  TensorMap gpu = RunSparseSteps(op, state, "g", Grads(dt), Place::CUDA(0));
  for (const auto& kv : cpu)
    EXPECT_TRUE(TensorsClose(kv.second, gpu[kv.first], -1, kv.first))
        << op.type() << " " << DataTypeName(dt);
}

TEST(SparseOptimizersCuda, MatchCpu) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    TensorMap base = {{"p", RandomTensor(dt, {kRows, kWidth}, -1, 1, 1)},
                      {"lr", FilledTensor(dt, {1}, 0.1)}};
    ExpectCudaMatchesCpu(Optimizer("sgd", {}), base, dt);
    TensorMap m = base;
    m["Velocity"] = FilledTensor(dt, {kRows, kWidth}, 0.0);
    ExpectCudaMatchesCpu(Optimizer("momentum", {"Velocity"}), m, dt);
    TensorMap a = base;
    a["Moment"] = FilledTensor(dt, {kRows, kWidth}, 0.1);
    ExpectCudaMatchesCpu(Optimizer("adagrad", {"Moment"}), a, dt);
    for (bool lazy : {false, true}) {
      TensorMap s = base;
      s["Moment1"] = FilledTensor(dt, {kRows, kWidth}, 0.0);
      s["Moment2"] = FilledTensor(dt, {kRows, kWidth}, 0.0);
      s["Beta1Pow"] = FilledTensor(dt, {1}, 0.9);
      s["Beta2Pow"] = FilledTensor(dt, {1}, 0.999);
      ExpectCudaMatchesCpu(
          Optimizer("adam", {"Moment1", "Moment2", "Beta1Pow", "Beta2Pow"},
                    {{"lazy_mode", lazy}}),
          s, dt);
    }
  }
}

}  // namespace
}  // namespace fluid
