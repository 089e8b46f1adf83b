// hierarchical_sigmoid: Out and PreOut against a naive walk of each row's
// path (the default tree's paths computed here from the heap positions;
// custom trees of uneven depth), extreme logits, fp64 numeric gradients,
// the sparse W gradient against the dense one, compile-time shapes and the
// errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/sparse_rows.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::Densify;
using testing::ErrorOf;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::RunOpSparse;
using testing::TensorMap;
using testing::ToVector;

using Slots = std::vector<std::pair<std::string, std::vector<std::string>>>;

Slots HsInputs(bool custom, bool bias) {
  Slots in{{"X", {"x"}}, {"W", {"w"}}, {"Label", {"label"}}};
  if (custom) {
    in.push_back({"PathTable", {"table"}});
    in.push_back({"PathCode", {"code"}});
  }
  if (bias) in.push_back({"Bias", {"b"}});
  return in;
}

proto::OpDesc Hs(int32_t num_classes, bool custom, bool bias,
                 bool sparse = false) {
  return MakeOp("hierarchical_sigmoid", HsInputs(custom, bias),
                {{"Out", {"out"}}, {"PreOut", {"pre"}}},
                {{"num_classes", num_classes}, {"is_sparse", sparse}});
}

proto::OpDesc HsGrad(int32_t num_classes, bool custom, bool bias, bool sparse) {
  Slots in = HsInputs(custom, bias);
  in.push_back({"PreOut", {"pre"}});
  in.push_back({"Out@GRAD", {"dout"}});
  Slots out{{"X@GRAD", {"dx"}}, {"W@GRAD", {"dw"}}};
  if (bias) out.push_back({"Bias@GRAD", {"db"}});
  return MakeOp("hierarchical_sigmoid_grad", in, out,
                {{"num_classes", num_classes}, {"is_sparse", sparse}});
}

struct Step {
  int64_t node, bit;
};

// The default tree's path of class k: from leaf k + C up to the root,
// each step's node being the parent's heap index - 1 and its bit whether
// the child is a right one.
std::vector<Step> DefaultPath(int64_t k, int64_t num_classes) {
  std::vector<Step> path;
  for (int64_t pos = k + num_classes; pos > 1; pos /= 2)
    path.push_back({pos / 2 - 1, pos % 2});
  return path;
}

// A custom tree with paths of 1 to 3 nodes over 5 inner nodes.
const std::vector<int64_t> kTable{0, 1, 3, 0, 2, -1, 0, -1, -1, 4, 1, -1};
const std::vector<int64_t> kCode{1, 0, 1, 0, 1, 0, 1, 1, 1, 0, 0, 1};

std::vector<Step> CustomPath(int64_t row) {
  std::vector<Step> path;
  for (int64_t j = 0; j < 3 && kTable[row * 3 + j] >= 0; ++j)
    path.push_back({kTable[row * 3 + j], kCode[row * 3 + j]});
  return path;
}

TensorMap HsBatch(int64_t n, int64_t d, int64_t nodes, int64_t num_classes,
                  bool custom, bool bias, uint64_t seed, double scale = 1) {
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < n; ++i) labels.push_back((i * 7 + 3) % num_classes);
  TensorMap in{{"x", RandomTensor<double>({n, d}, -scale, scale, seed)},
               {"w", RandomTensor<double>({nodes, d}, -1, 1, seed + 1)},
               {"label", MakeTensor<int64_t>({n, 1}, labels)}};
  if (custom) {
    in["table"] = MakeTensor<int64_t>({n, 3}, kTable);
    in["code"] = MakeTensor<int64_t>({n, 3}, kCode);
  }
  if (bias) in["b"] = RandomTensor<double>({nodes, 1}, -1, 1, seed + 2);
  return in;
}

void ExpectMatchesNaive(int64_t num_classes, bool custom, bool bias,
                        double scale = 1) {
  const int64_t n = custom ? 4 : 9, d = 3;
  const int64_t nodes = custom ? 5 : num_classes - 1;
  TensorMap in =
      HsBatch(n, d, nodes, num_classes, custom, bias, 100 + num_classes, scale);
  TensorMap out = RunOp(Hs(int32_t(num_classes), custom, bias), in);
  int64_t length = 3;
  if (!custom)
    for (length = 0; (int64_t{1} << length) < num_classes; ++length) {
    }
  ASSERT_EQ(out["pre"].shape(), Shape({n, length}));
  auto x = ToVector<double>(in["x"]), w = ToVector<double>(in["w"]);
  auto label = ToVector<int64_t>(in["label"]);
  auto got = ToVector<double>(out["out"]), pre = ToVector<double>(out["pre"]);
  for (int64_t i = 0; i < n; ++i) {
    const auto path =
        custom ? CustomPath(i) : DefaultPath(label[i], num_classes);
    ASSERT_LE(int64_t(path.size()), length);
    long double loss = 0;
    for (size_t j = 0; j < path.size(); ++j) {
      long double z = bias ? ToVector<double>(in["b"])[path[j].node] : 0.0;
      for (int64_t k = 0; k < d; ++k)
        z += x[i * d + k] * w[path[j].node * d + k];
      // -log sigmoid(z) for bit 1, -log(1 - sigmoid(z)) for bit 0.
      const long double sp =
          std::log1p(std::exp(-std::fabs(z))) + std::max<long double>(z, 0);
      loss += path[j].bit ? sp - z : sp;
      EXPECT_NEAR(pre[i * length + j], double(sp), 1e-12 * (1 + sp));
    }
    for (int64_t j = path.size(); j < length; ++j)
      EXPECT_EQ(pre[i * length + j], 0.0);
    EXPECT_NEAR(got[i], double(loss), 1e-12 * (1 + loss))
        << num_classes << " row " << i;
  }
}

TEST(HierarchicalSigmoidOp, DefaultTreeMatchesNaive) {
  for (int64_t c : {2, 3, 5, 8, 13}) {
    ExpectMatchesNaive(c, false, true);
    ExpectMatchesNaive(c, false, false);
  }
}

TEST(HierarchicalSigmoidOp, CustomTreeMatchesNaive) {
  ExpectMatchesNaive(5, true, true);
  ExpectMatchesNaive(5, true, false);
}

TEST(HierarchicalSigmoidOp, ExtremeLogitsStayFinite) {
  ExpectMatchesNaive(6, false, true, 300);
  ExpectMatchesNaive(5, true, false, 300);
}

TEST(HierarchicalSigmoidOp, NumericGradient) {
  testing::GradCheckOptions opt;
  opt.of = {"out"};
  opt.wrt = {"x", "w", "b"};
  EXPECT_TRUE(CheckGradient(Hs(7, false, true),
                            HsBatch(6, 3, 6, 7, false, true, 1), opt));
  EXPECT_TRUE(CheckGradient(Hs(5, true, true),
                            HsBatch(4, 3, 5, 5, true, true, 2), opt));
  opt.wrt = {"x", "w"};
  opt.threads = 3;
  EXPECT_TRUE(CheckGradient(Hs(4, false, false),
                            HsBatch(8, 2, 3, 4, false, false, 3), opt));
}

TEST(HierarchicalSigmoidOp, SparseWGradientEqualsDenseAfterScatter) {
  for (bool custom : {false, true}) {
    const int64_t classes = custom ? 5 : 11, nodes = custom ? 5 : 10;
    const int64_t n = custom ? 4 : 9;
    TensorMap in = HsBatch(n, 3, nodes, classes, custom, true, 5);
    TensorMap fwd = RunOp(Hs(int32_t(classes), custom, true), in);
    in["pre"] = fwd["pre"];
    in["dout"] = RandomTensor<double>({n, 1}, -1, 1, 6);
    auto dense = RunOp(HsGrad(int32_t(classes), custom, true, false), in);
    auto sparse = RunOpSparse(HsGrad(int32_t(classes), custom, true, true), in);
    ASSERT_EQ(sparse.sparse.count("dw"), 1u);
    const SelectedRows& sr = sparse.sparse["dw"];
    EXPECT_EQ(sr.height(), nodes);
    EXPECT_TRUE(std::is_sorted(sr.rows().begin(), sr.rows().end()));
    EXPECT_EQ(ToVector<double>(Densify(sr)), ToVector<double>(dense["dw"]));
    EXPECT_EQ(ToVector<double>(sparse.dense["db"]),
              ToVector<double>(dense["db"]));
    EXPECT_EQ(ToVector<double>(sparse.dense["dx"]),
              ToVector<double>(dense["dx"]));
  }
}

TEST(HierarchicalSigmoidOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape({-1, 8}));
  AddVarDesc(block, "w", DataType::kFloat32, Shape({9, 8}));
  AddVarDesc(block, "label", DataType::kInt64, Shape({-1, 1}));
  InferShapeAtCompileTime(Hs(10, false, false), block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "out")), Shape({-1, 1}));
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "pre")), Shape({-1, 4}));
}

void ExpectError(const proto::OpDesc& op, const TensorMap& in,
                 const std::string& want) {
  const std::string msg = ErrorOf(op, in);
  EXPECT_NE(msg.find(want), std::string::npos) << msg;
}

TEST(HierarchicalSigmoidOp, BadInputsNameTheCause) {
  TensorMap in = HsBatch(4, 3, 4, 5, false, true, 1);
  TensorMap bad = in;
  bad["label"] = MakeTensor<int64_t>({4, 1}, {0, 1, 5, 2});
  ExpectError(Hs(5, false, true), bad,
              "hierarchical_sigmoid: Label 'label' holds class 5 at position "
              "2, outside [0, 5) (num_classes)");
  bad = in;
  bad["w"] = RandomTensor<double>({5, 3}, -1, 1, 1);
  ExpectError(Hs(5, false, true), bad,
              "W 'w' must be float64 [4, 3] (num_classes - 1 inner nodes)");
  ExpectError(Hs(1, false, true), in,
              "num_classes 1 must be at least 2 for the default tree");
  TensorMap custom = HsBatch(4, 3, 5, 5, true, false, 1);
  bad = custom;
  std::vector<int64_t> table = kTable, code = kCode;
  table[4] = 5;
  bad["table"] = MakeTensor<int64_t>({4, 3}, table);
  ExpectError(Hs(5, true, false), bad,
              "PathTable 'table' holds node 5 at [1, 1], outside [0, 5)");
  bad = custom;
  code[1] = 2;
  bad["code"] = MakeTensor<int64_t>({4, 3}, code);
  ExpectError(Hs(5, true, false), bad,
              "PathCode 'code' holds 2 at [0, 1]; a code on the path must be "
              "0 or 1");
  ExpectError(MakeOp("hierarchical_sigmoid",
                     {{"X", {"x"}},
                      {"W", {"w"}},
                      {"Label", {"label"}},
                      {"PathTable", {"table"}}},
                     {{"Out", {"out"}}, {"PreOut", {"pre"}}},
                     {{"num_classes", int32_t{5}}}),
              custom, "PathTable and PathCode go together");
  bad = custom;
  bad["code"] = MakeTensor<int64_t>({4, 2}, std::vector<int64_t>(8, 0));
  ExpectError(Hs(5, true, false), bad, "must have the same path length");
}

}  // namespace
}  // namespace fluid
