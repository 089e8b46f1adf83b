// The creation ops: fill_any_like (every dtype), isinf / isnan / isfinite,
// eye, diag, range, linspace and the random _batch_size_like ops (the
// batch dim, the draws those of uniform_random / gaussian_random with the
// same seed, and the same again in a second run), against values written
// out here; compile-time shapes and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

TEST(FillAnyLikeOp, EveryDtype) {
  Tensor x = RandomTensor<double>({2, 3}, -1, 1, 1);
  for (DataType dt : {DataType::kFloat32, DataType::kFloat64, DataType::kInt32,
                      DataType::kInt64}) {
    auto out =
        RunOp(MakeOp("fill_any_like", {{"X", {"x"}}}, {{"Out", {"o"}}},
                     {{"value", 3.0f}, {"dtype", static_cast<int32_t>(dt)}}),
              {{"x", x}});
    EXPECT_EQ(out["o"].shape(), Shape({2, 3}));
    ASSERT_EQ(out["o"].dtype(), dt);
    if (dt == DataType::kInt64) {
      for (int64_t v : ToVector<int64_t>(out["o"])) EXPECT_EQ(v, 3);
    }
  }
  auto same = RunOp(MakeOp("fill_any_like", {{"X", {"x"}}}, {{"Out", {"o"}}},
                           {{"value", 1.0f}, {"dtype", int32_t{-1}}}),
                    {{"x", x}});
  ASSERT_EQ(same["o"].dtype(), DataType::kFloat64);
  for (double v : ToVector<double>(same["o"])) EXPECT_EQ(v, 1.0);
}

bool Answer(const std::string& op, const std::vector<double>& values) {
  Tensor x = MakeTensor<double>({static_cast<int64_t>(values.size())}, values);
  auto out = RunOp(MakeOp(op, {{"X", {"x"}}}, {{"Out", {"o"}}}), {{"x", x}});
  EXPECT_EQ(out["o"].dtype(), DataType::kBool);
  EXPECT_EQ(out["o"].shape(), Shape({1}));
  return out["o"].data<bool>()[0];
}

TEST(IsFiniteOps, AnyAndAll) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(Answer("isinf", {1, 2, 3}));
  EXPECT_TRUE(Answer("isinf", {1, -inf, 3}));
  EXPECT_FALSE(Answer("isinf", {1, nan, 3}));
  EXPECT_FALSE(Answer("isnan", {1, inf, 3}));
  EXPECT_TRUE(Answer("isnan", {nan, 2, 3}));
  EXPECT_TRUE(Answer("isfinite", {1, 2, 3}));
  EXPECT_FALSE(Answer("isfinite", {1, 2, inf}));
  EXPECT_FALSE(Answer("isfinite", {nan, 2, 3}));
  EXPECT_TRUE(Answer("isfinite", {}));
  EXPECT_FALSE(Answer("isinf", {}));
  std::string msg = ErrorOf(MakeOp("isnan", {{"X", {"x"}}}, {{"Out", {"o"}}}),
                            {{"x", MakeTensor<int64_t>({2}, {1, 2})}});
  EXPECT_NE(msg.find("X 'x' is int64"), std::string::npos) << msg;
}

TEST(EyeOp, BatchesOfIdentities) {
  auto out = RunOp(MakeOp("eye", {}, {{"Out", {"o"}}},
                          {{"num_rows", int64_t{2}},
                           {"num_columns", int64_t{3}},
                           {"batch_shape", std::vector<int64_t>{2}},
                           {"dtype", static_cast<int32_t>(DataType::kInt32)}}),
                   {});
  EXPECT_EQ(out["o"].shape(), Shape({2, 2, 3}));
  EXPECT_EQ(ToVector<int32_t>(out["o"]),
            (std::vector<int32_t>{1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0}));
  auto square = RunOp(
      MakeOp("eye", {}, {{"Out", {"o"}}}, {{"num_rows", int64_t{3}}}), {});
  EXPECT_EQ(ToVector<float>(square["o"]),
            (std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1}));
  std::string msg = ErrorOf(
      MakeOp("eye", {}, {{"Out", {"o"}}}, {{"num_rows", int64_t{-2}}}), {});
  EXPECT_NE(msg.find("num_rows=-2"), std::string::npos) << msg;
}

TEST(DiagOp, Diagonal) {
  auto out = RunOp(MakeOp("diag", {{"Diagonal", {"d"}}}, {{"Out", {"o"}}}),
                   {{"d", MakeTensor<int64_t>({3}, {4, 5, 6})}});
  EXPECT_EQ(out["o"].shape(), Shape({3, 3}));
  EXPECT_EQ(ToVector<int64_t>(out["o"]),
            (std::vector<int64_t>{4, 0, 0, 0, 5, 0, 0, 0, 6}));
  std::string msg =
      ErrorOf(MakeOp("diag", {{"Diagonal", {"d"}}}, {{"Out", {"o"}}}),
              {{"d", RandomTensor<double>({2, 2}, 0, 1, 1)}});
  EXPECT_NE(msg.find("Diagonal 'd' [2, 2] must have rank 1"), std::string::npos)
      << msg;
}

proto::OpDesc Range(double start, double end, double step, DataType dt) {
  return MakeOp("range", {}, {{"Out", {"o"}}},
                {{"start", start},
                 {"end", end},
                 {"step", step},
                 {"dtype", static_cast<int32_t>(dt)}});
}

TEST(RangeOp, ValuesAndErrors) {
  auto ints = RunOp(Range(0, 10, 3, DataType::kInt64), {});
  EXPECT_EQ(ToVector<int64_t>(ints["o"]), (std::vector<int64_t>{0, 3, 6, 9}));
  auto down = RunOp(Range(5, 1, -2, DataType::kInt32), {});
  EXPECT_EQ(ToVector<int32_t>(down["o"]), (std::vector<int32_t>{5, 3}));
  auto floats = RunOp(Range(0.5, 1.0, 0.25, DataType::kFloat64), {});
  EXPECT_EQ(ToVector<double>(floats["o"]), (std::vector<double>{0.5, 0.75}));
  auto empty = RunOp(Range(2, 2, 1, DataType::kFloat32), {});
  EXPECT_EQ(empty["o"].shape(), Shape({0}));
  std::string msg = ErrorOf(Range(0, 5, 0, DataType::kInt64), {});
  EXPECT_NE(msg.find("step"), std::string::npos) << msg;
  msg = ErrorOf(Range(0, 5, -1, DataType::kInt64), {});
  EXPECT_NE(msg.find("points away from end=5"), std::string::npos) << msg;
  msg = ErrorOf(Range(0, 5, 0.5, DataType::kInt64), {});
  EXPECT_NE(msg.find("whole number"), std::string::npos) << msg;
}

TEST(LinspaceOp, ValuesAndErrors) {
  auto op = [](double a, double b, int64_t n, DataType dt) {
    return MakeOp("linspace", {}, {{"Out", {"o"}}},
                  {{"start", a},
                   {"stop", b},
                   {"num", n},
                   {"dtype", static_cast<int32_t>(dt)}});
  };
  auto out = RunOp(op(0, 10, 5, DataType::kFloat64), {});
  EXPECT_EQ(ToVector<double>(out["o"]),
            (std::vector<double>{0, 2.5, 5, 7.5, 10}));
  auto one = RunOp(op(3, 10, 1, DataType::kFloat32), {});
  EXPECT_EQ(ToVector<float>(one["o"]), (std::vector<float>{3}));
  std::string msg = ErrorOf(op(0, 1, 0, DataType::kFloat32), {});
  EXPECT_NE(msg.find("num=0"), std::string::npos) << msg;
  msg = ErrorOf(op(0, 1, 3, DataType::kInt32), {});
  EXPECT_NE(msg.find("float32 or float64"), std::string::npos) << msg;
}

// The batch-size-like draws are uniform_random's / gaussian_random's for the
// same seed and shape, and the same again when run again.
TEST(RandomBatchSizeLikeOps, DrawLikeTheShapedOps) {
  Tensor in = RandomTensor<float>({5, 2}, 0, 1, 1);
  for (bool gaussian : {false, true}) {
    const std::string like = gaussian ? "gaussian_random_batch_size_like"
                                      : "uniform_random_batch_size_like";
    const std::string plain = gaussian ? "gaussian_random" : "uniform_random";
    auto op = MakeOp(like, {{"Input", {"in"}}}, {{"Out", {"o"}}},
                     {{"shape", std::vector<int64_t>{3, -1, 4}},
                      {"input_dim_idx", int32_t{0}},
                      {"output_dim_idx", int32_t{1}},
                      {"seed", int32_t{7}}});
    auto a = RunOp(op, {{"in", in}});
    auto b = RunOp(op, {{"in", in}});
    auto c = RunOp(MakeOp(plain, {}, {{"Out", {"o"}}},
                          {{"shape", std::vector<int64_t>{3, 5, 4}},
                           {"seed", int32_t{7}}}),
                   {});
    EXPECT_EQ(a["o"].shape(), Shape({3, 5, 4}));
    EXPECT_EQ(ToVector<float>(a["o"]), ToVector<float>(b["o"])) << like;
    EXPECT_EQ(ToVector<float>(a["o"]), ToVector<float>(c["o"])) << like;
  }
  std::string msg = ErrorOf(MakeOp("uniform_random_batch_size_like",
                                   {{"Input", {"in"}}}, {{"Out", {"o"}}},
                                   {{"shape", std::vector<int64_t>{-1, 4}},
                                    {"input_dim_idx", int32_t{2}}}),
                            {{"in", in}});
  EXPECT_NE(msg.find("input_dim_idx=2"), std::string::npos) << msg;
}

TEST(CreationOps, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape({-1, 7}));
  InferShapeAtCompileTime(
      MakeOp("gaussian_random_batch_size_like", {{"Input", {"x"}}},
             {{"Out", {"g"}}}, {{"shape", std::vector<int64_t>{-1, 3}}}),
      block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "g")), Shape({-1, 3}));
  InferShapeAtCompileTime(
      MakeOp("fill_any_like", {{"X", {"x"}}}, {{"Out", {"f"}}}), block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "f")), Shape({-1, 7}));
  InferShapeAtCompileTime(Range(1, 4, 1, DataType::kInt64), block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "o")), Shape({3}));
}

}  // namespace
}  // namespace fluid
