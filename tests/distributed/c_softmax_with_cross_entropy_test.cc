// c_softmax_with_cross_entropy with threads standing in for ranks: each
// rank of a ring is given its block of the classes of the same whole
// logits, and every rank's loss must be the loss over the whole row (a
// naive loop here, and softmax_with_cross_entropy on the whole logits),
// the same bits on each rank; its softmax the block of the whole softmax;
// its gradient the block of softmax_with_cross_entropy_grad's, and the
// central differences of the loss across all ranks. One rank alone, two,
// four, and a ring of two in a world of four.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "src/distributed/communicator.h"
#include "src/framework/executor.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/in_process_ranks.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::GradCheckOptions;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::RunRanks;
using testing::TensorMap;
using testing::ToVector;

// The logits every rank of a ring takes its block of, [rows, classes]
// float64, and their labels (the same on every rank).
struct Whole {
  Tensor logits;
  std::vector<int64_t> labels;
  int ignore_index = -100;
  int64_t rows() const { return logits.shape()[0]; }
  int64_t classes() const { return logits.shape()[1]; }
};

// Labels that walk over every class (so every rank's block holds some),
// every fourth row ignored; logits in [-3, 3] with large offsets: row 2
// shifted by +1e4, row 3 by -1e4, and row 5 with its first quarter of
// classes (one rank's block of four) 1e4 above the rest.
Whole MakeWhole(int64_t rows, int64_t classes, uint64_t seed,
                int ignore_index = -100) {
  Whole w;
  w.ignore_index = ignore_index;
  w.logits = RandomTensor<double>({rows, classes}, -3, 3, seed);
  double* x = w.logits.data<double>();
  for (int64_t i = 0; i < rows; ++i) {
    w.labels.push_back(i % 4 == 1 ? ignore_index : (i * 5 + 3) % classes);
    for (int64_t j = 0; j < classes; ++j) {
      if (i == 2) x[i * classes + j] += 1e4;
      if (i == 3) x[i * classes + j] -= 1e4;
      if (i == 5 && j < classes / 4) x[i * classes + j] += 1e4;
    }
  }
  return w;
}

Tensor LabelTensor(const std::vector<int64_t>& labels) {
  return MakeTensor<int64_t>({static_cast<int64_t>(labels.size()), 1}, labels);
}

// `t` [rows, classes] (float64) as float32, or as it is.
Tensor AsType(const Tensor& t, DataType dtype) {
  if (dtype == DataType::kFloat64) return t;
  Tensor out;
  float* p = out.mutable_data<float>(t.shape());
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = static_cast<float>(t.data<double>()[i]);
  return out;
}

// Element i of a float32 or float64 tensor.
double At(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::kFloat64 ? t.data<double>()[i]
                                         : t.data<float>()[i];
}

// Columns [rank w, (rank + 1) w) of [rows, classes] `t`, w = classes /
// nranks: rank `rank`'s block, of t's dtype.
Tensor Block(const Tensor& t, int rank, int nranks) {
  const int64_t rows = t.shape()[0], classes = t.shape()[1];
  const int64_t w = classes / nranks;
  Tensor out(t.dtype(), Shape{rows, w});
  const size_t e = SizeOf(t.dtype());
  char* dst = static_cast<char*>(out.raw_mutable_data());
  const char* src = static_cast<const char*>(t.raw_data());
  for (int64_t i = 0; i < rows; ++i)
    std::copy_n(src + (i * classes + rank * w) * e, w * e, dst + i * w * e);
  return out;
}

// The loss of each row over the whole logits, naively in double:
// logsumexp(x) - x[label] (0 for an ignored row), with m = max(x) taken out
// as (m - x[label]) + log(sum_j exp(x_j - m)), so that rows offset by 1e4
// keep their digits.
std::vector<double> NaiveLoss(const Tensor& logits,
                              const std::vector<int64_t>& labels, int ignore) {
  const int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  std::vector<double> loss(rows, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    if (labels[i] == ignore) continue;
    double m = At(logits, i * classes);
    for (int64_t j = 1; j < classes; ++j)
      m = std::max(m, At(logits, i * classes + j));
    double sum = 0;
    for (int64_t j = 0; j < classes; ++j)
      sum += std::exp(At(logits, i * classes + j) - m);
    loss[i] = (m - At(logits, i * classes + labels[i])) + std::log(sum);
  }
  return loss;
}

proto::OpDesc CSoftmaxOp(int ring_id, int nranks, int ignore_index = -100) {
  return MakeOp("c_softmax_with_cross_entropy",
                {{"Logits", {"logits"}}, {"Label", {"label"}}},
                {{"Softmax", {"softmax"}}, {"Loss", {"loss"}}},
                {{"ring_id", int32_t{ring_id}},
                 {"nranks", int32_t{nranks}},
                 {"ignore_index", int32_t{ignore_index}}});
}

proto::OpDesc PlainOp(int ignore_index) {
  return MakeOp("softmax_with_cross_entropy",
                {{"Logits", {"logits"}}, {"Label", {"label"}}},
                {{"Softmax", {"softmax"}}, {"Loss", {"loss"}}},
                {{"ignore_index", int32_t{ignore_index}}});
}

// What one run of the forward op and its grad op gives.
struct Outputs {
  Tensor softmax, loss, dlogits;
};

// Runs `fwd` on `logits` and `labels` and, given `dloss` (Loss@GRAD), the
// grad op its grad maker emits, with `comm` as the executor's communicator
// (none when null).
Outputs RunOnRing(Communicator* comm, const proto::OpDesc& fwd,
                  const Tensor& logits, const std::vector<int64_t>& labels,
                  const Tensor* dloss = nullptr) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  const Tensor label = LabelTensor(labels);
  AddVarDesc(block, "logits", logits.dtype(), logits.shape());
  AddVarDesc(block, "label", DataType::kInt64, label.shape());
  *block->add_ops() = fwd;
  InferShapeAtCompileTime(fwd, block);
  FeedList feeds = {{"logits", logits}, {"label", label}};
  std::vector<std::string> fetch = {"softmax", "loss"};
  if (dloss != nullptr) {
    AddVarDesc(block, GradVarName("loss"), dloss->dtype(), dloss->shape());
    for (const proto::OpDesc& g :
         OpRegistry::Global().Get(fwd.type()).grad_maker()(fwd)) {
      *block->add_ops() = g;
      InferShapeAtCompileTime(g, block);
    }
    feeds.emplace_back(GradVarName("loss"), *dloss);
    fetch.push_back(GradVarName("logits"));
  }
  Executor exe;
  exe.mutable_device_context()->set_communicator(comm);
  Scope scope;
  std::vector<Tensor> got;
  exe.RunOnce(program, &scope, feeds, fetch, &got);
  Outputs out{got[0], got[1], Tensor()};
  if (dloss != nullptr) out.dlogits = got[2];
  return out;
}

// The largest |a - b| / max(|a|, |b|, 1) over two tensors of one shape.
double MaxRelDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double worst = 0;
  for (int64_t i = 0; i < std::min(a.numel(), b.numel()); ++i) {
    const double x = At(a, i), y = At(b, i);
    worst = std::max(
        worst, std::fabs(x - y) / std::max({std::fabs(x), std::fabs(y), 1.0}));
  }
  return worst;
}

double MaxRelDiff(const Tensor& a, const std::vector<double>& b) {
  Tensor t = MakeTensor<double>(a.shape(), b);
  return MaxRelDiff(a, t);
}

// Records the largest of `diffs` as test property `key` (in the XML
// report, --gtest_output=xml): the margins the tolerances leave.
void RecordWorst(const std::string& key, const std::vector<double>& diffs) {
  std::ostringstream s;
  s.precision(3);
  s << std::scientific << *std::max_element(diffs.begin(), diffs.end());
  ::testing::Test::RecordProperty(key, s.str());
}

// ---- one rank alone ----

// nranks 1 without a communicator is softmax_with_cross_entropy: the same
// formulas in the same order, so the same bits, forward and gradient.
TEST(CSoftmaxWithCrossEntropy, AloneIsSoftmaxWithCrossEntropy) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
    for (int ignore : {-100, 5}) {
      SCOPED_TRACE(std::string(DataTypeName(dtype)) + " ignore_index " +
                   std::to_string(ignore));
      const Whole w = MakeWhole(11, 12, 3, ignore);
      const Tensor x = AsType(w.logits, dtype);
      const Tensor dloss =
          AsType(RandomTensor<double>({11, 1}, -1, 1, 4), dtype);
      const Outputs got =
          RunOnRing(nullptr, CSoftmaxOp(0, 1, ignore), x, w.labels, &dloss);
      const Outputs want =
          RunOnRing(nullptr, PlainOp(ignore), x, w.labels, &dloss);
      EXPECT_EQ(MaxRelDiff(got.softmax, want.softmax), 0.0);
      EXPECT_EQ(MaxRelDiff(got.loss, want.loss), 0.0);
      EXPECT_EQ(MaxRelDiff(got.dlogits, want.dlogits), 0.0);
      EXPECT_LE(MaxRelDiff(got.loss, NaiveLoss(x, w.labels, ignore)),
                dtype == DataType::kFloat64 ? 1e-14 : 1e-6);
    }
  }
}

TEST(CSoftmaxWithCrossEntropy, NumericGradientAlone) {
  const Whole w = MakeWhole(6, 8, 5);
  GradCheckOptions opt;
  opt.of = {"loss"};
  opt.wrt = {"logits"};
  // Without the 1e4 offsets: a step of 1e-5 on 1e4 loses the digits.
  EXPECT_TRUE(CheckGradient(CSoftmaxOp(0, 1),
                            {{"logits", RandomTensor<double>({6, 8}, -2, 2, 6)},
                             {"label", LabelTensor(w.labels)}},
                            opt));
}

// ---- rings of several ranks ----

// The whole row's results every rank's own are checked against: the naive
// loss, and softmax_with_cross_entropy's outputs and gradient.
struct Reference {
  std::vector<double> naive;
  Outputs plain;
};

Reference ReferenceOf(const Whole& w, const Tensor& x, const Tensor& dloss) {
  return {NaiveLoss(x, w.labels, w.ignore_index),
          RunOnRing(nullptr, PlainOp(w.ignore_index), x, w.labels, &dloss)};
}

// Rank `rank` of a ring of `nranks` (ring `ring_id` of `comm`) on its
// block of `w` in `dtype`: its loss against the whole row's, its softmax
// and gradient against the blocks of the whole ones. Returns its loss; sets
// the largest differences from the naive loss and from the plain op.
Tensor CheckRank(Communicator* comm, int ring_id, int rank, int nranks,
                 const Whole& w, DataType dtype, double* naive_diff,
                 double* plain_diff) {
  const Tensor x = AsType(w.logits, dtype);
  const Tensor dloss =
      AsType(RandomTensor<double>({w.rows(), 1}, -1, 1, 9), dtype);
  const Reference ref = ReferenceOf(w, x, dloss);
  const Outputs got =
      RunOnRing(comm, CSoftmaxOp(ring_id, nranks, w.ignore_index),
                Block(x, rank, nranks), w.labels, &dloss);
  const double tol = dtype == DataType::kFloat64 ? 1e-12 : 1e-5;
  *naive_diff = MaxRelDiff(got.loss, ref.naive);
  *plain_diff = std::max(
      {MaxRelDiff(got.loss, ref.plain.loss),
       MaxRelDiff(got.softmax, Block(ref.plain.softmax, rank, nranks)),
       MaxRelDiff(got.dlogits, Block(ref.plain.dlogits, rank, nranks))});
  EXPECT_LE(*naive_diff, tol) << "rank " << rank;
  EXPECT_LE(*plain_diff, tol) << "rank " << rank;
  EXPECT_EQ(got.loss.shape(), Shape({w.rows(), 1}));
  EXPECT_EQ(got.softmax.shape(), Shape({w.rows(), w.classes() / nranks}));
  return got.loss;
}

// Every rank of a ring gets the loss over the whole row, the same bits on
// each, and its blocks of the softmax and the gradient.
TEST(CSoftmaxWithCrossEntropy, EveryRankGetsTheWholeRowsLoss) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
    for (int n : {1, 2, 4}) {
      for (int ignore : {-100, 5}) {
        SCOPED_TRACE(std::string(DataTypeName(dtype)) + " on " +
                     std::to_string(n) + " ranks, ignore_index " +
                     std::to_string(ignore));
        const Whole w = MakeWhole(11, 12, 20 + n, ignore);
        std::vector<Tensor> losses(n);
        std::vector<double> naive(n), plain(n);
        RunRanks(n, [&](int rank, Communicator* comm) {
          losses[rank] =
              CheckRank(comm, 0, rank, n, w, dtype, &naive[rank], &plain[rank]);
        });
        for (int r = 1; r < n; ++r)
          EXPECT_EQ(std::memcmp(losses[r].raw_data(), losses[0].raw_data(),
                                losses[0].bytes()),
                    0)
              << "rank " << r << "'s loss differs from rank 0's";
        const std::string key = std::string(DataTypeName(dtype)) + "_np" +
                                std::to_string(n) + "_ignore" +
                                std::to_string(ignore);
        RecordWorst("naive_" + key, naive);
        RecordWorst("plain_" + key, plain);
      }
    }
  }
}

// Ring 1 of a world of four: the pairs {0, 1} and {2, 3}, each pair with
// whole logits of its own.
TEST(CSoftmaxWithCrossEntropy, RingOfAPairInAWorldOfFour) {
  std::vector<Tensor> losses(4);
  RunRanks(4, [&](int rank, Communicator* comm) {
    comm->CreateGroup(1, rank / 2, rank);
    const Whole w = MakeWhole(9, 8, 40 + rank / 2);
    double naive = 0, plain = 0;
    losses[rank] =
        CheckRank(comm, 1, rank % 2, 2, w, DataType::kFloat64, &naive, &plain);
  });
  for (int r : {1, 3})
    EXPECT_EQ(ToVector<double>(losses[r]), ToVector<double>(losses[r - 1]));
  EXPECT_NE(ToVector<double>(losses[0]), ToVector<double>(losses[2]));
}

// The loss is the same bits on every rank, in float32 too, for a larger
// random problem whose rows have no common offset.
TEST(CSoftmaxWithCrossEntropy, LossIsTheSameBitsOnEveryRank) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
    const int n = 4;
    const Tensor x = AsType(RandomTensor<double>({33, 64}, -30, 30, 77), dtype);
    std::vector<int64_t> labels;
    for (int64_t i = 0; i < 33; ++i) labels.push_back((i * 13) % 64);
    std::vector<Tensor> losses(n);
    RunRanks(n, [&](int rank, Communicator* comm) {
      losses[rank] =
          RunOnRing(comm, CSoftmaxOp(0, n), Block(x, rank, n), labels).loss;
    });
    for (int r = 1; r < n; ++r)
      EXPECT_EQ(std::memcmp(losses[r].raw_data(), losses[0].raw_data(),
                            losses[0].bytes()),
                0)
          << DataTypeName(dtype) << ": rank " << r;
  }
}

// ---- the gradient across ranks ----

// f = sum_i R_i Loss_i as a function of every rank's block: each element of
// each rank's block is moved by +-h on that rank while every rank runs the
// forward op (the loss depends on all blocks). Returns this rank's central
// differences, [rows, classes / nranks].
Tensor NumericGradient(Communicator* comm, int rank, int nranks,
                       const Tensor& mine, const std::vector<int64_t>& labels,
                       const Tensor& r, double h) {
  Tensor numeric;
  double* g = numeric.mutable_data<double>(mine.shape());
  Tensor x;
  for (int q = 0; q < nranks; ++q) {
    for (int64_t k = 0; k < mine.numel(); ++k) {
      double f[2];
      for (int side = 0; side < 2; ++side) {
        x.CopyFrom(mine);
        if (q == rank) x.data<double>()[k] += side == 0 ? h : -h;
        const Tensor loss =
            RunOnRing(comm, CSoftmaxOp(0, nranks), x, labels).loss;
        f[side] = 0;
        for (int64_t i = 0; i < loss.numel(); ++i)
          f[side] += loss.data<double>()[i] * r.data<double>()[i];
      }
      if (q == rank) g[k] = (f[0] - f[1]) / (2 * h);
    }
  }
  return numeric;
}

TEST(CSoftmaxWithCrossEntropy, GradientIsTheCentralDifferencesAcrossRanks) {
  for (int n : {2, 4}) {
    SCOPED_TRACE(std::to_string(n) + " ranks");
    const Tensor whole = RandomTensor<double>({5, 8}, -2, 2, 50 + n);
    const std::vector<int64_t> labels = {7, -100, 0, 3, 4};
    const Tensor r = RandomTensor<double>({5, 1}, -1, 1, 60);
    std::vector<double> worst(n, 0.0);
    RunRanks(n, [&](int rank, Communicator* comm) {
      const Tensor mine = Block(whole, rank, n);
      const Tensor analytic =
          RunOnRing(comm, CSoftmaxOp(0, n), mine, labels, &r).dlogits;
      const Tensor numeric =
          NumericGradient(comm, rank, n, mine, labels, r, 1e-5);
      worst[rank] = MaxRelDiff(analytic, numeric);
      EXPECT_LE(worst[rank], 1e-6) << "rank " << rank;
    });
    RecordWorst("numeric_np" + std::to_string(n), worst);
  }
}

// ---- errors ----

// A label outside [0, C) -- C the whole row's classes, not the block's --
// is an error naming Label and the value, on every rank, before any
// collective (so no rank waits for another). A label in another rank's
// block is fine.
TEST(CSoftmaxWithCrossEntropy, LabelsOutsideTheWholeRowAreRefused) {
  RunRanks(2, [](int rank, Communicator* comm) {
    const Tensor mine = RandomTensor<double>({3, 4}, -1, 1, 70);
    const Tensor dloss = RandomTensor<double>({3, 1}, -1, 1, 71);
    EXPECT_EQ(ErrorOf([&] {
                RunOnRing(comm, CSoftmaxOp(0, 2), mine, {7, 0, 5});
              }),
              "");
    for (int64_t bad : {int64_t{8}, int64_t{-3}}) {
      const std::string forward = ErrorOf([&] {
        RunOnRing(comm, CSoftmaxOp(0, 2), mine, {1, bad, 2});
      });
      EXPECT_NE(forward.find("Label 'label' holds " + std::to_string(bad) +
                             " at row 1, outside [0, 8)"),
                std::string::npos)
          << forward;
    }
    // The grad op checks them too.
    const std::string grad = ErrorOf([&] {
      const proto::OpDesc g =
          MakeOp("c_softmax_with_cross_entropy_grad",
                 {{"Softmax", {"softmax"}},
                  {"Label", {"label"}},
                  {GradVarName("Loss"), {"dloss"}}},
                 {{GradVarName("Logits"), {"dlogits"}}},
                 {{"ring_id", int32_t{0}}, {"nranks", int32_t{2}}});
      proto::ProgramDesc p = NewProgram();
      auto* b = p.mutable_blocks(0);
      AddVarDesc(b, "softmax", DataType::kFloat64, Shape{3, 4});
      AddVarDesc(b, "label", DataType::kInt64, Shape{3, 1});
      AddVarDesc(b, "dloss", DataType::kFloat64, Shape{3, 1});
      *b->add_ops() = g;
      InferShapeAtCompileTime(g, b);
      Executor exe;
      exe.mutable_device_context()->set_communicator(comm);
      Scope scope;
      exe.RunOnce(p, &scope,
                  {{"softmax", mine},
                   {"label", LabelTensor({1, 2, 9})},
                   {"dloss", dloss}});
    });
    EXPECT_NE(grad.find("Label 'label' holds 9 at row 2, outside [0, 8)"),
              std::string::npos)
        << grad;
  });
  // One rank alone: C is the block's classes.
  const std::string alone = ErrorOf([] {
    RunOnRing(nullptr, CSoftmaxOp(0, 1),
              RandomTensor<double>({2, 4}, -1, 1, 72), {4, 0});
  });
  EXPECT_NE(alone.find("Label 'label' holds 4 at row 0, outside [0, 4)"),
            std::string::npos)
      << alone;
}

// The program was planned for nranks ranks: a ring of another size, no
// communicator for nranks > 1, and an unknown ring are refused.
TEST(CSoftmaxWithCrossEntropy, RanksAreCheckedAgainstTheRing) {
  const std::vector<int64_t> labels = {1, 2};
  const Tensor x = RandomTensor<double>({2, 4}, -1, 1, 80);
  RunRanks(2, [&](int rank, Communicator* comm) {
    const std::string four =
        ErrorOf([&] { RunOnRing(comm, CSoftmaxOp(0, 4), x, labels); });
    EXPECT_NE(four.find("c_softmax_with_cross_entropy was planned for 4 "
                        "ranks and runs on 2"),
              std::string::npos)
        << four;
    const std::string unknown =
        ErrorOf([&] { RunOnRing(comm, CSoftmaxOp(9, 2), x, labels); });
    EXPECT_NE(unknown.find("ring 9"), std::string::npos) << unknown;
  });
  const std::string alone =
      ErrorOf([&] { RunOnRing(nullptr, CSoftmaxOp(0, 2), x, labels); });
  EXPECT_NE(alone.find("needs a communicator"), std::string::npos) << alone;
  const std::string zero =
      ErrorOf([&] { RunOnRing(nullptr, CSoftmaxOp(0, 0), x, labels); });
  EXPECT_NE(zero.find("nranks"), std::string::npos) << zero;
}

// Shape inference: Label must be int64 [..., 1] against Logits [..., C].
TEST(CSoftmaxWithCrossEntropy, LabelShapeAndTypeAreChecked) {
  const Tensor x = RandomTensor<double>({3, 4}, -1, 1, 90);
  const std::string shape =
      ErrorOf(CSoftmaxOp(0, 1),
              {{"logits", x},
               {"label", MakeTensor<int64_t>({3, 2}, {0, 1, 2, 3, 0, 1})}});
  EXPECT_NE(shape.find("c_softmax_with_cross_entropy: Label 'label' has "
                       "shape [3, 2]"),
            std::string::npos)
      << shape;
  const std::string dtype = ErrorOf(
      CSoftmaxOp(0, 1),
      {{"logits", x}, {"label", MakeTensor<double>({3, 1}, {0, 1, 2})}});
  EXPECT_NE(dtype.find("Label 'label' must be int64"), std::string::npos)
      << dtype;
}

// Three-dimensional logits [2, 3, C / nranks] and no rows at all.
TEST(CSoftmaxWithCrossEntropy, LeadingDimsAndEmptyBatches) {
  const Tensor whole = RandomTensor<double>({6, 8}, -2, 2, 95);
  const std::vector<int64_t> labels = {0, 7, 3, -100, 4, 6};
  const std::vector<double> naive = NaiveLoss(whole, labels, -100);
  RunRanks(2, [&](int rank, Communicator* comm) {
    Tensor mine = Block(whole, rank, 2);
    mine.Resize(Shape{2, 3, 4});
    Tensor label = LabelTensor(labels);
    label.Resize(Shape{2, 3, 1});
    const TensorMap got = [&] {
      proto::ProgramDesc p = NewProgram();
      auto* b = p.mutable_blocks(0);
      AddVarDesc(b, "logits", DataType::kFloat64, mine.shape());
      AddVarDesc(b, "label", DataType::kInt64, label.shape());
      const proto::OpDesc op = CSoftmaxOp(0, 2);
      *b->add_ops() = op;
      InferShapeAtCompileTime(op, b);
      Executor exe;
      exe.mutable_device_context()->set_communicator(comm);
      Scope scope;
      std::vector<Tensor> out;
      exe.RunOnce(p, &scope, {{"logits", mine}, {"label", label}},
                  {"softmax", "loss"}, &out);
      return TensorMap{{"softmax", out[0]}, {"loss", out[1]}};
    }();
    EXPECT_EQ(got.at("loss").shape(), Shape({2, 3, 1}));
    EXPECT_EQ(got.at("softmax").shape(), Shape({2, 3, 4}));
    Tensor loss = got.at("loss");
    loss.Resize(Shape{6, 1});
    EXPECT_LE(MaxRelDiff(loss, naive), 1e-14);

    const Outputs empty = RunOnRing(
        comm, CSoftmaxOp(0, 2), RandomTensor<double>({0, 4}, -1, 1, 96), {});
    EXPECT_EQ(empty.loss.shape(), Shape({0, 1}));
    EXPECT_EQ(empty.softmax.shape(), Shape({0, 4}));
  });
}

}  // namespace
}  // namespace fluid
