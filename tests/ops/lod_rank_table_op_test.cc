// lod_rank_table, max_sequence_len, lod_tensor_to_array,
// array_to_lod_tensor, shrink_rnn_memory and reorder_lod_tensor_by_rank
// run in programs on a batch of sequences of lengths 2, 0, 3, 2, 1 (one of
// them empty, two of one length): each against a loop written here; the
// gradients of the four differentiable ops against central differences in
// float64 (loss = mean(op(x) * r)); and the errors (a table from another
// batch, X without LoD, a var that holds no table, a level other than 0).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "src/framework/backward.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::ToVector;

const std::vector<int64_t> kLengths = {2, 0, 3, 2, 1};
constexpr int64_t kCols = 2;

void Op(proto::BlockDesc* b, const proto::OpDesc& op) {
  *b->add_ops() = op;
  InferShapeAtCompileTime(op, b);
}

// x: float64 [-1, 2] with LoD (lengths kLengths) unless `lengths` says.
Tensor SeqBatch(uint64_t seed, const std::vector<int64_t>& lengths = kLengths) {
  int64_t rows = 0;
  for (int64_t l : lengths) rows += l;
  Tensor x = RandomTensor<double>({rows, kCols}, -1, 1, seed);
  x.set_lod(LoDFromLengths(lengths, "test"));
  return x;
}

// The sequence indices longest first, ties in order: a selection sort.
std::vector<int64_t> RankOrder(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> order;
  std::vector<bool> taken(lengths.size(), false);
  for (size_t k = 0; k < lengths.size(); ++k) {
    int64_t best = -1;
    for (size_t i = 0; i < lengths.size(); ++i)
      if (!taken[i] && (best < 0 || lengths[i] > lengths[best])) best = i;
    taken[best] = true;
    order.push_back(best);
  }
  return order;
}

// x (with LoD) -> table, maxlen, arr, len, step1 (arr[1]), back
// (array_to_lod_tensor(arr)), reord, shrunk (shrink of m at step 1).
proto::ProgramDesc ForwardProgram() {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  AddVarDesc(b, "x", DataType::kFloat64, {-1, kCols})->set_lod_level(1);
  AddVarDesc(b, "m", DataType::kFloat64, {-1, 3});
  AddVarDesc(b, "one", DataType::kInt64, {1});
  Op(b, MakeOp("lod_rank_table", {{"X", {"x"}}}, {{"Out", {"table"}}}));
  Op(b, MakeOp("max_sequence_len", {{"RankTable", {"table"}}},
               {{"Out", {"maxlen"}}}));
  Op(b, MakeOp("lod_tensor_to_array", {{"X", {"x"}}, {"RankTable", {"table"}}},
               {{"Out", {"arr"}}}));
  FindMutableVarDesc(b, "arr")->set_type(proto::VarDesc::LOD_TENSOR_ARRAY);
  Op(b, MakeOp("lod_array_length", {{"X", {"arr"}}}, {{"Out", {"len"}}}));
  Op(b, MakeOp("read_from_array", {{"X", {"arr"}}, {"I", {"one"}}},
               {{"Out", {"step1"}}}));
  Op(b,
     MakeOp("array_to_lod_tensor", {{"X", {"arr"}}, {"RankTable", {"table"}}},
            {{"Out", {"back"}}}));
  Op(b, MakeOp("reorder_lod_tensor_by_rank",
               {{"X", {"x"}}, {"RankTable", {"table"}}}, {{"Out", {"reord"}}}));
  Op(b, MakeOp("shrink_rnn_memory",
               {{"X", {"m"}}, {"I", {"one"}}, {"RankTable", {"table"}}},
               {{"Out", {"shrunk"}}}));
  return p;
}

std::vector<double> Row(const std::vector<double>& v, int64_t r, int64_t w) {
  return std::vector<double>(v.begin() + r * w, v.begin() + (r + 1) * w);
}

TEST(LoDRankTable, OpsAgainstLoops) {
  Tensor x = SeqBatch(7);
  Tensor m = RandomTensor<double>({5, 3}, -1, 1, 8);
  Executor exe;
  Scope scope;
  std::vector<Tensor> out;
  exe.RunOnce(ForwardProgram(), &scope,
              {{"x", x}, {"m", m}, {"one", MakeTensor<int64_t>({1}, {1})}},
              {"maxlen", "len", "step1", "back", "reord", "shrunk"}, &out);
  const std::vector<int64_t> order = RankOrder(kLengths);
  EXPECT_EQ(order, (std::vector<int64_t>{2, 0, 3, 4, 1}));
  EXPECT_EQ(ToVector<int64_t>(out[0]), std::vector<int64_t>{3});
  EXPECT_EQ(ToVector<int64_t>(out[1]), std::vector<int64_t>{3});
  const std::vector<double> vx = ToVector<double>(x);
  const LoD& lod = x.lod();
  // Step 1: row 1 of each sequence longer than 1, in rank order.
  std::vector<double> step1;
  for (int64_t s : order)
    if (kLengths[s] > 1)
      for (double v : Row(vx, lod[s] + 1, kCols)) step1.push_back(v);
  EXPECT_EQ(out[2].shape(), (Shape{3, kCols}));
  EXPECT_EQ(ToVector<double>(out[2]), step1);
  // array_to_lod_tensor undoes lod_tensor_to_array.
  EXPECT_EQ(ToVector<double>(out[3]), vx);
  EXPECT_EQ(out[3].lod(), lod);
  // Sequences in rank order, with their lengths.
  std::vector<double> reord;
  std::vector<int64_t> reord_lengths;
  for (int64_t s : order) {
    for (int64_t r = lod[s]; r < lod[s + 1]; ++r)
      for (double v : Row(vx, r, kCols)) reord.push_back(v);
    reord_lengths.push_back(kLengths[s]);
  }
  EXPECT_EQ(ToVector<double>(out[4]), reord);
  EXPECT_EQ(out[4].lod(), LoDFromLengths(reord_lengths, "test"));
  // Three sequences run at step 1: m's first three rows.
  const std::vector<double> vm = ToVector<double>(m);
  EXPECT_EQ(out[5].shape(), (Shape{3, 3}));
  EXPECT_EQ(ToVector<double>(out[5]),
            std::vector<double>(vm.begin(), vm.begin() + 9));
}

// X with LoD (DynamicRNN's static_input of a sequence batch): the first
// sequences, one per running sequence, with their LoD, as Fluid's op does.
TEST(LoDRankTable, ShrinkKeepsWholeSequencesOfXWithLoD) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  AddVarDesc(b, "x", DataType::kFloat64, {-1, kCols})->set_lod_level(1);
  AddVarDesc(b, "c", DataType::kFloat64, {-1, kCols})->set_lod_level(1);
  AddVarDesc(b, "i", DataType::kInt64, {1});
  Op(b, MakeOp("lod_rank_table", {{"X", {"x"}}}, {{"Out", {"table"}}}));
  Op(b, MakeOp("shrink_rnn_memory",
               {{"X", {"c"}}, {"I", {"i"}}, {"RankTable", {"table"}}},
               {{"Out", {"o"}}}));
  EXPECT_EQ(GetVarDesc(*b, "o").lod_level(), 1);
  const Tensor c = SeqBatch(4, {1, 2, 0, 3, 1});  // one per sequence of x
  for (int64_t step : {0, 1, 2}) {
    Executor exe;
    Scope scope;
    std::vector<Tensor> out;
    exe.RunOnce(
        p, &scope,
        {{"x", SeqBatch(3)}, {"c", c}, {"i", MakeTensor<int64_t>({1}, {step})}},
        {"o"}, &out);
    // kLengths 2, 0, 3, 2, 1: 4, 3 and 1 sequences run at steps 0, 1, 2.
    const int64_t n = step == 0 ? 4 : step == 1 ? 3 : 1;
    const int64_t rows = c.lod()[n];
    EXPECT_EQ(out[0].lod(), LoD(c.lod().begin(), c.lod().begin() + n + 1));
    const std::vector<double> vc = ToVector<double>(c);
    EXPECT_EQ(ToVector<double>(out[0]),
              std::vector<double>(vc.begin(), vc.begin() + rows * kCols));
  }
}

TEST(LoDRankTable, ReordersRowsWithoutLoD) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  AddVarDesc(b, "s", DataType::kFloat64, {-1, kCols})->set_lod_level(1);
  AddVarDesc(b, "rows", DataType::kFloat64, {-1, 2});
  Op(b, MakeOp("lod_rank_table", {{"X", {"s"}}}, {{"Out", {"table"}}}));
  Op(b, MakeOp("reorder_lod_tensor_by_rank",
               {{"X", {"rows"}}, {"RankTable", {"table"}}}, {{"Out", {"o"}}}));
  Executor exe;
  Scope scope;
  std::vector<Tensor> out;
  Tensor rows = RandomTensor<double>({5, 2}, -1, 1, 9);
  exe.RunOnce(p, &scope, {{"s", SeqBatch(3)}, {"rows", rows}}, {"o"}, &out);
  const std::vector<double> v = ToVector<double>(rows);
  std::vector<double> want;
  for (int64_t s : RankOrder(kLengths))
    for (double e : Row(v, s, 2)) want.push_back(e);
  EXPECT_EQ(ToVector<double>(out[0]), want);
  EXPECT_FALSE(out[0].has_lod());
}

// loss = mean(y * r), y built from x by `build` (which may read "table",
// the rank table of "s", and "one"); checks x@GRAD against central
// differences.
void CheckGrad(const std::function<void(proto::BlockDesc*)>& build,
               const Tensor& x, bool x_has_lod) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  AddVarDesc(b, "x", DataType::kFloat64, {-1, kCols})
      ->set_lod_level(x_has_lod ? 1 : 0);
  AddVarDesc(b, "s", DataType::kFloat64, {-1, kCols})->set_lod_level(1);
  AddVarDesc(b, "one", DataType::kInt64, {1})->set_stop_gradient(true);
  AddVarDesc(b, "r", DataType::kFloat64, {-1, kCols})->set_stop_gradient(true);
  FindMutableVarDesc(b, "x")->set_stop_gradient(false);
  Op(b, MakeOp("lod_rank_table", {{"X", {"s"}}}, {{"Out", {"table"}}}));
  build(b);
  const proto::ProgramDesc just_y = p;
  Op(b, MakeOp("elementwise_mul", {{"X", {"y"}}, {"Y", {"r"}}},
               {{"Out", {"yr"}}}));
  Op(b, MakeOp("mean", {{"X", {"yr"}}}, {{"Out", {"loss"}}}));
  proto::ProgramDesc fwd = p;
  AppendBackward(&p, "loss");
  Executor exe;
  Scope scope;
  const Tensor s = SeqBatch(5);
  const Tensor one = MakeTensor<int64_t>({1}, {1});
  std::vector<Tensor> out;
  exe.RunOnce(just_y, &scope, {{"x", x}, {"s", s}, {"one", one}}, {"y"}, &out);
  const Tensor r = RandomTensor<double>(out[0].shape(), -1, 1, 11);
  exe.RunOnce(p, &scope, {{"x", x}, {"s", s}, {"one", one}, {"r", r}},
              {"x@GRAD"}, &out);
  const std::vector<double> dx = ToVector<double>(out[0]);
  ASSERT_EQ(dx.size(), static_cast<size_t>(x.numel()));
  const double eps = 1e-6;
  for (int64_t k = 0; k < x.numel(); ++k) {
    double f[2];
    for (int side = 0; side < 2; ++side) {
      Tensor xk;
      xk.CopyFrom(x, Place::CPU());
      xk.set_lod(x.lod());
      xk.mutable_data<double>()[k] += side == 0 ? eps : -eps;
      std::vector<Tensor> o;
      exe.RunOnce(fwd, &scope, {{"x", xk}, {"s", s}, {"one", one}, {"r", r}},
                  {"loss"}, &o);
      f[side] = ToVector<double>(o[0])[0];
    }
    EXPECT_NEAR(dx[k], (f[0] - f[1]) / (2 * eps), 1e-9) << "element " << k;
  }
}

TEST(LoDRankTable, GradientsAgainstCentralDifferences) {
  // Through an array and back: lod_tensor_to_array_grad and
  // array_to_lod_tensor_grad.
  CheckGrad(
      [](proto::BlockDesc* b) {
        Op(b, MakeOp("lod_tensor_to_array",
                     {{"X", {"x"}}, {"RankTable", {"table"}}},
                     {{"Out", {"arr"}}}));
        FindMutableVarDesc(b, "arr")->set_type(
            proto::VarDesc::LOD_TENSOR_ARRAY);
        Op(b, MakeOp("array_to_lod_tensor",
                     {{"X", {"arr"}}, {"RankTable", {"table"}}},
                     {{"Out", {"y"}}}));
      },
      SeqBatch(5), true);
  // A step read from the array: the other steps' gradients are zeros.
  CheckGrad(
      [](proto::BlockDesc* b) {
        Op(b, MakeOp("lod_tensor_to_array",
                     {{"X", {"x"}}, {"RankTable", {"table"}}},
                     {{"Out", {"arr"}}}));
        FindMutableVarDesc(b, "arr")->set_type(
            proto::VarDesc::LOD_TENSOR_ARRAY);
        Op(b, MakeOp("read_from_array", {{"X", {"arr"}}, {"I", {"one"}}},
                     {{"Out", {"y"}}}));
      },
      SeqBatch(5), true);
  CheckGrad(
      [](proto::BlockDesc* b) {
        Op(b,
           MakeOp("reorder_lod_tensor_by_rank",
                  {{"X", {"x"}}, {"RankTable", {"table"}}}, {{"Out", {"y"}}}));
      },
      SeqBatch(5), true);
  CheckGrad(
      [](proto::BlockDesc* b) {
        Op(b, MakeOp("shrink_rnn_memory",
                     {{"X", {"x"}}, {"I", {"one"}}, {"RankTable", {"table"}}},
                     {{"Out", {"y"}}}));
      },
      RandomTensor<double>({5, kCols}, -1, 1, 12), false);
}

// Runs ForwardProgram with these feeds; the error's message.
std::string ForwardError(const Tensor& x, const Tensor& m, int64_t step = 1) {
  return ErrorOf([&] {
    Executor exe;
    Scope scope;
    std::vector<Tensor> out;
    exe.RunOnce(ForwardProgram(), &scope,
                {{"x", x}, {"m", m}, {"one", MakeTensor<int64_t>({1}, {step})}},
                {"back"}, &out);
  });
}

TEST(LoDRankTable, Errors) {
  const Tensor m = RandomTensor<double>({5, 3}, -1, 1, 8);
  // X without LoD: a var declared without lod_level.
  proto::ProgramDesc d = NewProgram();
  AddVarDesc(d.mutable_blocks(0), "x", DataType::kFloat64, {-1, kCols});
  Op(d.mutable_blocks(0),
     MakeOp("lod_rank_table", {{"X", {"x"}}}, {{"Out", {"table"}}}));
  std::string err = ErrorOf([&] {
    Executor exe;
    Scope scope;
    exe.RunOnce(d, &scope, {{"x", RandomTensor<double>({4, kCols}, -1, 1, 1)}});
  });
  EXPECT_NE(err.find("lod_rank_table: X 'x' has no LoD"), std::string::npos)
      << err;
  // Too few rows of state for the sequences running at step 1.
  err = ForwardError(SeqBatch(1), RandomTensor<double>({2, 3}, -1, 1, 8));
  EXPECT_NE(err.find("shrink_rnn_memory: X 'm' has 2 rows but 3 sequences "
                     "run at step 1"),
            std::string::npos)
      << err;
  err = ForwardError(SeqBatch(1), m, -1);
  EXPECT_NE(err.find("I 'one' is -1"), std::string::npos) << err;
  {
    proto::ProgramDesc sp = NewProgram();
    proto::BlockDesc* b = sp.mutable_blocks(0);
    AddVarDesc(b, "x", DataType::kFloat64, {-1, kCols})->set_lod_level(1);
    AddVarDesc(b, "m", DataType::kFloat64, {-1, 3});
    AddVarDesc(b, "i", DataType::kInt64, {1});
    Op(b, MakeOp("lod_rank_table", {{"X", {"x"}}}, {{"Out", {"table"}}}));
    Op(b, MakeOp("shrink_rnn_memory",
                 {{"X", {"m"}}, {"I", {"i"}}, {"RankTable", {"table"}}},
                 {{"Out", {"o"}}}));
    err = ErrorOf([&] {
      Executor exe;
      Scope scope;
      exe.RunOnce(sp, &scope,
                  {{"x", SeqBatch(1)},
                   {"m", m},
                   {"i", MakeTensor<int64_t>({1}, {-1})}});
    });
    EXPECT_NE(err.find("shrink_rnn_memory: I 'i' is -1; a loop step is >= 0"),
              std::string::npos)
        << err;
  }

  // A table of another batch.
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  AddVarDesc(b, "x", DataType::kFloat64, {-1, kCols})->set_lod_level(1);
  AddVarDesc(b, "s", DataType::kFloat64, {-1, kCols})->set_lod_level(1);
  AddVarDesc(b, "plain", DataType::kInt64, {-1, 2});
  Op(b, MakeOp("lod_rank_table", {{"X", {"s"}}}, {{"Out", {"table"}}}));
  Op(b, MakeOp("lod_tensor_to_array", {{"X", {"x"}}, {"RankTable", {"table"}}},
               {{"Out", {"arr"}}}));
  Op(b, MakeOp("max_sequence_len", {{"RankTable", {"plain"}}},
               {{"Out", {"maxlen"}}}));
  Executor exe;
  err = ErrorOf([&] {
    Scope scope;
    exe.RunOnce(p, &scope,
                {{"x", SeqBatch(1)},
                 {"s", SeqBatch(2, {3, 1})},
                 {"plain", MakeTensor<int64_t>({1, 2}, {0, 1})}});
  });
  EXPECT_NE(err.find("lod_tensor_to_array: X 'x' holds 5 sequences but "
                     "RankTable 'table' ranks 2"),
            std::string::npos)
      << err;
  err = ErrorOf([&] {
    Scope scope;
    exe.RunOnce(p, &scope,
                {{"x", SeqBatch(1)},
                 {"s", SeqBatch(2, {2, 0, 3, 1, 2})},
                 {"plain", MakeTensor<int64_t>({1, 2}, {0, 1})}});
  });
  EXPECT_NE(err.find("gives sequence 4 length 2 but X 'x' has LoD"),
            std::string::npos)
      << err;
  // A plain tensor where a table is read.
  p.mutable_blocks(0)->mutable_ops()->DeleteSubrange(1, 1);
  err = ErrorOf([&] {
    Scope scope;
    exe.RunOnce(
        p, &scope,
        {{"s", SeqBatch(2)}, {"plain", MakeTensor<int64_t>({1, 2}, {0, 1})}});
  });
  EXPECT_NE(err.find("max_sequence_len: RankTable 'plain' holds no rank "
                     "table; it must be the output of lod_rank_table"),
            std::string::npos)
      << err;
  // Levels other than 0.
  proto::ProgramDesc q = NewProgram();
  AddVarDesc(q.mutable_blocks(0), "s", DataType::kFloat64, {-1, 1});
  err = ErrorOf([&] {
    Op(q.mutable_blocks(0), MakeOp("lod_rank_table", {{"X", {"s"}}},
                                   {{"Out", {"table"}}}, {{"level", 1}}));
  });
  EXPECT_NE(err.find("lod_rank_table: attr level is 1; only level 0"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace fluid
