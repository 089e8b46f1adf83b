// The compare ops (less_than, ..., not_equal) and the logical ops against
// naive loops; broadcasting at axis; bool outputs; the error cases; and
// increment on int32/int64 counters in place (a while loop's counter).
#include <gtest/gtest.h>

#include <functional>

#include "src/framework/op_registry.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

struct CompareCase {
  const char* type;
  std::function<bool(double, double)> want;
};

const CompareCase kCompareCases[] = {
    {"less_than", [](double a, double b) { return a < b; }},
    {"less_equal", [](double a, double b) { return a <= b; }},
    {"greater_than", [](double a, double b) { return a > b; }},
    {"greater_equal", [](double a, double b) { return a >= b; }},
    {"equal", [](double a, double b) { return a == b; }},
    {"not_equal", [](double a, double b) { return a != b; }},
};

proto::OpDesc Compare(const std::string& type, int axis = -1) {
  return MakeOp(type, {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}},
                {{"axis", axis}});
}

// Small integers so that ties occur.
template <typename T>
Tensor Ints(const Shape& shape, uint64_t seed) {
  Tensor r = RandomTensor<double>(shape, -3, 3, seed);
  std::vector<T> v;
  for (double d : ToVector<double>(r)) v.push_back(static_cast<T>(int(d)));
  return MakeTensor<T>(shape, v);
}

template <typename T>
void ExpectSameShapeMatches() {
  Tensor x = Ints<T>({4, 5}, 1), y = Ints<T>({4, 5}, 2);
  auto xs = ToVector<T>(x), ys = ToVector<T>(y);
  for (const CompareCase& c : kCompareCases) {
    Tensor out = RunOp(Compare(c.type), {{"x", x}, {"y", y}})["out"];
    ASSERT_EQ(out.dtype(), DataType::kBool) << c.type;
    ASSERT_EQ(out.shape(), x.shape()) << c.type;
    auto got = ToVector<bool>(out);
    for (size_t i = 0; i < xs.size(); ++i)
      EXPECT_EQ(got[i], c.want(double(xs[i]), double(ys[i])))
          << c.type << " at " << i;
  }
}

TEST(CompareOps, SameShapeEveryDtype) {
  ExpectSameShapeMatches<float>();
  ExpectSameShapeMatches<double>();
  ExpectSameShapeMatches<int32_t>();
  ExpectSameShapeMatches<int64_t>();
}

TEST(CompareOps, BroadcastsYAtAxis) {
  Tensor x = Ints<int64_t>({2, 3, 4}, 3), y = Ints<int64_t>({3}, 4);
  auto xs = ToVector<int64_t>(x), ys = ToVector<int64_t>(y);
  for (const CompareCase& c : kCompareCases) {
    auto got =
        ToVector<bool>(RunOp(Compare(c.type, 1), {{"x", x}, {"y", y}})["out"]);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 4; ++k) {
          const int64_t idx = (i * 3 + j) * 4 + k;
          EXPECT_EQ(got[idx], c.want(double(xs[idx]), double(ys[j])))
              << c.type << " at " << idx;
        }
  }
}

TEST(CompareOps, ScalarYAgainstCounter) {
  // The loop test of a while: i < n with both int64 [1].
  auto out = RunOp(Compare("less_than"),
                   {{"x", MakeTensor<int64_t>({1}, {4})},
                    {"y", MakeTensor<int64_t>({1}, {5})}})["out"];
  EXPECT_EQ(ToVector<bool>(out), std::vector<bool>{true});
}

TEST(CompareOps, ErrorsNameTheCause) {
  std::string msg =
      ErrorOf(Compare("less_than"), {{"x", MakeTensor<float>({2}, {1, 2})},
                                     {"y", MakeTensor<int64_t>({2}, {1, 2})}});
  EXPECT_NE(msg.find("less_than"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int64"), std::string::npos) << msg;
  msg = ErrorOf(Compare("equal"), {{"x", RandomTensor<float>({2, 3}, 0, 1, 1)},
                                   {"y", RandomTensor<float>({4}, 0, 1, 2)}});
  EXPECT_NE(msg.find("Y 'y'"), std::string::npos) << msg;
  msg = ErrorOf(Compare("equal", 5), {{"x", MakeTensor<float>({2}, {1, 2})},
                                      {"y", MakeTensor<float>({2}, {1, 2})}});
  EXPECT_NE(msg.find("axis"), std::string::npos) << msg;
}

proto::OpDesc Logical(const std::string& type) {
  if (type == "logical_not")
    return MakeOp(type, {{"X", {"x"}}}, {{"Out", {"out"}}});
  return MakeOp(type, {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}});
}

TEST(LogicalOps, MatchTruthTables) {
  Tensor x = MakeTensor<bool>({2, 2}, {false, false, true, true});
  Tensor y = MakeTensor<bool>({2, 2}, {false, true, false, true});
  auto run = [&](const std::string& type) {
    return ToVector<bool>(RunOp(Logical(type), {{"x", x}, {"y", y}})["out"]);
  };
  EXPECT_EQ(run("logical_and"), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(run("logical_or"), (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(run("logical_xor"), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(run("logical_not"), (std::vector<bool>{true, true, false, false}));
}

TEST(LogicalOps, ErrorsNameTheCause) {
  std::string msg = ErrorOf(Logical("logical_and"),
                            {{"x", MakeTensor<float>({2}, {1, 0})},
                             {"y", MakeTensor<bool>({2}, {true, false})}});
  EXPECT_NE(msg.find("bool"), std::string::npos) << msg;
  EXPECT_NE(msg.find("X 'x'"), std::string::npos) << msg;
  msg = ErrorOf(Logical("logical_or"),
                {{"x", MakeTensor<bool>({2}, {true, false})},
                 {"y", MakeTensor<bool>({3}, {true, false, true})}});
  EXPECT_NE(msg.find("same shape"), std::string::npos) << msg;
  msg = ErrorOf(Logical("logical_not"), {{"x", MakeTensor<int32_t>({1}, {1})}});
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
}

TEST(IncrementOp, IntegerCountersInPlace) {
  auto op =
      MakeOp("increment", {{"X", {"i"}}}, {{"Out", {"i"}}}, {{"step", 1.0f}});
  auto out = RunOp(op, {{"i", MakeTensor<int64_t>({1}, {41})}});
  EXPECT_EQ(ToVector<int64_t>(out["i"]), std::vector<int64_t>{42});
  out = RunOp(op, {{"i", MakeTensor<int32_t>({1}, {-1})}});
  EXPECT_EQ(ToVector<int32_t>(out["i"]), std::vector<int32_t>{0});
  out = RunOp(op, {{"i", MakeTensor<float>({1}, {0.5f})}});
  EXPECT_EQ(ToVector<float>(out["i"]), std::vector<float>{1.5f});
}

}  // namespace
}  // namespace fluid
