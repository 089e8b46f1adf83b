// The CUDA kernels of the ops that clip and decay a sparse gradient
// (merge_selected_rows, sparse_weight_decay, and the sparse forms of clip,
// clip_by_norm, squared_l2_norm and elementwise_mul) against their CPU
// kernels, float32 and float64, from no row to several hundred blocks,
// in place and not. Every test skips, saying why, without a CUDA build or
// a visible device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/cuda_op_check.h"
#include "tests/testing/sparse_inputs.h"

namespace fluid {
namespace {

using testing::FilledTensor;
using testing::kFloatTypes;
using testing::MakeSelectedRows;
using testing::RandomTensor;
using testing::RunOpOnSparse;
using testing::SparseMap;
using testing::SparseRunResult;
using testing::TensorMap;
using testing::TensorsClose;

struct Case {
  int64_t height, width;
  std::vector<int64_t> rows;
};

// No row; a few with repeats; many (a few hundred blocks of 256 threads).
std::vector<Case> Cases(bool distinct) {
  std::vector<Case> cases = {{7, 3, {}},
                             {12, 5,
                              distinct ? std::vector<int64_t>{0, 3, 11}
                                       : std::vector<int64_t>{3, 0, 3, 11, 0}}};
  Case big{4000, 48, {}};
  for (int64_t r = 3999; r >= 0; r -= distinct ? 2 : 1)
    big.rows.push_back(distinct ? r : (r * 7) % 1500);
  cases.push_back(big);
  return cases;
}

SelectedRows Rows(DataType dt, const Case& c, uint64_t seed) {
  return MakeSelectedRows(
      c.height, c.rows,
      RandomTensor(dt, {static_cast<int64_t>(c.rows.size()), c.width}, -1, 1,
                   seed));
}

void ExpectSame(const SparseRunResult& cpu, const SparseRunResult& gpu,
                const std::string& what) {
  for (const auto& [name, t] : cpu.dense)
    EXPECT_TRUE(TensorsClose(t, gpu.dense.at(name), -1, name)) << what;
  for (const auto& [name, sr] : cpu.sparse) {
    const SelectedRows& g = gpu.sparse.at(name);
    EXPECT_EQ(sr.rows(), g.rows()) << what << " " << name;
    EXPECT_EQ(sr.height(), g.height()) << what << " " << name;
    EXPECT_TRUE(TensorsClose(sr.value(), g.value(), -1, name)) << what;
  }
}

void ExpectCudaMatchesCpu(const proto::OpDesc& op, const TensorMap& dense,
                          const SparseMap& sparse, const std::string& what) {
  ExpectSame(RunOpOnSparse(op, dense, sparse, Place::CPU()),
             RunOpOnSparse(op, dense, sparse, Place::CUDA(0)),
             op.type() + " " + what);
}

TEST(SparseGradOpsCuda, MergeSelectedRows) {
  REQUIRE_GPU();
  uint64_t seed = 10;
  for (DataType dt : kFloatTypes)
    for (const Case& c : Cases(false))
      for (const std::string out : {"g", "merged"})
        ExpectCudaMatchesCpu(
            MakeOp("merge_selected_rows", {{"X", {"g"}}}, {{"Out", {out}}}), {},
            {{"g", Rows(dt, c, ++seed)}}, DataTypeName(dt));
}

TEST(SparseGradOpsCuda, WeightDecay) {
  REQUIRE_GPU();
  uint64_t seed = 100;
  for (DataType dt : kFloatTypes)
    for (const Case& c : Cases(true))
      for (const std::string kind : {"l2", "l1"})
        ExpectCudaMatchesCpu(
            MakeOp("sparse_weight_decay", {{"Param", {"p"}}, {"Grad", {"g"}}},
                   {{"GradOut", {"g"}}},
                   {{"regularizer", kind}, {"regularization_coeff", 0.3f}}),
            {{"p", RandomTensor(dt, {c.height, c.width}, -1, 1, ++seed)}},
            {{"g", Rows(dt, c, ++seed)}}, kind);
}

TEST(SparseGradOpsCuda, ClipsAndNorm) {
  REQUIRE_GPU();
  uint64_t seed = 200;
  const std::vector<proto::OpDesc> ops = {
      MakeOp("clip", {{"X", {"g"}}}, {{"Out", {"g"}}},
             {{"min", -0.3f}, {"max", 0.5f}}),
      MakeOp("clip_by_norm", {{"X", {"g"}}}, {{"Out", {"out"}}},
             {{"max_norm", 0.5f}}),
      MakeOp("squared_l2_norm", {{"X", {"g"}}}, {{"Out", {"n"}}}),
      MakeOp("elementwise_mul", {{"X", {"g"}}, {"Y", {"y"}}},
             {{"Out", {"g"}}})};
  for (DataType dt : kFloatTypes)
    for (const Case& c : Cases(true))
      for (const proto::OpDesc& op : ops)
        ExpectCudaMatchesCpu(op, {{"y", FilledTensor(dt, {1}, 0.37)}},
                             {{"g", Rows(dt, c, ++seed)}}, DataTypeName(dt));
}

}  // namespace
}  // namespace fluid
