#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc Transpose(const std::vector<int32_t>& axis) {
  return MakeOp("transpose", {{"X", {"x"}}}, {{"Out", {"out"}}},
                {{"axis", axis}});
}

// Out's multi-index walked with an odometer; X's index built from it.
std::vector<double> NaiveTranspose(const Tensor& x,
                                   const std::vector<int32_t>& axis) {
  const Shape& s = x.shape();
  const int rank = s.rank();
  std::vector<int64_t> idx(rank, 0);
  std::vector<double> out;
  for (int64_t n = 0; n < s.numel(); ++n) {
    std::vector<int64_t> xi(rank);
    for (int d = 0; d < rank; ++d) xi[axis[d]] = idx[d];
    int64_t flat = 0;
    for (int d = 0; d < rank; ++d) flat = flat * s[d] + xi[d];
    out.push_back(x.data<double>()[flat]);
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < s[axis[d]]) break;
      idx[d] = 0;
    }
  }
  return out;
}

struct Case {
  Shape x;
  std::vector<int32_t> axis;
};

std::vector<Case> Cases() {
  return {{{3, 4}, {1, 0}},
          {{3, 4}, {0, 1}},
          {{2, 3, 4}, {2, 0, 1}},
          {{2, 3, 4}, {1, 2, 0}},
          {{2, 3, 4}, {0, 2, 1}},
          {{2, 1, 3, 2}, {3, 1, 0, 2}},
          {{5}, {0}},
          {{2, 0, 3}, {2, 1, 0}}};
}

TEST(TransposeOp, ForwardMatchesNaive) {
  uint64_t seed = 1;
  for (const Case& c : Cases()) {
    Tensor x = RandomTensor<double>(c.x, -1, 1, seed++);
    Tensor out = RunOp(Transpose(c.axis), {{"x", x}})["out"];
    Shape want;
    for (int32_t a : c.axis) want.push_back(c.x[a]);
    ASSERT_EQ(out.shape(), want);
    EXPECT_EQ(ToVector<double>(out), NaiveTranspose(x, c.axis)) << c.x;
  }
}

TEST(TransposeOp, ThreadedMatchesNaive) {
  Tensor x = RandomTensor<double>({16, 32, 3, 40}, -1, 1, 2);
  Tensor out = RunOp(Transpose({0, 2, 3, 1}), {{"x", x}}, 4)["out"];
  EXPECT_EQ(ToVector<double>(out), NaiveTranspose(x, {0, 2, 3, 1}));
}

// Integer tensors (class ids) move as the floats do.
TEST(TransposeOp, IntegersMatchNaive) {
  std::vector<int64_t> ids(2 * 3 * 4);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<int64_t>(i * 7919 % 101) - 50;
  const std::vector<double> want = NaiveTranspose(
      testing::MakeTensor<double>({2, 3, 4},
                                  std::vector<double>(ids.begin(), ids.end())),
      {2, 0, 1});
  auto got64 = ToVector<int64_t>(
      RunOp(Transpose({2, 0, 1}),
            {{"x", testing::MakeTensor<int64_t>({2, 3, 4}, ids)}})["out"]);
  auto got32 = ToVector<int32_t>(RunOp(
      Transpose({2, 0, 1}),
      {{"x",
        testing::MakeTensor<int32_t>(
            {2, 3, 4}, std::vector<int32_t>(ids.begin(), ids.end()))}})["out"]);
  ASSERT_EQ(got64.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(static_cast<double>(got64[i]), want[i]) << i;
    EXPECT_EQ(static_cast<double>(got32[i]), want[i]) << i;
  }
}

TEST(TransposeOp, FloatMatchesDouble) {
  auto d = ToVector<double>(
      RunOp(Transpose({1, 0}),
            {{"x", RandomTensor<double>({3, 5}, -1, 1, 3)}})["out"]);
  auto f = ToVector<float>(
      RunOp(Transpose({1, 0}),
            {{"x", RandomTensor<float>({3, 5}, -1, 1, 3)}})["out"]);
  ASSERT_EQ(d.size(), f.size());
  for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(f[i], d[i], 1e-7);
}

TEST(TransposeOp, Gradient) {
  uint64_t seed = 10;
  for (const Case& c : Cases()) {
    EXPECT_TRUE(CheckGradient(
        Transpose(c.axis), {{"x", RandomTensor<double>(c.x, -1, 1, seed++)}}))
        << c.x;
  }
}

TEST(TransposeOp, GradIsInverseTranspose) {
  auto grads =
      OpRegistry::Global().Get("transpose").grad_maker()(Transpose({2, 0, 1}));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type(), "transpose");
  EXPECT_EQ(GetOpAttrAs<std::vector<int32_t>>(grads[0], "axis"),
            (std::vector<int32_t>{1, 2, 0}));
}

TEST(TransposeOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape{-1, 3, 5});
  InferShapeAtCompileTime(Transpose({0, 2, 1}), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "out")), Shape({-1, 5, 3}));
}

TEST(TransposeOp, BadAxisNamesX) {
  Tensor x = RandomTensor<double>({2, 3}, -1, 1, 4);
  for (const auto& axis :
       std::vector<std::vector<int32_t>>{{0}, {0, 0}, {0, 2}, {1, 0, 2}}) {
    std::string msg = ErrorOf(Transpose(axis), {{"x", x}});
    EXPECT_NE(msg.find("transpose"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace fluid
