#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::MakeTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc OneHot(int depth, DataType dtype = DataType::kFloat32) {
  return MakeOp(
      "one_hot", {{"X", {"x"}}}, {{"Out", {"out"}}},
      {{"depth", int32_t{depth}}, {"dtype", static_cast<int32_t>(dtype)}});
}

TEST(OneHotOp, MatchesNaive) {
  const std::vector<int64_t> ids = {2, 0, 4, 4, 1};
  Tensor x = MakeTensor<int64_t>({5, 1}, ids);
  Tensor out = RunOp(OneHot(5), {{"x", x}})["out"];
  ASSERT_EQ(out.shape(), Shape({5, 5}));
  auto got = ToVector<float>(out);
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 5; ++c)
      EXPECT_EQ(got[r * 5 + c], c == ids[r] ? 1.0f : 0.0f) << r << "," << c;
}

TEST(OneHotOp, DtypeAndRank) {
  Tensor x = MakeTensor<int64_t>({2, 2, 1}, {0, 2, 1, 0});
  Tensor out = RunOp(OneHot(3, DataType::kFloat64), {{"x", x}})["out"];
  ASSERT_EQ(out.shape(), Shape({2, 2, 3}));
  EXPECT_EQ(ToVector<double>(out),
            (std::vector<double>{1, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0}));
}

// Fluid's allow_out_of_range: an id outside [0, depth) gives a row of
// zeros instead of an error; the others are one-hot as usual.
TEST(OneHotOp, AllowOutOfRangeGivesZeroRows) {
  const std::vector<int64_t> ids = {2, -1, 3, 0, 7};
  proto::OpDesc op = OneHot(3);
  SetOpAttr(&op, "allow_out_of_range", true);
  Tensor out = RunOp(op, {{"x", MakeTensor<int64_t>({5, 1}, ids)}})["out"];
  ASSERT_EQ(out.shape(), Shape({5, 3}));
  auto got = ToVector<float>(out);
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 3; ++c)
      EXPECT_EQ(got[r * 3 + c], c == ids[r] ? 1.0f : 0.0f) << r << "," << c;
}

TEST(OneHotOp, IsNotDifferentiable) {
  EXPECT_FALSE(OpRegistry::Global().Get("one_hot").has_grad());
}

TEST(OneHotOp, BadInputsNameX) {
  std::string msg =
      ErrorOf(OneHot(3), {{"x", MakeTensor<int64_t>({2, 1}, {0, 3})}});
  EXPECT_NE(msg.find("one_hot: X 'x' holds 3 at row 1"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("allow_out_of_range=True"), std::string::npos) << msg;
  msg = ErrorOf(OneHot(3), {{"x", MakeTensor<int64_t>({2, 2}, {0, 1, 2, 0})}});
  EXPECT_NE(msg.find("must be [..., 1]"), std::string::npos) << msg;
  msg = ErrorOf(OneHot(3), {{"x", MakeTensor<float>({2, 1}, {0, 1})}});
  EXPECT_NE(msg.find("must be int64"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
