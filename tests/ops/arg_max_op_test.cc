#include <gtest/gtest.h>

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

proto::OpDesc ArgMax(int64_t axis) {
  return MakeOp("arg_max", {{"X", {"x"}}}, {{"Out", {"out"}}},
                {{"axis", axis}});
}

// Over every position of the other dims, a scan along `axis` by multi-index.
std::vector<int64_t> NaiveArgMax(const Tensor& x, int axis) {
  const Shape& s = x.shape();
  const double* d = x.data<double>();
  std::vector<int64_t> out;
  std::vector<int64_t> stride(s.rank(), 1);
  for (int i = s.rank() - 2; i >= 0; --i) stride[i] = stride[i + 1] * s[i + 1];
  for (int64_t flat = 0; flat < x.numel(); ++flat) {
    if ((flat / stride[axis]) % s[axis] != 0) continue;  // one per line
    int64_t best = 0;
    for (int64_t c = 1; c < s[axis]; ++c)
      if (d[flat + c * stride[axis]] > d[flat + best * stride[axis]]) best = c;
    out.push_back(best);
  }
  return out;
}

TEST(ArgMaxOp, MatchesNaive) {
  Tensor x = RandomTensor<double>({3, 4, 5}, -1, 1, 1);
  for (int axis : {0, 1, 2, -1}) {
    Tensor out = RunOp(ArgMax(axis), {{"x", x}})["out"];
    const int a = axis < 0 ? axis + 3 : axis;
    Shape want;
    for (int d = 0; d < 3; ++d)
      if (d != a) want.push_back(x.shape()[d]);
    EXPECT_EQ(out.shape(), want);
    EXPECT_EQ(ToVector<int64_t>(out), NaiveArgMax(x, a)) << axis;
  }
}

TEST(ArgMaxOp, FirstAmongEqualAndOneDim) {
  Tensor x = MakeTensor<float>({5}, {1, 3, 2, 3, 0});
  Tensor out = RunOp(ArgMax(0), {{"x", x}})["out"];
  EXPECT_EQ(out.shape(), Shape({1}));
  EXPECT_EQ(ToVector<int64_t>(out), std::vector<int64_t>{1});
}

TEST(ArgMaxOp, IsNotDifferentiable) {
  EXPECT_FALSE(OpRegistry::Global().Get("arg_max").has_grad());
}

TEST(ArgMaxOp, BadAxisNamesX) {
  std::string msg =
      ErrorOf(ArgMax(2), {{"x", RandomTensor<float>({2, 3}, -1, 1, 2)}});
  EXPECT_NE(msg.find("arg_max: axis 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
