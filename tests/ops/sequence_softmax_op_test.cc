// sequence_softmax against a naive per-sequence softmax, its gradient by
// the numeric checker in float64 through sequences of different lengths.
#include <gtest/gtest.h>

#include <cmath>
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
using testing::TensorMap;
using testing::ToVector;

proto::OpDesc SequenceSoftmax() {
  return MakeOp("sequence_softmax", {{"X", {"x"}}}, {{"Out", {"out"}}});
}

TEST(SequenceSoftmaxOp, MatchesNaivePerSequence) {
  const LoD lod{0, 2, 2, 7, 8};
  for (Shape s : {Shape({8, 1}), Shape({8})}) {
    Tensor x = RandomTensor<double>(s, -30, 30, 1);
    x.set_lod(lod);
    Tensor out = RunOp(SequenceSoftmax(), {{"x", x}})["out"];
    ASSERT_EQ(out.shape(), s);
    EXPECT_EQ(out.lod(), lod);
    auto xv = ToVector<double>(x);
    auto got = ToVector<double>(out);
    for (size_t i = 0; i + 1 < lod.size(); ++i) {
      long double mx = -INFINITY, sum = 0;
      for (int64_t r = lod[i]; r < lod[i + 1]; ++r)
        mx = std::max<long double>(mx, xv[r]);
      for (int64_t r = lod[i]; r < lod[i + 1]; ++r) sum += std::exp(xv[r] - mx);
      for (int64_t r = lod[i]; r < lod[i + 1]; ++r)
        EXPECT_NEAR(got[r], double(std::exp(xv[r] - mx) / sum), 1e-14) << r;
    }
  }
}

TEST(SequenceSoftmaxOp, GradientThroughDifferentLengths) {
  uint64_t seed = 5;
  for (const LoD& lod : {LoD{0, 1, 4, 4, 6}, LoD{0, 6}}) {
    Tensor x = RandomTensor<double>({6, 1}, -2, 2, seed++);
    x.set_lod(lod);
    EXPECT_TRUE(CheckGradient(SequenceSoftmax(), {{"x", x}}))
        << LoDToString(lod);
  }
}

TEST(SequenceSoftmaxOp, WideRowsAndMissingLoDAreErrors) {
  Tensor wide = RandomTensor<double>({4, 2}, -1, 1, 2);
  wide.set_lod({0, 4});
  std::string err = ErrorOf(SequenceSoftmax(), {{"x", wide}});
  EXPECT_NE(err.find("one value per row"), std::string::npos) << err;
  Tensor plain = RandomTensor<double>({4, 1}, -1, 1, 2);
  err = ErrorOf(SequenceSoftmax(), {{"x", plain}});
  EXPECT_NE(err.find("LoD"), std::string::npos) << err;
}

}  // namespace
}  // namespace fluid
