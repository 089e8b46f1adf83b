// The ops of gradient clipping on a sparse gradient (rows listed once):
// clip, clip_by_norm, squared_l2_norm and elementwise_mul by a one-element
// Y, each against the same op on the dense tensor the rows stand for,
// restricted to the touched rows (where the dense gradient is zero the
// clip leaves it zero, and zeros add nothing to a norm). In place and not;
// rows listed twice are refused where they would change the result.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/sparse_inputs.h"
#include "tests/testing/state_optimizer_ops.h"

namespace fluid {
namespace {

using testing::AllNear;
using testing::Densify;
using testing::GatherRows;
using testing::MakeSelectedRows;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::RunOpOnSparse;
using testing::SparseErrorOf;
using testing::ToVector;

constexpr int64_t kHeight = 13, kWidth = 5;

SelectedRows Grad(const std::vector<int64_t>& rows, uint64_t seed) {
  return MakeSelectedRows(
      kHeight, rows,
      RandomTensor<double>({static_cast<int64_t>(rows.size()), kWidth}, -1, 1,
                           seed));
}

proto::OpDesc Unary(const std::string& type, const std::string& out,
                    const AttributeMap& attrs = {}) {
  return MakeOp(type, {{"X", {"g"}}}, {{"Out", {out}}}, attrs);
}

proto::OpDesc Scale(const std::string& out) {
  return MakeOp("elementwise_mul", {{"X", {"g"}}, {"Y", {"y"}}},
                {{"Out", {out}}});
}

// Runs `op` (Out named `out`) on the sparse g and on its dense form; the
// sparse result must keep g's rows and hold the dense result's rows.
void ExpectDenseOnTouchedRows(const proto::OpDesc& op, const std::string& out,
                              const SelectedRows& g,
                              const testing::TensorMap& extra = {}) {
  auto sparse = RunOpOnSparse(op, extra, {{"g", g}});
  testing::TensorMap dense_in = extra;
  dense_in["g"] = Densify(g);
  const Tensor dense = RunOp(op, dense_in)[out];
  const SelectedRows& got = sparse.sparse.at(out);
  EXPECT_EQ(got.rows(), g.rows()) << op.type();
  EXPECT_EQ(got.height(), g.height()) << op.type();
  EXPECT_TRUE(AllNear(ToVector<double>(got.value()),
                      ToVector<double>(GatherRows(dense, g.rows())), 1e-15))
      << op.type() << " -> " << out;
}

TEST(SparseClipOps, ClipAndClipByNormAreTheDenseOnesOnTouchedRows) {
  const std::vector<int64_t> rows = {0, 3, 4, 9, 12};
  for (const std::string out : {"g", "clipped"}) {
    ExpectDenseOnTouchedRows(
        Unary("clip", out, {{"min", -0.3f}, {"max", 0.4f}}), out,
        Grad(rows, 1));
    // A bound below and above the rows' norm (about 2.2).
    for (float bound : {0.5f, 100.0f})
      ExpectDenseOnTouchedRows(
          Unary("clip_by_norm", out, {{"max_norm", bound}}), out,
          Grad(rows, 2));
  }
  // Rows in another order: the same values, row by row.
  ExpectDenseOnTouchedRows(Unary("clip_by_norm", "g", {{"max_norm", 0.5f}}),
                           "g", Grad({9, 2, 6}, 3));
}

TEST(SparseClipOps, SquaredNormIsTheDenseOne) {
  const SelectedRows g = Grad({1, 5, 6, 11}, 4);
  auto op = Unary("squared_l2_norm", "n");
  const double sparse =
      ToVector<double>(RunOpOnSparse(op, {}, {{"g", g}}).dense.at("n"))[0];
  const double dense = ToVector<double>(RunOp(op, {{"g", Densify(g)}})["n"])[0];
  EXPECT_EQ(sparse, dense);
  double want = 0;
  for (double v : ToVector<double>(g.value())) want += v * v;
  EXPECT_NEAR(sparse, want, 1e-14);
}

TEST(SparseClipOps, ScaleByOneElementKeepsRowsAndRepeats) {
  const testing::TensorMap y = {{"y", MakeTensor<double>({1}, {0.25})}};
  for (const std::string out : {"g", "scaled"})
    ExpectDenseOnTouchedRows(Scale(out), out, Grad({2, 7, 8}, 5), y);
  // Linear: rows listed twice are fine, each copy scaled.
  const SelectedRows g = Grad({4, 1, 4}, 6);
  const SelectedRows got =
      RunOpOnSparse(Scale("g"), y, {{"g", g}}).sparse.at("g");
  EXPECT_EQ(got.rows(), g.rows());
  std::vector<double> want = ToVector<double>(g.value());
  for (double& v : want) v *= 0.25;
  EXPECT_EQ(ToVector<double>(got.value()), want);
}

TEST(SparseClipOps, FloatValues) {
  const SelectedRows g = MakeSelectedRows(
      kHeight, {3, 8}, RandomTensor<float>({2, kWidth}, -1, 1, 7));
  const SelectedRows got =
      RunOpOnSparse(Unary("clip", "g", {{"min", -0.2f}, {"max", 0.2f}}), {},
                    {{"g", g}})
          .sparse.at("g");
  std::vector<float> want = ToVector<float>(g.value());
  for (float& v : want) v = std::min(0.2f, std::max(-0.2f, v));
  EXPECT_EQ(ToVector<float>(got.value()), want);
}

TEST(SparseClipOps, RowsListedTwiceAreRefused) {
  const SelectedRows g = Grad({6, 2, 6}, 8);
  for (const proto::OpDesc& op :
       {Unary("clip", "g", {{"min", -0.3f}, {"max", 0.4f}}),
        Unary("clip_by_norm", "g", {{"max_norm", 0.5f}}),
        Unary("squared_l2_norm", "n")}) {
    const std::string msg = SparseErrorOf(op, {}, {{"g", g}});
    EXPECT_NE(msg.find(op.type() + ": X 'g' lists row 6 more than once; "
                                   "merge its copies first"),
              std::string::npos)
        << msg;
  }
}

TEST(SparseClipOps, ScaleOfSparseRowsNeedsOneElement) {
  const std::string msg = SparseErrorOf(
      Scale("g"), {{"y", MakeTensor<double>({kWidth}, {1, 2, 3, 4, 5})}},
      {{"g", Grad({1}, 9)}});
  EXPECT_NE(msg.find("elementwise_mul: X 'g' holds sparse rows, so Y 'y' "
                     "must hold one element"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace fluid
