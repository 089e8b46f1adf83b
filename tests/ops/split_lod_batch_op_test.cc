// split_lod_batch against a loop over the sequences (each part holds its
// group's rows and offsets from 0, an empty sequence included), its
// gradient (the parts' rows back in order) by the fp64 numeric checker,
// and the errors: a sequence count that does not cut into num groups, an X
// without LoD, and Out's size against num.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::GradCheckOptions;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc Split(int num) {
  std::vector<std::string> outs;
  for (int k = 0; k < num; ++k) outs.push_back("out" + std::to_string(k));
  return MakeOp("split_lod_batch", {{"X", {"x"}}}, {{"Out", outs}},
                {{"num", int32_t{num}}});
}

TEST(SplitLoDBatchOp, PartsHoldWholeSequencesInOrder) {
  // 4 sequences of 2, 0, 3, 1 rows of width 2.
  const LoD lod{0, 2, 2, 5, 6};
  Tensor x = RandomTensor<double>({6, 2}, -1, 1, 1);
  x.set_lod(lod);
  const std::vector<double> all = ToVector<double>(x);
  for (int num : {1, 2, 4}) {
    SCOPED_TRACE(num);
    auto out = RunOp(Split(num), {{"x", x}});
    const int per = 4 / num;
    for (int k = 0; k < num; ++k) {
      const Tensor& part = out["out" + std::to_string(k)];
      const int64_t lo = lod[k * per], hi = lod[(k + 1) * per];
      LoD want{0};
      for (int s = k * per; s < (k + 1) * per; ++s)
        want.push_back(want.back() + lod[s + 1] - lod[s]);
      EXPECT_EQ(part.lod(), want);
      EXPECT_EQ(part.shape(), Shape({hi - lo, 2}));
      EXPECT_EQ(
          ToVector<double>(part),
          std::vector<double>(all.begin() + 2 * lo, all.begin() + 2 * hi));
    }
  }
}

TEST(SplitLoDBatchOp, GradientPutsThePartsBack) {
  Tensor x = RandomTensor<double>({6, 3}, -1, 1, 2);
  x.set_lod({0, 1, 3, 3, 6});
  GradCheckOptions o;
  o.wrt = {"x"};
  EXPECT_TRUE(CheckGradient(Split(2), {{"x", x}}, o));
}

TEST(SplitLoDBatchOp, Errors) {
  Tensor x = RandomTensor<double>({6, 2}, -1, 1, 3);
  x.set_lod({0, 2, 4, 6});
  std::string e = ErrorOf(Split(2), {{"x", x}});
  EXPECT_NE(e.find("holds 3 sequences, which do not cut into 2 equal groups"),
            std::string::npos)
      << e;
  e = ErrorOf(Split(2), {{"x", RandomTensor<double>({6, 2}, -1, 1, 3)}});
  EXPECT_NE(e.find("must be a batch of sequences"), std::string::npos) << e;
  proto::OpDesc two = Split(2);
  SetOpAttr(&two, "num", int32_t{3});
  e = ErrorOf(two, {{"x", x}});
  EXPECT_NE(e.find("attr num is 3 but Out has 2 vars"), std::string::npos) << e;
}

}  // namespace
}  // namespace fluid
