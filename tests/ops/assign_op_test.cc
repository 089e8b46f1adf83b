#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc Assign() {
  return MakeOp("assign", {{"X", {"x"}}}, {{"Out", {"out"}}});
}

TEST(AssignOp, CopiesEveryDtype) {
  Tensor f = RandomTensor<double>({3, 4}, -1, 1, 1);
  Tensor out = RunOp(Assign(), {{"x", f}})["out"];
  EXPECT_EQ(out.shape(), f.shape());
  EXPECT_EQ(ToVector<double>(out), ToVector<double>(f));
  EXPECT_NE(out.raw_data(), f.raw_data());
  Tensor i = MakeTensor<int64_t>({2, 2}, {1, -2, 3, 1LL << 40});
  EXPECT_EQ(ToVector<int64_t>(RunOp(Assign(), {{"x", i}})["out"]),
            ToVector<int64_t>(i));
  Tensor j = MakeTensor<int32_t>({3}, {7, 8, -9});
  EXPECT_EQ(ToVector<int32_t>(RunOp(Assign(), {{"x", j}})["out"]),
            ToVector<int32_t>(j));
  Tensor g = RandomTensor<float>({5}, -1, 1, 2);
  EXPECT_EQ(ToVector<float>(RunOp(Assign(), {{"x", g}})["out"]),
            ToVector<float>(g));
}

TEST(AssignOp, Gradient) {
  EXPECT_TRUE(
      CheckGradient(Assign(), {{"x", RandomTensor<double>({2, 3}, -1, 1, 3)}}));
}

}  // namespace
}  // namespace fluid
