// edit_distance against a naive recursive Levenshtein and hand cases, in
// LoD and padded mode, normalized or not; sequence_erase; the errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::MakeTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc Distance(bool normalized, bool padded = false) {
  std::vector<std::pair<std::string, std::vector<std::string>>> in{
      {"Hyps", {"h"}}, {"Refs", {"r"}}};
  if (padded) {
    in.push_back({"HypsLength", {"hl"}});
    in.push_back({"RefsLength", {"rl"}});
  }
  return MakeOp("edit_distance", in, {{"Out", {"out"}}, {"SequenceNum", {"n"}}},
                {{"normalized", normalized}});
}

// The textbook recursion, exponential but fine for a few tokens.
int64_t Naive(const std::vector<int64_t>& a, size_t i,
              const std::vector<int64_t>& b, size_t j) {
  if (i == a.size()) return static_cast<int64_t>(b.size() - j);
  if (j == b.size()) return static_cast<int64_t>(a.size() - i);
  const int64_t sub = Naive(a, i + 1, b, j + 1) + (a[i] == b[j] ? 0 : 1);
  return std::min({sub, Naive(a, i + 1, b, j) + 1, Naive(a, i, b, j + 1) + 1});
}

Tensor Seqs(const std::vector<std::vector<int64_t>>& seqs) {
  std::vector<int64_t> flat;
  LoD lod{0};
  for (const auto& s : seqs) {
    flat.insert(flat.end(), s.begin(), s.end());
    lod.push_back(static_cast<int64_t>(flat.size()));
  }
  Tensor t = MakeTensor<int64_t>({static_cast<int64_t>(flat.size()), 1}, flat);
  t.set_lod(lod);
  return t;
}

TEST(EditDistanceOp, HandCases) {
  // kitten -> sitting: 3; "" -> abc: 3; abc -> "": 3; same: 0.
  Tensor h = Seqs({{10, 8, 19, 19, 4, 13}, {}, {1, 2, 3}, {5, 6}});
  Tensor r = Seqs({{18, 8, 19, 19, 8, 13, 6}, {1, 2, 3}, {}, {5, 6}});
  auto out = RunOp(Distance(false), {{"h", h}, {"r", r}});
  EXPECT_EQ(ToVector<float>(out["out"]), (std::vector<float>{3, 3, 3, 0}));
  EXPECT_EQ(out["out"].shape(), Shape({4, 1}));
  EXPECT_EQ(ToVector<int64_t>(out["n"]), std::vector<int64_t>{4});
}

TEST(EditDistanceOp, MatchesNaiveRecursion) {
  std::vector<std::vector<int64_t>> hs, rs;
  uint64_t state = 12345;
  auto next = [&state](int64_t m) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int64_t>((state >> 33) % m);
  };
  for (int i = 0; i < 30; ++i) {
    std::vector<int64_t> a(next(7)), b(1 + next(6));
    for (auto& v : a) v = next(3);
    for (auto& v : b) v = next(3);
    hs.push_back(a);
    rs.push_back(b);
  }
  for (bool normalized : {false, true}) {
    auto out = RunOp(Distance(normalized), {{"h", Seqs(hs)}, {"r", Seqs(rs)}});
    auto got = ToVector<float>(out["out"]);
    for (size_t i = 0; i < hs.size(); ++i) {
      const double d = static_cast<double>(Naive(hs[i], 0, rs[i], 0));
      EXPECT_FLOAT_EQ(got[i], normalized ? d / rs[i].size() : d) << i;
    }
  }
}

TEST(EditDistanceOp, PaddedEqualsLoD) {
  Tensor h = MakeTensor<int64_t>({2, 4}, {1, 2, 3, 0, 4, 4, 9, 9});
  Tensor r = MakeTensor<int64_t>({2, 3}, {1, 3, 0, 4, 5, 9});
  auto out =
      RunOp(Distance(true, true), {{"h", h},
                                   {"r", r},
                                   {"hl", MakeTensor<int64_t>({2}, {3, 2})},
                                   {"rl", MakeTensor<int64_t>({2}, {2, 3})}});
  auto lod = RunOp(Distance(true), {{"h", Seqs({{1, 2, 3}, {4, 4}})},
                                    {"r", Seqs({{1, 3}, {4, 5, 9}})}});
  EXPECT_EQ(ToVector<float>(out["out"]), ToVector<float>(lod["out"]));
  EXPECT_EQ(ToVector<float>(out["out"]), (std::vector<float>{0.5f, 2.0f / 3}));
}

TEST(EditDistanceOp, ErrorsNameTheCause) {
  std::string err = ErrorOf(Distance(true),
                            {{"h", Seqs({{1}, {2}})}, {"r", Seqs({{1}, {}})}});
  EXPECT_NE(err.find("reference 1 is empty"), std::string::npos) << err;
  err = ErrorOf(Distance(false), {{"h", Seqs({{1}, {2}})}, {"r", Seqs({{1}})}});
  EXPECT_NE(err.find("Hyps holds 2 sequences but Refs 1"), std::string::npos)
      << err;
  Tensor f = MakeTensor<float>({1, 1}, {1});
  f.set_lod({0, 1});
  err = ErrorOf(Distance(false), {{"h", f}, {"r", Seqs({{1}})}});
  EXPECT_NE(err.find("must be int64"), std::string::npos) << err;
}

TEST(SequenceEraseOp, RemovesTokensAndKeepsSequences) {
  auto op = MakeOp("sequence_erase", {{"X", {"x"}}}, {{"Out", {"out"}}},
                   {{"tokens", std::vector<int32_t>{0, 7}}});
  Tensor x = Seqs({{0, 1, 7, 2}, {7, 0}, {}, {3}});
  auto out = RunOp(op, {{"x", x}});
  EXPECT_EQ(ToVector<int64_t>(out["out"]), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(out["out"].lod(), (LoD{0, 2, 2, 2, 3}));
  EXPECT_EQ(out["out"].shape(), Shape({3, 1}));
  Tensor x32 = MakeTensor<int32_t>({3, 1}, {7, 5, 7});
  x32.set_lod({0, 3});
  out = RunOp(op, {{"x", x32}});
  EXPECT_EQ(ToVector<int32_t>(out["out"]), std::vector<int32_t>{5});
  Tensor plain = MakeTensor<int64_t>({2, 1}, {1, 2});
  const std::string err = ErrorOf(op, {{"x", plain}});
  EXPECT_NE(err.find("LoD"), std::string::npos) << err;
}

}  // namespace
}  // namespace fluid
