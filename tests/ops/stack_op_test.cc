#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc Stack(int n, int axis) {
  std::vector<std::string> xs;
  for (int i = 0; i < n; ++i) xs.push_back("x" + std::to_string(i));
  return MakeOp("stack", {{"X", xs}}, {{"Y", {"y"}}}, {{"axis", axis}});
}

proto::OpDesc Unstack(int n, int axis) {
  std::vector<std::string> ys;
  for (int i = 0; i < n; ++i) ys.push_back("y" + std::to_string(i));
  return MakeOp("unstack", {{"X", {"x"}}}, {{"Y", ys}},
                {{"axis", axis}, {"num", n}});
}

// Y's element at multi-index idx (with the new dim at `axis`) is X[idx
// at axis] at idx without that dim.
TEST(StackOp, ForwardMatchesNaive) {
  const Shape piece({2, 3, 4});
  for (int axis : {0, 1, 2, 3, -1, -4}) {
    std::map<std::string, Tensor> in;
    for (int i = 0; i < 3; ++i)
      in["x" + std::to_string(i)] = RandomTensor<double>(piece, -1, 1, 7 + i);
    Tensor y = RunOp(Stack(3, axis), in)["y"];
    const int a = axis < 0 ? axis + 4 : axis;
    std::vector<int64_t> dims(piece.begin(), piece.end());
    dims.insert(dims.begin() + a, 3);
    ASSERT_EQ(y.shape(), Shape(dims)) << axis;
    std::vector<int64_t> idx(4, 0);
    for (int64_t n = 0; n < y.numel(); ++n) {
      std::vector<int64_t> rest = idx;
      const int64_t which = rest[a];
      rest.erase(rest.begin() + a);
      const int64_t flat = (rest[0] * 3 + rest[1]) * 4 + rest[2];
      EXPECT_EQ(y.data<double>()[n],
                in["x" + std::to_string(which)].data<double>()[flat]);
      for (int d = 3; d >= 0; --d) {
        if (++idx[d] < dims[d]) break;
        idx[d] = 0;
      }
    }
  }
}

TEST(StackOp, UnstackInvertsStack) {
  for (int axis : {0, 1, -1}) {
    std::map<std::string, Tensor> in;
    for (int i = 0; i < 3; ++i)
      in["x" + std::to_string(i)] = RandomTensor<double>({3, 2}, -1, 1, 20 + i);
    Tensor y = RunOp(Stack(3, axis), in)["y"];
    auto back = RunOp(Unstack(3, axis), {{"x", y}});
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(ToVector<double>(back["y" + std::to_string(i)]),
                ToVector<double>(in["x" + std::to_string(i)]))
          << axis;
  }
  auto ints =
      RunOp(Unstack(2, 1), {{"x", MakeTensor<int64_t>({2, 2}, {1, 2, 3, 4})}});
  EXPECT_EQ(ToVector<int64_t>(ints["y0"]), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(ToVector<int64_t>(ints["y1"]), (std::vector<int64_t>{2, 4}));
}

TEST(StackOp, Gradients) {
  for (int axis : {0, 1, -1}) {
    EXPECT_TRUE(CheckGradient(Stack(3, axis),
                              {{"x0", RandomTensor<double>({2, 3}, -1, 1, 1)},
                               {"x1", RandomTensor<double>({2, 3}, -1, 1, 2)},
                               {"x2", RandomTensor<double>({2, 3}, -1, 1, 3)}}))
        << axis;
    EXPECT_TRUE(CheckGradient(
        Unstack(3, axis),
        {{"x", RandomTensor<double>(axis == 0 ? Shape{3, 2, 2} : Shape{2, 3, 3},
                                    -1, 1, 4)}}))
        << axis;
  }
}

TEST(StackOp, Errors) {
  Tensor a = RandomTensor<double>({2, 3}, -1, 1, 1);
  Tensor b = RandomTensor<double>({3, 2}, -1, 1, 2);
  std::string msg = ErrorOf(Stack(2, 0), {{"x0", a}, {"x1", b}});
  EXPECT_NE(msg.find("'x1'"), std::string::npos) << msg;
  msg = ErrorOf(Stack(2, 3), {{"x0", a}, {"x1", a}});
  EXPECT_NE(msg.find("axis 3"), std::string::npos) << msg;
  msg = ErrorOf(Unstack(3, 0), {{"x", a}});
  EXPECT_NE(msg.find("num is 3"), std::string::npos) << msg;
  msg = ErrorOf(Unstack(2, 2), {{"x", a}});
  EXPECT_NE(msg.find("axis 2"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
