// sequence_expand against a naive repetition loop, with X with and without
// a LoD and sequences of Y of different lengths (0 included); its gradient
// by the numeric checker in float64.
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

proto::OpDesc Expand() {
  return MakeOp("sequence_expand", {{"X", {"x"}}, {"Y", {"y"}}},
                {{"Out", {"out"}}});
}

Tensor WithLoD(Tensor t, const LoD& lod) {
  t.set_lod(lod);
  return t;
}

// Out's rows and LoD by repeating X's sequences (rows) len_Y(i) times.
void NaiveExpand(const std::vector<double>& x, int64_t width, const LoD& x_lod,
                 const LoD& y_lod, std::vector<double>* out, LoD* out_lod) {
  *out_lod = {0};
  for (size_t i = 0; i + 1 < y_lod.size(); ++i) {
    const int64_t b = x_lod.empty() ? int64_t(i) : x_lod[i];
    const int64_t e = x_lod.empty() ? int64_t(i) + 1 : x_lod[i + 1];
    for (int64_t k = y_lod[i]; k < y_lod[i + 1]; ++k) {
      for (int64_t r = b; r < e; ++r)
        for (int64_t c = 0; c < width; ++c) out->push_back(x[r * width + c]);
      out_lod->push_back(out_lod->back() + (e - b));
    }
  }
  if (x_lod.empty()) *out_lod = y_lod;
}

TEST(SequenceExpandOp, MatchesNaiveWithAndWithoutXLoD) {
  const LoD y_lod{0, 2, 2, 5};  // Y: 3 sequences of 2, 0, 3 rows
  Tensor y = WithLoD(RandomTensor<double>({5, 1}, -1, 1, 1), y_lod);
  for (const LoD& x_lod : {LoD{}, LoD{0, 1, 4, 6}}) {
    const int64_t rows = x_lod.empty() ? 3 : 6;
    Tensor x = WithLoD(RandomTensor<double>({rows, 2}, -1, 1, 2), x_lod);
    Tensor out = RunOp(Expand(), {{"x", x}, {"y", y}})["out"];
    std::vector<double> want;
    LoD want_lod;
    NaiveExpand(ToVector<double>(x), 2, x_lod, y_lod, &want, &want_lod);
    EXPECT_EQ(ToVector<double>(out), want) << LoDToString(x_lod);
    EXPECT_EQ(out.lod(), want_lod) << LoDToString(x_lod);
    EXPECT_EQ(out.shape()[0] * 2, static_cast<int64_t>(want.size()));
  }
}

TEST(SequenceExpandOp, GradientSumsTheCopies) {
  uint64_t seed = 10;
  const LoD y_lod{0, 3, 3, 4};
  for (const LoD& x_lod : {LoD{}, LoD{0, 2, 2, 5}}) {
    const int64_t rows = x_lod.empty() ? 3 : 5;
    Tensor x = WithLoD(RandomTensor<double>({rows, 2}, -1, 1, seed++), x_lod);
    Tensor y = WithLoD(RandomTensor<double>({4, 1}, -1, 1, seed++), y_lod);
    testing::GradCheckOptions o;
    o.wrt = {"x"};
    EXPECT_TRUE(CheckGradient(Expand(), {{"x", x}, {"y", y}}, o))
        << LoDToString(x_lod);
  }
}

TEST(SequenceExpandOp, CountMismatchIsAnErrorNamingBoth) {
  Tensor x = RandomTensor<double>({2, 2}, -1, 1, 3);
  Tensor y = WithLoD(RandomTensor<double>({5, 1}, -1, 1, 4), {0, 2, 2, 5});
  std::string err = ErrorOf(Expand(), {{"x", x}, {"y", y}});
  EXPECT_NE(err.find("'x' holds 2 rows"), std::string::npos) << err;
  EXPECT_NE(err.find("'y' holds 3 sequences"), std::string::npos) << err;
}

// A Y of two levels (beam search's scores): ref_level -1 expands by the
// last level (row offsets), 0 by the first as its offsets stand, as Fluid
// reads them; a level Y lacks is an error naming Y's levels.
TEST(SequenceExpandOp, RefLevelPicksALevelOfAMultiLevelY) {
  Tensor y = RandomTensor<double>({5, 1}, -1, 1, 5);
  y.set_all_lod({{0, 1, 3}, {0, 2, 2, 5}});
  for (int level : {-1, 0, 1}) {
    const LoD ref = level == 0 ? LoD{0, 1, 3} : LoD{0, 2, 2, 5};
    const int64_t rows = LoDCount(ref);
    Tensor x = RandomTensor<double>({rows, 2}, -1, 1, 6);
    proto::OpDesc op = Expand();
    SetOpAttr(&op, "ref_level", int32_t{level});
    Tensor out = RunOp(op, {{"x", x}, {"y", y}})["out"];
    std::vector<double> want;
    LoD want_lod;
    NaiveExpand(ToVector<double>(x), 2, {}, ref, &want, &want_lod);
    EXPECT_EQ(ToVector<double>(out), want) << level;
    EXPECT_EQ(out.lod(), want_lod) << level;
  }
  proto::OpDesc op = Expand();
  SetOpAttr(&op, "ref_level", int32_t{2});
  const std::string err =
      ErrorOf(op, {{"x", RandomTensor<double>({2, 2}, -1, 1, 7)}, {"y", y}});
  EXPECT_NE(err.find("'ref_level' is 2 but Y 'y' has 2 LoD level(s)"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace fluid
