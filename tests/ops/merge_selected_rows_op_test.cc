// merge_selected_rows: the rows listed once, ascending, standing for the
// same dense tensor as its input (repeats summed in list order, against a
// naive loop and to the bit against the optimizers' own merge), in place
// and not, empty and already-merged inputs, and the errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/sparse_inputs.h"
#include "tests/testing/state_optimizer_ops.h"

namespace fluid {
namespace {

using testing::Densify;
using testing::MakeSelectedRows;
using testing::RandomTensor;
using testing::RunOpOnSparse;
using testing::RunSparseSteps;
using testing::SparseErrorOf;
using testing::ToVector;

constexpr int64_t kHeight = 9, kWidth = 3;

SelectedRows Rows(const std::vector<int64_t>& rows, uint64_t seed) {
  return MakeSelectedRows(
      kHeight, rows,
      RandomTensor<double>({static_cast<int64_t>(rows.size()), kWidth}, -1, 1,
                           seed));
}

proto::OpDesc Merge(const std::string& out = "g") {
  return MakeOp("merge_selected_rows", {{"X", {"g"}}}, {{"Out", {out}}});
}

TEST(MergeSelectedRowsOp, RowsOnceAscendingSameDenseTensor) {
  const SelectedRows g = Rows({5, 0, 5, 8, 0, 5, 2}, 1);
  for (const std::string out : {"g", "merged"}) {
    auto r = RunOpOnSparse(Merge(out), {}, {{"g", g}});
    const SelectedRows& m = r.sparse.at(out);
    EXPECT_EQ(m.rows(), (std::vector<int64_t>{0, 2, 5, 8})) << out;
    EXPECT_EQ(m.height(), kHeight);
    EXPECT_EQ(m.value().shape(), Shape({4, kWidth}));
    // Copies summed in list order: row 5 = v0 + v2 + v5.
    const std::vector<double> v = ToVector<double>(g.value());
    const std::vector<double> got = ToVector<double>(m.value());
    for (int64_t j = 0; j < kWidth; ++j) {
      const double want =
          ((0.0 + v[0 * kWidth + j]) + v[2 * kWidth + j]) + v[5 * kWidth + j];
      EXPECT_EQ(got[2 * kWidth + j], want) << j;
    }
    EXPECT_EQ(ToVector<double>(Densify(m)), ToVector<double>(Densify(g)));
  }
}

// An optimizer merging the merged rows again gets the same bits as merging
// the original ones: sgd after the merge equals sgd on the raw rows.
TEST(MergeSelectedRowsOp, OptimizerSeesTheSameBits) {
  const SelectedRows g = Rows({3, 1, 3, 3, 7}, 2);
  const SelectedRows m = RunOpOnSparse(Merge(), {}, {{"g", g}}).sparse.at("g");
  auto sgd = MakeOp(
      "sgd", {{"Param", {"p"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}},
      {{"ParamOut", {"p"}}});
  const testing::TensorMap state = {
      {"p", RandomTensor<double>({kHeight, kWidth}, -1, 1, 3)},
      {"lr", testing::MakeTensor<double>({1}, {0.37})}};
  EXPECT_EQ(ToVector<double>(RunSparseSteps(sgd, state, "g", {g})["p"]),
            ToVector<double>(RunSparseSteps(sgd, state, "g", {m})["p"]));
}

TEST(MergeSelectedRowsOp, MergedAndEmptyInputsPassThrough) {
  for (const std::vector<int64_t>& rows :
       {std::vector<int64_t>{}, std::vector<int64_t>{0, 4, 8}}) {
    const SelectedRows g = Rows(rows, 4);
    for (const std::string out : {"g", "merged"}) {
      const SelectedRows m =
          RunOpOnSparse(Merge(out), {}, {{"g", g}}).sparse.at(out);
      EXPECT_EQ(m.rows(), rows);
      EXPECT_EQ(m.value().shape(), g.value().shape());
      EXPECT_EQ(ToVector<double>(m.value()), ToVector<double>(g.value()));
    }
  }
}

TEST(MergeSelectedRowsOp, FloatRowsOfSeveralDims) {
  const SelectedRows g =
      MakeSelectedRows(4, {2, 2, 0}, RandomTensor<float>({3, 2, 3}, -1, 1, 5));
  const SelectedRows m = RunOpOnSparse(Merge(), {}, {{"g", g}}).sparse.at("g");
  EXPECT_EQ(m.rows(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(m.value().shape(), Shape({2, 2, 3}));
  EXPECT_EQ(ToVector<float>(Densify(m)), ToVector<float>(Densify(g)));
}

TEST(MergeSelectedRowsOp, ErrorsNameTheVariable) {
  std::string msg = SparseErrorOf(Merge(), {}, {{"g", Rows({1, 9}, 6)}});
  EXPECT_NE(msg.find("merge_selected_rows: X 'g' holds row 9"),
            std::string::npos)
      << msg;
  msg = SparseErrorOf(
      Merge(), {{"g", RandomTensor<double>({kHeight, kWidth}, -1, 1, 7)}}, {});
  EXPECT_NE(msg.find("X 'g' is a dense tensor; it takes sparse rows"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace fluid
