// sequence_conv against a naive per-sequence window loop (zero padding at
// each sequence's ends, windows before, around and after the row), its
// gradients (X and Filter) by the numeric checker in float64 through
// sequences of different lengths.
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
using testing::TensorMap;
using testing::ToVector;

proto::OpDesc Conv(int length, int start) {
  return MakeOp(
      "sequence_conv", {{"X", {"x"}}, {"Filter", {"w"}}}, {{"Out", {"out"}}},
      {{"contextLength", int32_t{length}}, {"contextStart", int32_t{start}}});
}

const LoD kLoD{0, 3, 4, 4, 8};  // lengths 3, 1, 0, 4

TEST(SequenceConvOp, MatchesNaiveWindows) {
  const int64_t d = 2, m = 3;
  uint64_t seed = 1;
  for (auto [length, start] : {std::pair{3, -1}, {2, 0}, {3, -3}, {1, 0}}) {
    Tensor x = RandomTensor<double>({8, d}, -1, 1, seed++);
    x.set_lod(kLoD);
    Tensor w = RandomTensor<double>({length * d, m}, -1, 1, seed++);
    Tensor out = RunOp(Conv(length, start), {{"x", x}, {"w", w}})["out"];
    ASSERT_EQ(out.shape(), Shape({8, m}));
    EXPECT_EQ(out.lod(), kLoD);
    auto xv = ToVector<double>(x), wv = ToVector<double>(w);
    auto got = ToVector<double>(out);
    for (size_t i = 0; i + 1 < kLoD.size(); ++i)
      for (int64_t r = kLoD[i]; r < kLoD[i + 1]; ++r)
        for (int64_t f = 0; f < m; ++f) {
          double want = 0;
          for (int64_t j = 0; j < length; ++j) {
            const int64_t s = r + start + j;
            if (s < kLoD[i] || s >= kLoD[i + 1]) continue;
            for (int64_t c = 0; c < d; ++c)
              want += xv[s * d + c] * wv[(j * d + c) * m + f];
          }
          EXPECT_NEAR(got[r * m + f], want, 1e-13)
              << "window " << length << " from " << start << " row " << r;
        }
  }
}

TEST(SequenceConvOp, GradientsThroughDifferentLengths) {
  uint64_t seed = 20;
  for (auto [length, start] : {std::pair{3, -1}, {2, 1}}) {
    Tensor x = RandomTensor<double>({8, 2}, -1, 1, seed++);
    x.set_lod(kLoD);
    Tensor w = RandomTensor<double>({length * 2, 3}, -1, 1, seed++);
    EXPECT_TRUE(CheckGradient(Conv(length, start), {{"x", x}, {"w", w}}))
        << length << " from " << start;
  }
}

TEST(SequenceConvOp, FilterOfTheWrongShapeIsAnError) {
  Tensor x = RandomTensor<double>({8, 2}, -1, 1, 3);
  x.set_lod(kLoD);
  std::string err = ErrorOf(
      Conv(3, -1), {{"x", x}, {"w", RandomTensor<double>({4, 3}, -1, 1, 4)}});
  EXPECT_NE(err.find("Filter 'w'"), std::string::npos) << err;
  EXPECT_NE(err.find("[6, filters]"), std::string::npos) << err;
}

}  // namespace
}  // namespace fluid
