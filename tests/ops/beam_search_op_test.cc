// beam_search on hand-made steps: the best candidates per source, ordered
// by prefix, the two LoDs and parent_idx; ended prefixes carried once and
// a source whose picks all ended pruned; probabilities log-added; candidate
// ids from their positions; a beam per prefix (level 1); and the errors,
// each naming the input at fault.
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
using testing::RunOp;
using testing::TensorMap;
using testing::ToVector;

proto::OpDesc Search(int beam_size, int end_id, bool with_ids = true,
                     bool is_accumulated = true, int level = 0) {
  std::vector<std::pair<std::string, std::vector<std::string>>> in{
      {"pre_ids", {"pre_ids"}}, {"pre_scores", {"pre_scores"}}};
  if (with_ids) in.push_back({"ids", {"ids"}});
  in.push_back({"scores", {"scores"}});
  return MakeOp("beam_search", in,
                {{"selected_ids", {"sel_ids"}},
                 {"selected_scores", {"sel_scores"}},
                 {"parent_idx", {"parent"}}},
                {{"beam_size", beam_size},
                 {"end_id", end_id},
                 {"level", level},
                 {"is_accumulated", is_accumulated}});
}

Tensor Column(const std::vector<int64_t>& v, const LoD& lod) {
  Tensor t = MakeTensor<int64_t>({static_cast<int64_t>(v.size()), 1}, v);
  t.set_lod(lod);
  return t;
}

template <typename T>
Tensor Scores(const Shape& shape, const std::vector<T>& v, const LoD& lod) {
  Tensor t = MakeTensor<T>(shape, v);
  t.set_lod(lod);
  return t;
}

// Two sources of two prefixes each. Source 0: both picks extend row 0.
// Source 1: row 2 ended (end_id 0) and competes with its own score.
TensorMap TwoSources(const std::vector<int64_t>& pre_ids,
                     const std::vector<double>& pre_scores) {
  const LoD src{0, 2, 4};
  return {{"pre_ids", Column(pre_ids, src)},
          {"pre_scores", Scores<double>({4, 1}, pre_scores, {0, 1, 2, 3, 4})},
          {"ids", MakeTensor<int64_t>({4, 2}, {4, 2, 3, 5, 3, 1, 1, 6})},
          {"scores", MakeTensor<double>(
                         {4, 2}, {0.8, 0.75, 0.7, 0.1, 0.2, 0.1, 0.15, 0.05})}};
}

TEST(BeamSearchOp, KeepsTheBestPerSourceInPrefixOrder) {
  auto out =
      RunOp(Search(2, 0), TwoSources({1, 2, 0, 4}, {0.5, 0.6, 0.3, 0.9}));
  EXPECT_EQ(ToVector<int64_t>(out["sel_ids"]),
            (std::vector<int64_t>{4, 2, 0, 1}));
  EXPECT_EQ(ToVector<double>(out["sel_scores"]),
            (std::vector<double>{0.8, 0.75, 0.3, 0.15}));
  EXPECT_EQ(ToVector<int32_t>(out["parent"]),
            (std::vector<int32_t>{0, 0, 2, 3}));
  EXPECT_EQ(out["sel_ids"].shape(), Shape({4, 1}));
  EXPECT_EQ(out["parent"].shape(), Shape({4}));
  // The sources' LoD on the ids, the prefixes' on the scores.
  EXPECT_EQ(out["sel_ids"].lod(), (LoD{0, 2, 4}));
  EXPECT_EQ(out["sel_scores"].lod(), (LoD{0, 2, 2, 3, 4}));
}

TEST(BeamSearchOp, PrunesASourceWhosePicksAllEnded) {
  // Rows 2 and 3 ended: source 1 only offers its two ended prefixes, so
  // its hypotheses were carried one step and it is done.
  auto out =
      RunOp(Search(2, 0), TwoSources({1, 2, 0, 0}, {0.5, 0.6, 0.3, 0.9}));
  EXPECT_EQ(ToVector<int64_t>(out["sel_ids"]), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(out["sel_ids"].lod(), (LoD{0, 2, 2}));
  EXPECT_EQ(out["sel_scores"].lod(), (LoD{0, 2, 2, 2, 2}));
  // One live pick keeps the source: with beam 3, source 1 keeps row 2's
  // carried end and both of row 3's candidates.
  auto kept =
      RunOp(Search(3, 0), TwoSources({1, 2, 0, 4}, {0.5, 0.6, 0.3, 0.9}));
  EXPECT_EQ(ToVector<int64_t>(kept["sel_ids"]),
            (std::vector<int64_t>{4, 2, 3, 0, 1, 6}));
  EXPECT_EQ(kept["sel_scores"].lod(), (LoD{0, 2, 3, 4, 6}));
  // Every pick ended and the source still had live candidates: the ended
  // ones outrank them, so the source is done too.
  auto done = RunOp(Search(1, 0), TwoSources({1, 2, 0, 4}, {0.5, 0.6, 0.9, 0}));
  EXPECT_EQ(ToVector<int64_t>(done["sel_ids"]), (std::vector<int64_t>{4}));
  EXPECT_EQ(done["sel_ids"].lod(), (LoD{0, 1, 1}));
}

TEST(BeamSearchOp, ProbabilitiesAreLogAddedAndIdsArePositions) {
  TensorMap in{{"pre_ids", Column({7, 8}, {0, 2})},
               {"pre_scores", Scores<float>({2, 1}, {0, -1}, {0, 1, 2})},
               {"scores", MakeTensor<float>({2, 2}, {0.5, 0.25, 0.9, 0.1})}};
  auto out = RunOp(Search(3, 0, false, false), in);
  EXPECT_EQ(ToVector<int64_t>(out["sel_ids"]), (std::vector<int64_t>{0, 1, 0}));
  auto s = ToVector<float>(out["sel_scores"]);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_FLOAT_EQ(s[0], std::log(0.5f));
  EXPECT_FLOAT_EQ(s[1], std::log(0.25f));
  EXPECT_FLOAT_EQ(s[2], -1 + std::log(0.9f));
  EXPECT_EQ(out["sel_scores"].lod(), (LoD{0, 2, 3}));
}

TEST(BeamSearchOp, LevelOneKeepsABeamPerPrefix) {
  // pre_scores' LoD groups rows {0, 1} and {2}: each group its beam.
  TensorMap in{{"pre_ids", Column({1, 2, 3}, {0, 3})},
               {"pre_scores", Scores<double>({3, 1}, {0, 0, 0}, {0, 2, 3})},
               {"scores", MakeTensor<double>({3, 2}, {1, 2, 3, 4, 5, 6})}};
  auto out = RunOp(Search(1, 0, false, true, 1), in);
  EXPECT_EQ(ToVector<int64_t>(out["sel_ids"]), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(ToVector<double>(out["sel_scores"]), (std::vector<double>{4, 6}));
  EXPECT_EQ(out["sel_ids"].lod(), (LoD{0, 1, 2}));
}

TEST(BeamSearchOp, EmptyStepGivesEmptyOutputs) {
  TensorMap in{{"pre_ids", Column({}, {0, 0, 0})},
               {"pre_scores", Scores<double>({0, 1}, {}, {0, 0})},
               {"scores", MakeTensor<double>({0, 3}, {})}};
  auto out = RunOp(Search(2, 0, false), in);
  EXPECT_EQ(out["sel_ids"].shape(), Shape({0, 1}));
  EXPECT_EQ(out["sel_ids"].lod(), (LoD{0, 0, 0}));
  EXPECT_EQ(out["sel_scores"].lod(), (LoD{0}));
}

void ExpectError(const proto::OpDesc& op, const TensorMap& in,
                 const std::vector<std::string>& parts) {
  const std::string msg = ErrorOf(op, in);
  ASSERT_FALSE(msg.empty()) << "no error";
  for (const auto& p : parts)
    EXPECT_NE(msg.find(p), std::string::npos)
        << "'" << p << "' not in: " << msg;
}

TEST(BeamSearchOp, ErrorsNameTheInput) {
  const std::vector<int64_t> ids{1, 2, 0, 4};
  const std::vector<double> ps{0.5, 0.6, 0.3, 0.9};
  TensorMap in = TwoSources(ids, ps);
  in["pre_ids"].clear_lod();
  ExpectError(Search(2, 0), in, {"pre_ids 'pre_ids'", "carries no LoD"});
  in = TwoSources(ids, ps);
  in["pre_ids"].set_lod({0, 2, 3});
  ExpectError(Search(2, 0), in, {"'pre_ids'", "[0, 2, 3]"});
  in = TwoSources(ids, ps);
  in["scores"] = MakeTensor<double>({3, 2}, {1, 2, 3, 4, 5, 6});
  ExpectError(Search(2, 0), in, {"scores 'scores'", "3 rows", "has 4"});
  in = TwoSources(ids, ps);
  in["ids"] = MakeTensor<int64_t>({4, 3}, std::vector<int64_t>(12, 1));
  ExpectError(Search(2, 0), in, {"ids 'ids'", "[4, 3]"});
  in = TwoSources(ids, ps);
  in["ids"] = MakeTensor<int32_t>({4, 2}, std::vector<int32_t>(8, 1));
  ExpectError(Search(2, 0), in, {"ids 'ids'", "int32", "int64"});
  in = TwoSources(ids, ps);
  in["pre_scores"] = MakeTensor<float>({4, 1}, {0, 0, 0, 0});
  ExpectError(Search(2, 0), in, {"pre_scores 'pre_scores'", "float32"});
  in = TwoSources(ids, ps);
  ExpectError(Search(2, 0, true, true, 2), in, {"'level' is 2"});
  ExpectError(Search(0, 0), TwoSources(ids, ps), {"beam_size"});
  in = TwoSources(ids, ps);
  in["pre_ids"] = MakeTensor<int64_t>({4, 2}, std::vector<int64_t>(8, 1));
  ExpectError(Search(2, 0), in, {"pre_ids 'pre_ids'", "[4, 2]"});
}

}  // namespace
}  // namespace fluid
