#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc AssignValue(DataType dtype, const std::vector<int64_t>& shape,
                          const std::string& slot, const Attribute& values) {
  return MakeOp("assign_value", {}, {{"Out", {"out"}}},
                {{"shape", shape},
                 {"dtype", static_cast<int32_t>(dtype)},
                 {slot, values}});
}

TEST(AssignValueOp, EveryDtype) {
  Tensor f = RunOp(AssignValue(DataType::kFloat32, {2, 2}, "fp32_values",
                               std::vector<float>{1.5f, -2, 0.1f, 3}),
                   {})["out"];
  EXPECT_EQ(f.shape(), Shape({2, 2}));
  EXPECT_EQ(ToVector<float>(f), (std::vector<float>{1.5f, -2, 0.1f, 3}));
  Tensor i = RunOp(AssignValue(DataType::kInt32, {3}, "int32_values",
                               std::vector<int32_t>{7, -8, 9}),
                   {})["out"];
  EXPECT_EQ(ToVector<int32_t>(i), (std::vector<int32_t>{7, -8, 9}));
  Tensor l = RunOp(AssignValue(DataType::kInt64, {1, 2}, "int64_values",
                               std::vector<int64_t>{1LL << 40, -1}),
                   {})["out"];
  EXPECT_EQ(l.shape(), Shape({1, 2}));
  EXPECT_EQ(ToVector<int64_t>(l), (std::vector<int64_t>{1LL << 40, -1}));
}

TEST(AssignValueOp, CountMustMatchShape) {
  std::string msg =
      ErrorOf(AssignValue(DataType::kFloat32, {2, 2}, "fp32_values",
                          std::vector<float>{1, 2, 3}),
              {});
  EXPECT_NE(msg.find("assign_value: 3 values for Out 'out' of shape [2, 2]"),
            std::string::npos)
      << msg;
}

TEST(AssignValueOp, IsNotDifferentiable) {
  EXPECT_FALSE(OpRegistry::Global().Get("assign_value").has_grad());
}

}  // namespace
}  // namespace fluid
