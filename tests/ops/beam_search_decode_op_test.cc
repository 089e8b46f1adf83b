// beam_search_decode on hand-made steps, and both ops together on a tiny
// bigram "language model" (a table of log-probabilities of the next token
// given the last): beam_size 1 decodes greedily (argmax each step), and a
// beam wider than every hypothesis finds them all, each with the score a
// brute-force enumeration gives, best first. Ended hypotheses stop
// counting; the errors name the step and the input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "src/framework/tensor_array.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::MakeTensor;
using testing::RunOp;
using testing::TensorMap;
using testing::ToVector;

Tensor WithLoD(Tensor t, const LoD& lod) {
  t.set_lod(lod);
  return t;
}

// Runs beam_search_decode on the arrays `ids` and `scores`.
std::vector<Tensor> Decode(const LoDTensorArray& ids,
                           const LoDTensorArray& scores, int end_id,
                           int beam_size = 2) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  AddVarDesc(b, "ids", DataType::kInt64, Shape{-1, 1}, true)
      ->set_type(proto::VarDesc::LOD_TENSOR_ARRAY);
  AddVarDesc(b, "scores", DataType::kFloat64, Shape{-1, 1}, true)
      ->set_type(proto::VarDesc::LOD_TENSOR_ARRAY);
  proto::OpDesc op = MakeOp(
      "beam_search_decode", {{"Ids", {"ids"}}, {"Scores", {"scores"}}},
      {{"SentenceIds", {"sent_ids"}}, {"SentenceScores", {"sent_scores"}}},
      {{"beam_size", beam_size}, {"end_id", end_id}});
  *b->add_ops() = op;
  InferShapeAtCompileTime(op, b);
  Scope scope;
  *scope.Var("ids")->GetMutable<LoDTensorArray>() = ids;
  *scope.Var("scores")->GetMutable<LoDTensorArray>() = scores;
  Executor exe;
  std::vector<Tensor> out;
  exe.RunOnce(p, &scope, {}, {"sent_ids", "sent_scores"}, &out);
  return out;
}

Tensor Ids(const std::vector<int64_t>& v, const LoD& sources) {
  return WithLoD(MakeTensor<int64_t>({static_cast<int64_t>(v.size()), 1}, v),
                 sources);
}

Tensor Scores(const std::vector<double>& v, const LoD& parents) {
  return WithLoD(MakeTensor<double>({static_cast<int64_t>(v.size()), 1}, v),
                 parents);
}

// Two sources, end_id 9. Step 1: source 0 extends its start twice (one
// of them ends), source 1 once. Step 2: source 0's ended row is carried
// with its score, and source 1 ends.
TEST(BeamSearchDecodeOp, WalksBackAndSortsByFinalScore) {
  LoDTensorArray ids{Ids({1, 2}, {0, 1, 2}), Ids({3, 9, 4}, {0, 2, 3}),
                     Ids({5, 9, 9}, {0, 2, 3})};
  LoDTensorArray scores{Scores({0, 0}, {0, 1, 2}),
                        Scores({-1, -2, -0.5}, {0, 2, 3}),
                        Scores({-3, -2, -0.7}, {0, 1, 2, 3})};
  auto out = Decode(ids, scores, 9);
  // Source 0: [1 9] (-2) beats [1 3 5] (-3); source 1: [2 4 9] (-0.7).
  EXPECT_EQ(ToVector<int64_t>(out[0]),
            (std::vector<int64_t>{1, 9, 1, 3, 5, 2, 4, 9}));
  EXPECT_EQ(ToVector<double>(out[1]),
            (std::vector<double>{0, -2, 0, -1, -3, 0, -0.5, -0.7}));
  EXPECT_EQ(out[0].shape(), Shape({8}));
  EXPECT_EQ(out[0].lod(), (LoD{0, 5, 8}));     // source -> tokens
  EXPECT_EQ(out[1].lod(), (LoD{0, 2, 5, 8}));  // hypothesis -> tokens
}

TEST(BeamSearchDecodeOp, ASourcePrunedEarlyIsReadWhereItLastHadRows) {
  // Source 1 has no rows at step 2: its hypotheses end at step 1.
  LoDTensorArray ids{Ids({1, 2}, {0, 1, 2}), Ids({3, 9}, {0, 1, 2}),
                     Ids({5}, {0, 1, 1})};
  LoDTensorArray scores{Scores({0, 0}, {0, 1, 2}), Scores({-1, -2}, {0, 1, 2}),
                        Scores({-3}, {0, 1, 1})};
  auto out = Decode(ids, scores, 9);
  EXPECT_EQ(ToVector<int64_t>(out[0]), (std::vector<int64_t>{1, 3, 5, 2, 9}));
  EXPECT_EQ(out[0].lod(), (LoD{0, 3, 5}));
  EXPECT_EQ(out[1].lod(), (LoD{0, 3, 5}));
}

TEST(BeamSearchDecodeOp, EmptyStepsAfterEverySourceFinished) {
  // Both sources finished at step 1; steps 2 and 3 hold no rows (a loop
  // that runs on to its step count writes them).
  LoDTensorArray ids{Ids({1, 2}, {0, 1, 2}), Ids({9, 9}, {0, 1, 2}),
                     Ids({}, {0, 0, 0}), Ids({}, {0, 0, 0})};
  LoDTensorArray scores{Scores({0, 0}, {0, 1, 2}), Scores({-1, -2}, {0, 1, 2}),
                        Scores({}, {0, 0, 0}), Scores({}, {0})};
  auto out = Decode(ids, scores, 9);
  EXPECT_EQ(ToVector<int64_t>(out[0]), (std::vector<int64_t>{1, 9, 2, 9}));
  EXPECT_EQ(out[0].lod(), (LoD{0, 2, 4}));
  EXPECT_EQ(out[1].lod(), (LoD{0, 2, 4}));
  // Rows after a step without any cannot extend anything.
  ids[3] = Ids({5}, {0, 1, 1});
  scores[3] = Scores({-3}, {0, 1});
  const std::string msg = ErrorOf([&] { Decode(ids, scores, 9); });
  EXPECT_NE(msg.find("step 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1 rows follow a step without any"), std::string::npos)
      << msg;
}

// The bigram model: logp[a][b] = log P(next b | last a), rows normalised.
std::vector<double> BigramTable(int64_t v, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-3, 3);
  std::vector<double> t(v * v);
  for (int64_t a = 0; a < v; ++a) {
    double z = 0;
    for (int64_t b = 0; b < v; ++b) z += std::exp(t[a * v + b] = dist(rng));
    for (int64_t b = 0; b < v; ++b) t[a * v + b] -= std::log(z);
  }
  return t;
}

struct Decoded {
  std::vector<std::vector<int64_t>> sentences;  // per hypothesis
  std::vector<double> final_scores;
};

// Beam search with the two ops for `steps` steps from each start token
// (one source each), the candidates scored by accumulating the table.
std::vector<Decoded> RunBeamSearch(const std::vector<double>& table, int64_t v,
                                   const std::vector<int64_t>& starts,
                                   int64_t steps, int beam, int end_id) {
  const int64_t n = static_cast<int64_t>(starts.size());
  LoD one{0};
  for (int64_t i = 0; i < n; ++i) one.push_back(i + 1);
  LoDTensorArray ids{Ids(starts, one)};
  LoDTensorArray scores{Scores(std::vector<double>(n, 0.0), one)};
  proto::OpDesc op =
      MakeOp("beam_search",
             {{"pre_ids", {"pi"}}, {"pre_scores", {"ps"}}, {"scores", {"s"}}},
             {{"selected_ids", {"si"}}, {"selected_scores", {"ss"}}},
             {{"beam_size", beam}, {"end_id", end_id}});
  for (int64_t t = 0; t < steps && ids.back().numel() > 0; ++t) {
    auto pi = ToVector<int64_t>(ids.back());
    auto ps = ToVector<double>(scores.back());
    std::vector<double> s(pi.size() * v);
    for (size_t r = 0; r < pi.size(); ++r)
      for (int64_t c = 0; c < v; ++c)
        s[r * v + c] = ps[r] + table[pi[r] * v + c];
    auto out = RunOp(
        op,
        {{"pi", ids.back()},
         {"ps", scores.back()},
         {"s", MakeTensor<double>({static_cast<int64_t>(pi.size()), v}, s)}});
    ids.push_back(out["si"]);
    scores.push_back(out["ss"]);
  }
  auto out = Decode(ids, scores, end_id, beam);
  auto tok = ToVector<int64_t>(out[0]);
  auto sc = ToVector<double>(out[1]);
  const LoD& src = out[0].lod();
  const LoD& hyp = out[1].lod();
  std::vector<Decoded> result(n);
  for (size_t h = 0; h + 1 < hyp.size(); ++h) {
    const int64_t s =
        std::upper_bound(src.begin(), src.end(), hyp[h]) - src.begin() - 1;
    result[s].sentences.emplace_back(tok.begin() + hyp[h],
                                     tok.begin() + hyp[h + 1]);
    result[s].final_scores.push_back(sc[hyp[h + 1] - 1]);
  }
  return result;
}

// Every hypothesis of `steps` tokens after `start`: cut after its first
// end_id; sentence -> score.
std::map<std::vector<int64_t>, double> BruteForce(
    const std::vector<double>& table, int64_t v, int64_t start, int64_t steps,
    int64_t end_id) {
  std::map<std::vector<int64_t>, double> all;
  std::vector<int64_t> digits(steps, 0);
  while (true) {
    std::vector<int64_t> sentence{start};
    double score = 0;
    for (int64_t t = 0; t < steps && sentence.back() != end_id; ++t) {
      score += table[sentence.back() * v + digits[t]];
      sentence.push_back(digits[t]);
    }
    all[sentence] = score;
    int64_t k = 0;
    while (k < steps && ++digits[k] == v) digits[k++] = 0;
    if (k == steps) break;
  }
  return all;
}

TEST(BeamSearchDecodeOp, WideBeamFindsEveryHypothesisBestFirst) {
  const int64_t v = 4, steps = 3, end_id = 3;
  for (uint64_t seed : {1, 2, 3}) {
    const auto table = BigramTable(v, seed);
    const std::vector<int64_t> starts{0, 1, 2};
    // v^steps bounds the hypotheses' count.
    auto got = RunBeamSearch(table, v, starts, steps, 64, end_id);
    for (size_t s = 0; s < starts.size(); ++s) {
      auto want = BruteForce(table, v, starts[s], steps, end_id);
      ASSERT_EQ(got[s].sentences.size(), want.size()) << "source " << s;
      for (size_t h = 0; h < want.size(); ++h) {
        auto it = want.find(got[s].sentences[h]);
        ASSERT_NE(it, want.end()) << "seed " << seed << " source " << s;
        EXPECT_NEAR(got[s].final_scores[h], it->second, 1e-12);
        if (h > 0) {
          EXPECT_GE(got[s].final_scores[h - 1], got[s].final_scores[h]);
        }
      }
    }
  }
}

TEST(BeamSearchDecodeOp, BeamOfOneIsGreedy) {
  const int64_t v = 5, steps = 6, end_id = 4;
  for (uint64_t seed : {4, 5, 6, 7}) {
    const auto table = BigramTable(v, seed);
    const std::vector<int64_t> starts{0, 1, 2, 3};
    auto got = RunBeamSearch(table, v, starts, steps, 1, end_id);
    for (size_t s = 0; s < starts.size(); ++s) {
      std::vector<int64_t> want{starts[s]};
      double score = 0;
      for (int64_t t = 0; t < steps && want.back() != end_id; ++t) {
        const double* row = &table[want.back() * v];
        const int64_t best = std::max_element(row, row + v) - row;
        score += row[best];
        want.push_back(best);
      }
      ASSERT_EQ(got[s].sentences.size(), 1u) << "seed " << seed;
      EXPECT_EQ(got[s].sentences[0], want) << "seed " << seed;
      EXPECT_NEAR(got[s].final_scores[0], score, 1e-12);
    }
  }
}

void ExpectError(const LoDTensorArray& ids, const LoDTensorArray& scores,
                 const std::vector<std::string>& parts) {
  const std::string msg = ErrorOf([&] { Decode(ids, scores, 9); });
  ASSERT_FALSE(msg.empty()) << "no error";
  for (const auto& p : parts)
    EXPECT_NE(msg.find(p), std::string::npos)
        << "'" << p << "' not in: " << msg;
}

TEST(BeamSearchDecodeOp, ErrorsNameTheStep) {
  const LoDTensorArray ids{Ids({1, 2}, {0, 1, 2}), Ids({3, 4}, {0, 1, 2})};
  const LoDTensorArray scores{Scores({0, 0}, {0, 1, 2}),
                              Scores({-1, -2}, {0, 1, 2})};
  EXPECT_EQ(ErrorOf([&] { Decode(ids, scores, 9); }), "");
  ExpectError(ids, {scores[0]}, {"Ids 'ids' holds 2 steps", "Scores"});
  ExpectError({}, {}, {"at least one"});
  LoDTensorArray bad = ids;
  bad[1].clear_lod();
  ExpectError(bad, scores, {"step 1", "Ids carries no LoD"});
  bad = scores;
  bad[1].set_lod({0, 2});
  ExpectError(ids, bad, {"step 1", "Scores' LoD [0, 2]", "2 rows"});
  bad = ids;
  bad[1].set_lod({0, 2, 2});
  ExpectError(bad, scores, {"step 1", "do not follow"});
  bad = ids;
  bad[1].set_lod({0, 2});
  ExpectError(bad, scores, {"step 1", "1 sources", "2"});
  LoDTensorArray wide = ids;
  wide[1] = WithLoD(MakeTensor<int64_t>({2, 2}, {1, 2, 3, 4}), {0, 1, 2});
  ExpectError(wide, scores, {"step 1 of Ids 'ids'", "[2, 2]"});
  LoDTensorArray skipped{ids[0], Tensor()};
  ExpectError(skipped, scores, {"step 1 of Ids", "never written"});
}

}  // namespace
}  // namespace fluid
