// sequence_pool against a naive loop over the sequences, for every pool
// type, with sequences of different lengths (an empty one included); its
// gradient by the numeric checker in float64; errors for a missing LoD.
#include <gtest/gtest.h>

#include <algorithm>
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

const char* const kPoolTypes[] = {"AVERAGE", "SUM",  "SQRT",
                                  "MAX",     "LAST", "FIRST"};

proto::OpDesc Pool(const std::string& type, float pad = 0.0f) {
  return MakeOp("sequence_pool", {{"X", {"x"}}},
                {{"Out", {"out"}}, {"MaxIndex", {"index"}}},
                {{"pooltype", type}, {"pad_value", pad}});
}

Tensor Sequences(const Shape& shape, const LoD& lod, uint64_t seed) {
  Tensor x = RandomTensor<double>(shape, -2, 2, seed);
  x.set_lod(lod);
  return x;
}

// Pools column c of rows [b, e) as the op's documentation says.
double NaivePool(const std::string& type, const std::vector<double>& x,
                 int64_t width, int64_t c, int64_t b, int64_t e, double pad) {
  if (e == b) return pad;
  if (type == "FIRST") return x[b * width + c];
  if (type == "LAST") return x[(e - 1) * width + c];
  double sum = 0, mx = -INFINITY;
  for (int64_t r = b; r < e; ++r) {
    sum += x[r * width + c];
    mx = std::max(mx, x[r * width + c]);
  }
  if (type == "MAX") return mx;
  if (type == "AVERAGE") return sum / double(e - b);
  if (type == "SQRT") return sum / std::sqrt(double(e - b));
  return sum;
}

TEST(SequencePoolOp, EveryTypeMatchesNaive) {
  const LoD lod{0, 3, 3, 4, 9};  // lengths 3, 0, 1, 5
  uint64_t seed = 1;
  for (const char* type : kPoolTypes) {
    for (Shape s : {Shape({9, 4}), Shape({9, 2, 3}), Shape({9})}) {
      Tensor x = Sequences(s, lod, seed++);
      TensorMap out = RunOp(Pool(type, -7.5f), {{"x", x}});
      Shape want_shape = s;
      want_shape[0] = 4;
      ASSERT_EQ(out["out"].shape(), want_shape) << type;
      EXPECT_FALSE(out["out"].has_lod()) << type;
      const int64_t width = x.numel() / 9;
      auto xv = ToVector<double>(x);
      auto got = ToVector<double>(out["out"]);
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t c = 0; c < width; ++c)
          EXPECT_NEAR(got[i * width + c],
                      NaivePool(type, xv, width, c, lod[i], lod[i + 1], -7.5),
                      1e-14)
              << type << " " << s << " sequence " << i << " column " << c;
    }
  }
}

TEST(SequencePoolOp, MaxIndexNamesTheRowOfEachMaximum) {
  Tensor x =
      testing::MakeTensor<double>({5, 2}, {1, 9, 4, 2, 3, 3, 0, 0, 8, 1});
  x.set_lod({0, 3, 3, 5});
  TensorMap out = RunOp(Pool("MAX"), {{"x", x}});
  EXPECT_EQ(ToVector<int32_t>(out["index"]),
            (std::vector<int32_t>{1, 0, -1, -1, 4, 4}));
  EXPECT_EQ(ToVector<double>(out["out"]),
            (std::vector<double>{4, 9, 0, 0, 8, 1}));
}

TEST(SequencePoolOp, GradientOfEveryTypeThroughDifferentLengths) {
  uint64_t seed = 10;
  for (const char* type : kPoolTypes) {
    for (const LoD& lod : {LoD{0, 1, 4, 4, 6}, LoD{0, 6}, LoD{0, 2, 3, 6}}) {
      Tensor x = Sequences({6, 3}, lod, seed++);
      testing::GradCheckOptions o;
      o.of = {"out"};
      EXPECT_TRUE(CheckGradient(Pool(type), {{"x", x}}, o))
          << type << " lod " << LoDToString(lod);
    }
  }
}

TEST(SequencePoolOp, FloatMatchesDouble) {
  Tensor xd = Sequences({7, 5}, {0, 2, 7}, 3);
  Tensor xf;
  xf.mutable_data<float>(xd.shape());
  for (int64_t i = 0; i < xd.numel(); ++i)
    xf.data<float>()[i] = static_cast<float>(xd.data<double>()[i]);
  xf.set_lod(xd.lod());
  for (const char* type : kPoolTypes) {
    auto d = ToVector<double>(RunOp(Pool(type), {{"x", xd}})["out"]);
    auto f = ToVector<float>(RunOp(Pool(type), {{"x", xf}})["out"]);
    for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(f[i], d[i], 1e-5) << type;
  }
}

TEST(SequencePoolOp, InputWithoutLoDIsAnErrorNamingIt) {
  Tensor x = RandomTensor<double>({4, 2}, -1, 1, 5);
  std::string err = ErrorOf(Pool("SUM"), {{"x", x}});
  EXPECT_NE(err.find("sequence_pool"), std::string::npos) << err;
  EXPECT_NE(err.find("'x'"), std::string::npos) << err;
  EXPECT_NE(err.find("LoD"), std::string::npos) << err;
}

TEST(SequencePoolOp, UnknownPoolTypeIsAnError) {
  Tensor x = Sequences({4, 2}, {0, 4}, 6);
  std::string err = ErrorOf(Pool("MEDIAN"), {{"x", x}});
  EXPECT_NE(err.find("pooltype"), std::string::npos) << err;
  EXPECT_NE(err.find("MEDIAN"), std::string::npos) << err;
}

// X of two levels (paragraphs -> sentences -> words): pooling the words
// gives one row per sentence with the paragraphs' level on it, and pooling
// that gives one row per paragraph, equal to summing each paragraph's
// words at once.
TEST(SequencePoolOp, TwoLevelsPoolTwiceIntoTheUpperLevel) {
  Tensor x = RandomTensor<double>({6, 2}, -2, 2, 9);
  x.set_all_lod({{0, 2, 3}, {0, 1, 4, 6}});
  Tensor sentences = RunOp(Pool("SUM"), {{"x", x}})["out"];
  EXPECT_EQ(sentences.shape(), Shape({3, 2}));
  EXPECT_EQ(sentences.all_lod(), LoDLevels({{0, 2, 3}}));
  Tensor paragraphs = RunOp(Pool("SUM"), {{"x", sentences}})["out"];
  EXPECT_FALSE(paragraphs.has_lod());
  Tensor flat = x;
  flat.set_lod({0, 4, 6});  // the paragraphs' rows
  const std::vector<double> want =
      ToVector<double>(RunOp(Pool("SUM"), {{"x", flat}})["out"]);
  const std::vector<double> got = ToVector<double>(paragraphs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12);
}

}  // namespace
}  // namespace fluid
