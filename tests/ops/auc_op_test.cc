// auc: the histograms and the area against references written here, not
// taken from the op: the fraction of (positive, negative) pairs ranked right
// (a naive loop over every pair), and the trapezoid under the ROC curve
// drawn from true and false positive rates at each threshold.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "src/framework/backward.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::MakeTensor;
using testing::RunOp;
using testing::ToVector;

constexpr int kBuckets = 4096;  // num_thresholds 4095, the default

proto::OpDesc AucOp(int num_thresholds = 4095, int slide_steps = 1,
                    const std::string& pos_out = "pos",
                    const std::string& neg_out = "neg") {
  return MakeOp(
      "auc",
      {{"Predict", {"predict"}},
       {"Label", {"label"}},
       {"StatPos", {"pos"}},
       {"StatNeg", {"neg"}}},
      {{"AUC", {"auc"}}, {"StatPosOut", {pos_out}}, {"StatNegOut", {neg_out}}},
      {{"num_thresholds", int32_t{num_thresholds}},
       {"slide_steps", int32_t{slide_steps}}});
}

Tensor Zeros(int64_t rows, int64_t buckets) {
  return MakeTensor<int64_t>(
      {rows, buckets},
      std::vector<int64_t>(static_cast<size_t>(rows * buckets)));
}

// [N, 2] probabilities (1 - p, p) from the probabilities of class 1.
template <typename T>
Tensor Predict(const std::vector<double>& p) {
  std::vector<T> v;
  for (double x : p) {
    v.push_back(static_cast<T>(1 - x));
    v.push_back(static_cast<T>(x));
  }
  return MakeTensor<T>({static_cast<int64_t>(p.size()), 2}, v);
}

Tensor LabelTensor(const std::vector<int64_t>& y) {
  return MakeTensor<int64_t>({static_cast<int64_t>(y.size()), 1}, y);
}

// The fraction of (positive, negative) pairs whose positive scores higher,
// a tie counting one half; 0 without both classes.
double PairAuc(const std::vector<double>& score,
               const std::vector<int64_t>& y) {
  double right = 0, pairs = 0;
  for (size_t i = 0; i < score.size(); ++i) {
    if (y[i] != 1) continue;
    for (size_t j = 0; j < score.size(); ++j) {
      if (y[j] != 0) continue;
      pairs += 1;
      right += score[i] > score[j] ? 1.0 : score[i] == score[j] ? 0.5 : 0.0;
    }
  }
  return pairs > 0 ? right / pairs : 0.0;
}

// The trapezoid under the ROC curve through the points (FPR(t), TPR(t)),
// a row predicted positive at threshold t when its bucket is >= t, for t
// from buckets (nothing positive) down to 0 (everything).
double ThresholdTrapezoid(const std::vector<int64_t>& bucket,
                          const std::vector<int64_t>& y, int64_t buckets) {
  double pos = 0, neg = 0;
  for (int64_t l : y) (l == 1 ? pos : neg) += 1;
  if (pos == 0 || neg == 0) return 0.0;
  double area = 0, prev_tpr = 0, prev_fpr = 0;
  for (int64_t t = buckets - 1; t >= 0; --t) {
    double tp = 0, fp = 0;
    for (size_t i = 0; i < bucket.size(); ++i)
      if (bucket[i] >= t) (y[i] == 1 ? tp : fp) += 1;
    const double tpr = tp / pos, fpr = fp / neg;
    area += (fpr - prev_fpr) * (tpr + prev_tpr) / 2;
    prev_tpr = tpr;
    prev_fpr = fpr;
  }
  return area;
}

std::vector<int64_t> BucketsOf(const std::vector<double>& p, int nt) {
  std::vector<int64_t> b;
  for (double x : p) b.push_back(static_cast<int64_t>(x * nt));
  return b;
}

// `n` rows whose probabilities sit in the middle of distinct buckets
// (p * 4095 = b + 1/2, b < 4095), so no two rows share a bucket and no
// pair ties; labels random.
void DistinctRows(int n, uint64_t seed, std::vector<double>* p,
                  std::vector<int64_t>* y) {
  std::mt19937_64 rng(seed);
  std::vector<int> bucket(kBuckets - 1);
  for (int i = 0; i < kBuckets - 1; ++i) bucket[i] = i;
  std::shuffle(bucket.begin(), bucket.end(), rng);
  for (int i = 0; i < n; ++i) {
    p->push_back((bucket[i] + 0.5) / (kBuckets - 1));
    EXPECT_EQ(static_cast<int64_t>(p->back() * (kBuckets - 1)), bucket[i]);
    y->push_back(static_cast<int64_t>(rng() % 2));
  }
}

// Runs auc with persistable histograms over several batches, as a program
// built by the layer does.
class AucRuns {
 public:
  explicit AucRuns(int slide_steps, int num_thresholds = 4095)
      : exe_(Place::CPU()) {
    rows_ = slide_steps > 0 ? slide_steps : 1;
    buckets_ = num_thresholds + 1;
    proto::ProgramDesc program = NewProgram();
    proto::BlockDesc* block = program.mutable_blocks(0);
    AddVarDesc(block, "predict", DataType::kFloat64, Shape{-1, 2});
    AddVarDesc(block, "label", DataType::kInt64, Shape{-1, 1});
    for (const char* s : {"pos", "neg"}) {
      AddVarDesc(block, s, DataType::kInt64, Shape{rows_, buckets_}, true);
      scope_.Var(s)->GetMutableTensor()->CopyFrom(Zeros(rows_, buckets_));
    }
    const proto::OpDesc op = AucOp(num_thresholds, slide_steps);
    *block->add_ops() = op;
    InferShapeAtCompileTime(op, block);
    prepared_ = exe_.Prepare(program, &scope_);
  }

  double Step(const std::vector<double>& p, const std::vector<int64_t>& y) {
    std::vector<Tensor> out;
    exe_.Run(prepared_.get(),
             {{"predict", Predict<double>(p)}, {"label", LabelTensor(y)}},
             {"auc"}, &out);
    return ToVector<double>(out[0])[0];
  }
  std::vector<int64_t> Stat(const std::string& name) {
    return ToVector<int64_t>(scope_.FindVar(name)->GetTensor());
  }
  int64_t buckets() const { return buckets_; }

 private:
  Scope scope_;
  Executor exe_;
  std::unique_ptr<PreparedProgram> prepared_;
  int64_t rows_ = 1, buckets_ = 0;
};

TEST(AucOp, MatchesThePairCountAndTheThresholdTrapezoid) {
  for (uint64_t seed : {1, 2, 3}) {
    std::vector<double> p;
    std::vector<int64_t> y;
    DistinctRows(300, seed, &p, &y);
    auto out = RunOp(AucOp(), {{"predict", Predict<double>(p)},
                               {"label", LabelTensor(y)},
                               {"pos", Zeros(1, kBuckets)},
                               {"neg", Zeros(1, kBuckets)}});
    ASSERT_EQ(out["auc"].shape(), Shape({1}));
    ASSERT_EQ(out["auc"].dtype(), DataType::kFloat64);
    const double auc = ToVector<double>(out["auc"])[0];
    EXPECT_NEAR(auc, PairAuc(p, y), 1e-12) << seed;
    EXPECT_NEAR(auc, ThresholdTrapezoid(BucketsOf(p, 4095), y, kBuckets), 1e-12)
        << seed;
    EXPECT_GT(auc, 0.3);  // random labels: near 1/2, never degenerate
    EXPECT_LT(auc, 0.7);
  }
}

TEST(AucOp, RowsSharingABucketCountHalf) {
  // 11 thresholds: 0.51 and 0.55 share bucket 5, 0.05 and 0.02 bucket 0.
  const std::vector<double> p = {0.91, 0.51, 0.55, 0.3, 0.05, 0.02, 0.99};
  const std::vector<int64_t> y = {1, 1, 0, 0, 1, 0, 0};
  auto out = RunOp(AucOp(10), {{"predict", Predict<double>(p)},
                               {"label", LabelTensor(y)},
                               {"pos", Zeros(1, 11)},
                               {"neg", Zeros(1, 11)}});
  const std::vector<int64_t> bucket = BucketsOf(p, 10);
  std::vector<double> as_score(bucket.begin(), bucket.end());
  const double auc = ToVector<double>(out["auc"])[0];
  EXPECT_NEAR(auc, PairAuc(as_score, y), 1e-15);
  EXPECT_NEAR(auc, ThresholdTrapezoid(bucket, y, 11), 1e-15);
  // By hand: positives in buckets 9, 5, 0; negatives in 5, 3, 0, 9. Pairs
  // right: 9 > {5, 3, 0} + tie with 9 (3.5); 5 > {3, 0} + tie (2.5);
  // 0: tie with 0 (0.5). 6.5 of 12.
  EXPECT_DOUBLE_EQ(auc, 6.5 / 12);
  EXPECT_EQ(ToVector<int64_t>(out["pos"]),
            (std::vector<int64_t>{1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(ToVector<int64_t>(out["neg"]),
            (std::vector<int64_t>{1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0}));
}

TEST(AucOp, OneClassOnlyGivesZero) {
  for (int64_t label : {0, 1}) {
    auto out = RunOp(AucOp(), {{"predict", Predict<double>({0.2, 0.7})},
                               {"label", LabelTensor({label, label})},
                               {"pos", Zeros(1, kBuckets)},
                               {"neg", Zeros(1, kBuckets)}});
    EXPECT_EQ(ToVector<double>(out["auc"])[0], 0.0) << label;
  }
}

TEST(AucOp, AccumulatesEveryBatchWithSlideStepsZero) {
  AucRuns runs(0);
  std::vector<double> all_p;
  std::vector<int64_t> all_y;
  for (uint64_t seed : {11, 12, 13}) {
    std::vector<double> p;
    std::vector<int64_t> y;
    DistinctRows(200, seed, &p, &y);
    const double auc = runs.Step(p, y);
    all_p.insert(all_p.end(), p.begin(), p.end());
    all_y.insert(all_y.end(), y.begin(), y.end());
    // Over the union: buckets of different batches may coincide, so the
    // pair count takes the buckets as the scores (ties count one half).
    const std::vector<int64_t> b = BucketsOf(all_p, 4095);
    EXPECT_NEAR(auc, PairAuc(std::vector<double>(b.begin(), b.end()), all_y),
                1e-12);
  }
  std::vector<int64_t> pos(kBuckets), neg(kBuckets);
  for (size_t i = 0; i < all_p.size(); ++i)
    ++(all_y[i] == 1 ? pos : neg)[static_cast<size_t>(all_p[i] * 4095)];
  EXPECT_EQ(runs.Stat("pos"), pos);
  EXPECT_EQ(runs.Stat("neg"), neg);
}

TEST(AucOp, SlideStepsKeepTheLastBatches) {
  const int steps = 2;
  AucRuns runs(steps);
  std::vector<std::vector<double>> ps;
  std::vector<std::vector<int64_t>> ys;
  for (uint64_t seed = 20; seed < 25; ++seed) {
    ps.emplace_back();
    ys.emplace_back();
    DistinctRows(150, seed, &ps.back(), &ys.back());
    const double auc = runs.Step(ps.back(), ys.back());
    // The window: this batch and the one before.
    std::vector<double> p;
    std::vector<int64_t> y;
    for (size_t k = ps.size() > steps ? ps.size() - steps : 0; k < ps.size();
         ++k) {
      for (double x : ps[k])
        p.push_back(static_cast<double>(static_cast<int64_t>(x * 4095)));
      y.insert(y.end(), ys[k].begin(), ys[k].end());
    }
    EXPECT_NEAR(auc, PairAuc(p, y), 1e-12) << "batch " << ps.size();
  }
  // Row 0 holds the second-to-last batch, row 1 the last.
  const std::vector<int64_t> pos = runs.Stat("pos");
  ASSERT_EQ(pos.size(), size_t{2 * kBuckets});
  for (int row = 0; row < 2; ++row) {
    const size_t k = ps.size() - 2 + row;
    std::vector<int64_t> want(kBuckets);
    for (size_t i = 0; i < ps[k].size(); ++i)
      if (ys[k][i] == 1) ++want[static_cast<size_t>(ps[k][i] * 4095)];
    EXPECT_EQ(std::vector<int64_t>(pos.begin() + row * kBuckets,
                                   pos.begin() + (row + 1) * kBuckets),
              want)
        << "row " << row;
  }
}

TEST(AucOp, SlideStepsOneIsThisBatchAlone) {
  AucRuns runs(1);
  for (uint64_t seed : {31, 32}) {
    std::vector<double> p;
    std::vector<int64_t> y;
    DistinctRows(100, seed, &p, &y);
    EXPECT_NEAR(runs.Step(p, y), PairAuc(p, y), 1e-12);
  }
}

TEST(AucOp, Float32PredictionsBucketInFloat32) {
  // 0.7f * 10 in float32 rounds to exactly 7; in float64 the float32 value
  // 0.699999988... times 10 is below 7. The op takes float32's product.
  const float p = 0.7f;
  ASSERT_EQ(static_cast<int64_t>(p * 10.0f), 7);
  ASSERT_EQ(static_cast<int64_t>(static_cast<double>(p) * 10.0), 6);
  auto out = RunOp(AucOp(10), {{"predict", Predict<float>({0.7})},
                               {"label", LabelTensor({1})},
                               {"pos", Zeros(1, 11)},
                               {"neg", Zeros(1, 11)}});
  EXPECT_EQ(ToVector<int64_t>(out["pos"])[7], 1);
}

TEST(AucOp, OneColumnIsTheProbabilityOfClassOne) {
  auto out = RunOp(AucOp(10),
                   {{"predict", MakeTensor<double>({3, 1}, {0.95, 0.15, 0.55})},
                    {"label", LabelTensor({1, 0, 0})},
                    {"pos", Zeros(1, 11)},
                    {"neg", Zeros(1, 11)}});
  EXPECT_EQ(ToVector<int64_t>(out["pos"])[9], 1);
  EXPECT_EQ(ToVector<int64_t>(out["neg"])[1], 1);
  EXPECT_EQ(ToVector<int64_t>(out["neg"])[5], 1);
  EXPECT_DOUBLE_EQ(ToVector<double>(out["auc"])[0], 1.0);
}

TEST(AucOp, OutputsBoundElsewhereLeaveTheInputsAlone) {
  std::vector<int64_t> before(11);
  before[3] = 4;
  auto out = RunOp(AucOp(10, 0, "pos_out", "neg_out"),
                   {{"predict", Predict<double>({0.35, 0.8})},
                    {"label", LabelTensor({1, 0})},
                    {"pos", MakeTensor<int64_t>({1, 11}, before)},
                    {"neg", Zeros(1, 11)}});
  std::vector<int64_t> want = before;
  want[3] = 5;
  EXPECT_EQ(ToVector<int64_t>(out["pos_out"]), want);
  EXPECT_EQ(ToVector<int64_t>(out["neg_out"])[8], 1);
}

TEST(AucOp, BadRowsNameTheVarAndLeaveTheCountsAlone) {
  struct Case {
    std::vector<double> p;
    std::vector<int64_t> y;
    std::string want;
  };
  const double nan = std::nan("");
  for (const Case& c : std::vector<Case>{
           {{0.5, 1.5}, {1, 0}, "holds 1.5 at row 1"},
           {{-0.25}, {1}, "holds -0.25 at row 0"},
           {{0.5, nan}, {1, 0}, "at row 1"},
           {{0.5, 0.2}, {1, 2}, "holds 2 at row 1; labels must be 0 or 1"}}) {
    AucRuns runs(0, 10);
    runs.Step({0.45}, {1});
    std::string msg = ErrorOf([&] { runs.Step(c.p, c.y); });
    EXPECT_NE(msg.find(c.want), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.want.find("label") != std::string::npos
                           ? "Label 'label'"
                           : "Predict 'predict'"),
              std::string::npos)
        << msg;
    std::vector<int64_t> pos(11);
    pos[4] = 1;
    EXPECT_EQ(runs.Stat("pos"), pos) << msg;
    EXPECT_EQ(runs.Stat("neg"), std::vector<int64_t>(11)) << msg;
  }
}

TEST(AucOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "predict", DataType::kFloat32, Shape{-1, 2});
  AddVarDesc(block, "label", DataType::kInt64, Shape{-1, 1});
  AddVarDesc(block, "pos", DataType::kInt64, Shape{3, 101}, true);
  AddVarDesc(block, "neg", DataType::kInt64, Shape{3, 101}, true);
  InferShapeAtCompileTime(AucOp(100, 3), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "auc")), Shape({1}));
  EXPECT_EQ(VarDtype(GetVarDesc(*block, "auc")), DataType::kFloat64);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "pos")), Shape({3, 101}));
}

TEST(AucOp, BadShapesNameTheVar) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "predict", DataType::kFloat32, Shape{-1, 3});
  AddVarDesc(block, "predict2", DataType::kFloat32, Shape{-1, 2});
  AddVarDesc(block, "label", DataType::kInt64, Shape{-1, 1});
  AddVarDesc(block, "pos", DataType::kInt64, Shape{1, 4096}, true);
  AddVarDesc(block, "neg", DataType::kInt64, Shape{1, 4096}, true);
  std::string msg =
      ErrorOf([&] { InferShapeAtCompileTime(AucOp(4095, 0), block); });
  EXPECT_NE(msg.find("Predict 'predict' has shape [-1, 3]"), std::string::npos)
      << msg;
  proto::OpDesc op = AucOp(4095, 2);  // the window needs 2 rows
  op.mutable_inputs(0)->set_arguments(0, "predict2");
  msg = ErrorOf([&] { InferShapeAtCompileTime(op, block); });
  EXPECT_NE(msg.find("StatPos 'pos' has shape [1, 4096]; with num_thresholds "
                     "4095 and slide_steps 2 it must be [2, 4096]"),
            std::string::npos)
      << msg;
}

TEST(AucOp, RangesOfTheAttrs) {
  for (auto [nt, steps] :
       std::vector<std::pair<int, int>>{{0, 1}, {4095, -1}}) {
    std::string msg =
        ErrorOf(AucOp(nt, steps), {{"predict", Predict<double>({0.5})},
                                   {"label", LabelTensor({1})},
                                   {"pos", Zeros(1, 4096)},
                                   {"neg", Zeros(1, 4096)}});
    EXPECT_NE(msg.find(nt == 0 ? "num_thresholds" : "slide_steps"),
              std::string::npos)
        << msg;
  }
}

TEST(AucOp, IsNotDifferentiable) {
  EXPECT_FALSE(OpRegistry::Global().Get("auc").has_grad());
}

// Evaluation programs keep it: its stats are persistable, but its test mode
// (what clone(for_test=True) sets) trains nothing.
TEST(AucOp, CloneForTestKeepsIt) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "predict", DataType::kFloat32, Shape{-1, 2});
  AddVarDesc(block, "label", DataType::kInt64, Shape{-1, 1});
  AddVarDesc(block, "pos", DataType::kInt64, Shape{1, 4096}, true);
  AddVarDesc(block, "neg", DataType::kInt64, Shape{1, 4096}, true);
  *block->add_ops() = AucOp(4095, 0);
  InferShapeAtCompileTime(block->ops(0), block);
  proto::ProgramDesc test = CloneForTest(program);
  ASSERT_EQ(test.blocks(0).ops_size(), 1);
  EXPECT_EQ(test.blocks(0).ops(0).type(), "auc");
}

}  // namespace
}  // namespace fluid
