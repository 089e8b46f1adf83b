#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc FillConstant(const std::vector<int64_t>& shape, float value,
                           DataType dtype) {
  return MakeOp("fill_constant", {}, {{"Out", {"out"}}},
                {{"shape", shape},
                 {"value", value},
                 {"dtype", static_cast<int32_t>(dtype)}});
}

template <typename T>
void ExpectFilled(const Tensor& t, const Shape& shape, T value) {
  ASSERT_EQ(t.dtype(), DataTypeOf<T>::value);
  ASSERT_EQ(t.shape(), shape);
  for (T v : ToVector<T>(t)) ASSERT_EQ(v, value);
}

// Every dtype, of the requested shape, holding the value (cast as the
// kernel documents: from float).
TEST(FillConstantOp, FillsEveryDtype) {
  const Shape s{2, 3};
  ExpectFilled<float>(
      RunOp(FillConstant({2, 3}, 1.5f, DataType::kFloat32), {})["out"], s,
      1.5f);
  ExpectFilled<double>(
      RunOp(FillConstant({2, 3}, -0.25f, DataType::kFloat64), {})["out"], s,
      -0.25);
  ExpectFilled<int32_t>(
      RunOp(FillConstant({2, 3}, 7.0f, DataType::kInt32), {})["out"], s, 7);
  ExpectFilled<int64_t>(
      RunOp(FillConstant({2, 3}, -3.0f, DataType::kInt64), {})["out"], s,
      int64_t{-3});
  // The 16-bit floats hold the value rounded (1.5 and -0.25 are exact).
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16}) {
    Tensor out = RunOp(FillConstant({2, 3}, -0.25f, t), {})["out"];
    ASSERT_EQ(out.dtype(), t);
    ASSERT_EQ(out.shape(), s);
    for (int64_t i = 0; i < out.numel(); ++i)
      EXPECT_EQ(t == DataType::kFloat16 ? ToFloat(out.data<float16>()[i])
                                        : ToFloat(out.data<bfloat16>()[i]),
                -0.25f);
  }
}

TEST(FillConstantOp, ScalarsAndEmptyShapes) {
  ExpectFilled<float>(
      RunOp(FillConstant({1}, 1.0f, DataType::kFloat32), {})["out"], Shape{1},
      1.0f);
  Tensor empty =
      RunOp(FillConstant({0, 4}, 2.0f, DataType::kFloat32), {})["out"];
  EXPECT_EQ(empty.shape(), Shape({0, 4}));
  EXPECT_EQ(empty.numel(), 0);
}

// The shape must be known when the program is built: a -1 is refused with
// the output's name.
TEST(FillConstantOp, UnknownDimIsRefused) {
  std::string msg =
      ErrorOf(FillConstant({-1, 3}, 1.0f, DataType::kFloat32), {});
  EXPECT_NE(msg.find("must be fully known"), std::string::npos) << msg;
  EXPECT_NE(msg.find("out"), std::string::npos) << msg;
}

TEST(FillZerosLikeOp, ZerosShapedLikeX) {
  Tensor x = RandomTensor<double>(Shape{3, 1, 2}, -1, 1, 5);
  Tensor out =
      RunOp(MakeOp("fill_zeros_like", {{"X", {"x"}}}, {{"Out", {"out"}}}),
            {{"x", x}})["out"];
  ExpectFilled<double>(out, Shape{3, 1, 2}, 0.0);
  // 16-bit zeros are all-zero bits.
  Tensor h =
      RunOp(MakeOp("cast", {{"X", {"x"}}}, {{"Out", {"h"}}},
                   {{"in_dtype", int32_t{1}}, {"out_dtype", int32_t{5}}}),
            {{"x", x}})["h"];
  Tensor zeros =
      RunOp(MakeOp("fill_zeros_like", {{"X", {"h"}}}, {{"Out", {"out"}}}),
            {{"h", h}})["out"];
  ASSERT_EQ(zeros.dtype(), DataType::kBFloat16);
  for (int64_t i = 0; i < zeros.numel(); ++i)
    EXPECT_EQ(zeros.data<bfloat16>()[i].x, 0);
}

}  // namespace
}  // namespace fluid
