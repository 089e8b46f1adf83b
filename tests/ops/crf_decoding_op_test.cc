// crf_decoding against the brute-force best of every tag path of tiny
// sequences, with Label (1 where the path equals it), padded mode, and
// the errors.
#include <gtest/gtest.h>

#include <cmath>
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

proto::OpDesc Decode(bool with_label = false, bool padded = false) {
  std::vector<std::pair<std::string, std::vector<std::string>>> in{
      {"Emission", {"x"}}, {"Transition", {"w"}}};
  if (with_label) in.push_back({"Label", {"label"}});
  if (padded) in.push_back({"Length", {"length"}});
  return MakeOp("crf_decoding", in, {{"ViterbiPath", {"path"}}});
}

// The highest-scoring path of rows [r, r + len) by enumeration.
std::vector<int64_t> BestPath(const std::vector<double>& x,
                              const std::vector<double>& w, int64_t d,
                              int64_t r, int64_t len) {
  std::vector<int64_t> path(len, 0), best;
  double best_score = -INFINITY;
  if (len == 0) return best;
  while (true) {
    double s = w[path[0]] + w[d + path[len - 1]];
    for (int64_t t = 0; t < len; ++t) s += x[(r + t) * d + path[t]];
    for (int64_t t = 1; t < len; ++t) s += w[(2 + path[t - 1]) * d + path[t]];
    if (s > best_score) {
      best_score = s;
      best = path;
    }
    int64_t k = 0;
    while (k < len && ++path[k] == d) path[k++] = 0;
    if (k == len) break;
  }
  return best;
}

TEST(CrfDecodingOp, EqualsBruteForceArgmax) {
  const int64_t d = 3;
  const LoD lod{0, 1, 4, 4, 6, 10};
  for (uint64_t seed : {1, 2, 3}) {
    Tensor x = RandomTensor<double>({lod.back(), d}, -2, 2, seed);
    x.set_lod(lod);
    Tensor w = RandomTensor<double>({d + 2, d}, -2, 2, seed + 10);
    auto out = RunOp(Decode(), {{"x", x}, {"w", w}});
    ASSERT_EQ(out["path"].shape(), Shape({lod.back(), 1}));
    EXPECT_EQ(out["path"].lod(), lod);
    auto path = ToVector<int64_t>(out["path"]);
    auto xv = ToVector<double>(x), wv = ToVector<double>(w);
    for (size_t i = 0; i + 1 < lod.size(); ++i) {
      auto want = BestPath(xv, wv, d, lod[i], lod[i + 1] - lod[i]);
      EXPECT_EQ(std::vector<int64_t>(path.begin() + lod[i],
                                     path.begin() + lod[i + 1]),
                want)
          << "seed " << seed << " sequence " << i;
    }
    // With Label: 1 where the path equals it.
    std::vector<int64_t> label(path);
    for (size_t k = 0; k < label.size(); k += 2) label[k] = (label[k] + 1) % d;
    auto marked = RunOp(
        Decode(true), {{"x", x},
                       {"w", w},
                       {"label", MakeTensor<int64_t>({lod.back(), 1}, label)}});
    auto m = ToVector<int64_t>(marked["path"]);
    for (size_t k = 0; k < m.size(); ++k) EXPECT_EQ(m[k], k % 2 ? 1 : 0) << k;
  }
}

TEST(CrfDecodingOp, PaddedMode) {
  const int64_t d = 3, s = 4;
  Tensor x = RandomTensor<double>({2, s, d}, -2, 2, 7);
  Tensor w = RandomTensor<double>({d + 2, d}, -2, 2, 8);
  auto out =
      RunOp(Decode(false, true),
            {{"x", x}, {"w", w}, {"length", MakeTensor<int64_t>({2}, {3, 0})}});
  ASSERT_EQ(out["path"].shape(), Shape({2, s}));
  auto path = ToVector<int64_t>(out["path"]);
  auto want = BestPath(ToVector<double>(x), ToVector<double>(w), d, 0, 3);
  EXPECT_EQ(std::vector<int64_t>(path.begin(), path.begin() + 3), want);
  for (int k = 3; k < 2 * s; ++k) EXPECT_EQ(path[k], 0) << k;  // padding
}

TEST(CrfDecodingOp, ErrorsNameTheCause) {
  Tensor x = RandomTensor<double>({4, 3}, -1, 1, 1);
  x.set_lod({0, 4});
  Tensor w = RandomTensor<double>({3, 3}, -1, 1, 2);
  std::string err = ErrorOf(Decode(), {{"x", x}, {"w", w}});
  EXPECT_NE(err.find("Transition"), std::string::npos) << err;
  EXPECT_NE(err.find("[5, 3]"), std::string::npos) << err;
  Tensor plain = RandomTensor<double>({4, 3}, -1, 1, 1);
  err = ErrorOf(Decode(),
                {{"x", plain}, {"w", RandomTensor<double>({5, 3}, -1, 1, 2)}});
  EXPECT_NE(err.find("LoD"), std::string::npos) << err;
  Tensor label = MakeTensor<int64_t>({3, 1}, {0, 1, 2});
  err = ErrorOf(Decode(true), {{"x", x},
                               {"w", RandomTensor<double>({5, 3}, -1, 1, 2)},
                               {"label", label}});
  EXPECT_NE(err.find("Label"), std::string::npos) << err;
}

}  // namespace
}  // namespace fluid
