// sparse_weight_decay against the dense decay restricted to the touched
// rows (the scale + sum ops that L1Decay / L2Decay append for a dense
// gradient, run on the densified gradient), in place and not, float32 and
// float64, and its errors: rows listed twice, a dense Grad, shapes that do
// not match, attrs out of range.
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
using testing::RandomTensor;
using testing::RunOp;
using testing::RunOpOnSparse;
using testing::SparseErrorOf;
using testing::SparseMap;
using testing::ToVector;

constexpr int64_t kHeight = 11, kWidth = 4;
const std::vector<int64_t> kRows = {1, 4, 5, 10};

proto::OpDesc Decay(const std::string& kind, float coeff,
                    const std::string& out = "g") {
  return MakeOp("sparse_weight_decay", {{"Param", {"p"}}, {"Grad", {"g"}}},
                {{"GradOut", {out}}},
                {{"regularizer", kind}, {"regularization_coeff", coeff}});
}

// The dense decay of src/builder/regularizer.cc: grad + coeff * param (l2)
// or grad + coeff * sign(param) (l1), on dense tensors.
Tensor DenseDecay(const std::string& kind, float coeff, const Tensor& p,
                  const Tensor& g) {
  Tensor source = p;
  if (kind == "l1")
    source = RunOp(MakeOp("sign", {{"X", {"p"}}}, {{"Out", {"s"}}}),
                   {{"p", p}})["s"];
  Tensor d = RunOp(
      MakeOp("scale", {{"X", {"s"}}}, {{"Out", {"d"}}}, {{"scale", coeff}}),
      {{"s", source}})["d"];
  return RunOp(MakeOp("sum", {{"X", {"g", "d"}}}, {{"Out", {"o"}}}),
               {{"g", g}, {"d", d}})["o"];
}

template <typename T>
void ExpectDenseDecayOnTouchedRows(const std::string& kind, double tol) {
  const Tensor p = RandomTensor<T>({kHeight, kWidth}, -1, 1, 1);
  const SelectedRows g = MakeSelectedRows(
      kHeight, kRows,
      RandomTensor<T>({static_cast<int64_t>(kRows.size()), kWidth}, -1, 1, 2));
  const Tensor want = GatherRows(DenseDecay(kind, 0.3f, p, Densify(g)), kRows);
  for (const std::string out : {"g", "decayed"}) {
    auto r = RunOpOnSparse(Decay(kind, 0.3f, out), {{"p", p}}, {{"g", g}});
    const SelectedRows& got = r.sparse.at(out);
    EXPECT_EQ(got.rows(), kRows) << kind << " " << out;
    EXPECT_EQ(got.height(), kHeight);
    std::vector<double> w, v;
    for (T x : ToVector<T>(want)) w.push_back(x);
    for (T x : ToVector<T>(got.value())) v.push_back(x);
    EXPECT_TRUE(AllNear(v, w, tol)) << kind << " " << out;
  }
}

TEST(SparseWeightDecayOp, DenseDecayOnTouchedRows) {
  for (const std::string kind : {"l2", "l1"}) {
    ExpectDenseDecayOnTouchedRows<double>(kind, 1e-15);
    ExpectDenseDecayOnTouchedRows<float>(kind, 1e-6);
  }
}

TEST(SparseWeightDecayOp, RowsInAnyOrderAndNone) {
  const Tensor p = RandomTensor<double>({kHeight, kWidth}, -1, 1, 3);
  const std::vector<int64_t> rows = {7, 0, 3};
  const SelectedRows g = MakeSelectedRows(
      kHeight, rows, RandomTensor<double>({3, kWidth}, -1, 1, 4));
  const SelectedRows got =
      RunOpOnSparse(Decay("l2", 0.5f), {{"p", p}}, {{"g", g}}).sparse.at("g");
  const std::vector<double> pv = ToVector<double>(p),
                            gv = ToVector<double>(g.value());
  std::vector<double> want;
  for (size_t k = 0; k < rows.size(); ++k)
    for (int64_t j = 0; j < kWidth; ++j)
      want.push_back(gv[k * kWidth + j] + pv[rows[k] * kWidth + j] * 0.5);
  EXPECT_EQ(got.rows(), rows);
  EXPECT_TRUE(AllNear(ToVector<double>(got.value()), want, 1e-15));
  const SelectedRows none = MakeSelectedRows(
      kHeight, {}, RandomTensor<double>({0, kWidth}, -1, 1, 5));
  const SelectedRows empty =
      RunOpOnSparse(Decay("l1", 0.5f), {{"p", p}}, {{"g", none}})
          .sparse.at("g");
  EXPECT_TRUE(empty.rows().empty());
  EXPECT_EQ(empty.value().shape(), Shape({0, kWidth}));
}

TEST(SparseWeightDecayOp, Errors) {
  const Tensor p = RandomTensor<double>({kHeight, kWidth}, -1, 1, 6);
  const Tensor v = RandomTensor<double>({3, kWidth}, -1, 1, 7);
  std::string msg =
      SparseErrorOf(Decay("l2", 0.1f), {{"p", p}},
                    {{"g", MakeSelectedRows(kHeight, {2, 6, 2}, v)}});
  EXPECT_NE(msg.find("sparse_weight_decay: Grad 'g' lists row 2 more than "
                     "once; merge its copies first (merge_selected_rows)"),
            std::string::npos)
      << msg;
  msg = SparseErrorOf(Decay("l2", 0.1f), {{"p", p}},
                      {{"g", MakeSelectedRows(kHeight, {0, 3, kHeight}, v)}});
  EXPECT_NE(msg.find("sparse_weight_decay: Grad 'g' holds row 11 at position "
                     "2, outside [0, 11)"),
            std::string::npos)
      << msg;
  msg = SparseErrorOf(Decay("l2", 0.1f), {{"p", p}, {"g", p}}, {});
  EXPECT_NE(msg.find("Grad 'g' is a dense tensor"), std::string::npos) << msg;
  msg = SparseErrorOf(Decay("l2", 0.1f), {{"p", p}},
                      {{"g", MakeSelectedRows(kHeight + 1, {0, 1, 2}, v)}});
  EXPECT_NE(msg.find("Grad 'g' stands for shape"), std::string::npos) << msg;
  EXPECT_NE(msg.find("but Param 'p' has shape"), std::string::npos) << msg;
  const SparseMap ok = {{"g", MakeSelectedRows(kHeight, {0, 1, 2}, v)}};
  msg = SparseErrorOf(Decay("l3", 0.1f), {{"p", p}}, ok);
  EXPECT_NE(msg.find("regularizer"), std::string::npos) << msg;
  msg = SparseErrorOf(Decay("l2", -0.1f), {{"p", p}}, ok);
  EXPECT_NE(msg.find("regularization_coeff"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
