#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/sparse_rows.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::Densify;
using testing::ErrorOf;
using testing::GradCheckOptions;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::RunOpSparse;
using testing::ToVector;

proto::OpDesc Lookup(int64_t padding_idx = -1, bool is_sparse = false) {
  return MakeOp("lookup_table", {{"W", {"w"}}, {"Ids", {"ids"}}},
                {{"Out", {"out"}}},
                {{"padding_idx", padding_idx}, {"is_sparse", is_sparse}});
}

proto::OpDesc LookupGrad(int64_t padding_idx, bool is_sparse) {
  return MakeOp("lookup_table_grad",
                {{"W", {"w"}}, {"Ids", {"ids"}}, {"Out@GRAD", {"dout"}}},
                {{"W@GRAD", {"dw"}}},
                {{"padding_idx", padding_idx}, {"is_sparse", is_sparse}});
}

// The reference: Out[i] = W[ids[i]] (zeros for the padding id) and dW =
// sum over i of dOut[i] into row ids[i] (none for the padding id).
template <typename T>
std::vector<T> NaiveLookup(const std::vector<T>& w,
                           const std::vector<int64_t>& ids, int64_t d,
                           int64_t pad) {
  std::vector<T> out(ids.size() * d, T(0));
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] != pad)
      for (int64_t j = 0; j < d; ++j) out[i * d + j] = w[ids[i] * d + j];
  return out;
}

template <typename T>
std::vector<T> NaiveGrad(const std::vector<T>& dout,
                         const std::vector<int64_t>& ids, int64_t v, int64_t d,
                         int64_t pad) {
  std::vector<T> dw(v * d, T(0));
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] != pad)
      for (int64_t j = 0; j < d; ++j) dw[ids[i] * d + j] += dout[i * d + j];
  return dw;
}

const std::vector<int64_t> kIds = {3, 0, 3, 6, 1, 3, 6};

TEST(LookupTableOp, MatchesNaive) {
  for (int64_t pad : {int64_t{-1}, int64_t{3}}) {
    Tensor w = RandomTensor<float>({7, 5}, -1, 1, 11);
    Tensor ids = MakeTensor<int64_t>({7, 1}, kIds);
    Tensor out = RunOp(Lookup(pad), {{"w", w}, {"ids", ids}})["out"];
    ASSERT_EQ(out.shape(), Shape({7, 5}));
    EXPECT_EQ(ToVector<float>(out),
              NaiveLookup(ToVector<float>(w), kIds, 5, pad))
        << "padding " << pad;
  }
}

TEST(LookupTableOp, IdShapes) {
  Tensor w = RandomTensor<double>({4, 3}, -1, 1, 2);
  Tensor flat = MakeTensor<int64_t>({3}, {1, 2, 3});
  EXPECT_EQ(RunOp(Lookup(), {{"w", w}, {"ids", flat}})["out"].shape(),
            Shape({3, 3}));
  Tensor nested = MakeTensor<int64_t>({2, 2, 1}, {0, 1, 2, 3});
  Tensor out = RunOp(Lookup(), {{"w", w}, {"ids", nested}})["out"];
  EXPECT_EQ(out.shape(), Shape({2, 2, 3}));
  EXPECT_EQ(ToVector<double>(out), ToVector<double>(w));
}

TEST(LookupTableOp, GradMatchesNaive) {
  for (int64_t pad : {int64_t{-1}, int64_t{6}}) {
    Tensor w = RandomTensor<double>({7, 4}, -1, 1, 5);
    Tensor dout = RandomTensor<double>({7, 4}, -1, 1, 6);
    Tensor ids = MakeTensor<int64_t>({7, 1}, kIds);
    Tensor dw = RunOp(LookupGrad(pad, false),
                      {{"w", w}, {"ids", ids}, {"dout", dout}})["dw"];
    EXPECT_EQ(ToVector<double>(dw),
              NaiveGrad(ToVector<double>(dout), kIds, 7, 4, pad));
  }
}

TEST(LookupTableOp, SparseGradHoldsOneRowPerKeptId) {
  Tensor w = RandomTensor<float>({7, 4}, -1, 1, 5);
  Tensor dout = RandomTensor<float>({7, 4}, -1, 1, 6);
  Tensor ids = MakeTensor<int64_t>({7, 1}, kIds);
  auto r = RunOpSparse(LookupGrad(3, true),
                       {{"w", w}, {"ids", ids}, {"dout", dout}});
  ASSERT_EQ(r.sparse.count("dw"), 1u);
  const SelectedRows& sr = r.sparse["dw"];
  EXPECT_EQ(sr.height(), 7);
  EXPECT_EQ(sr.rows(), (std::vector<int64_t>{0, 6, 1, 6}));
  EXPECT_EQ(sr.value().shape(), Shape({4, 4}));
  EXPECT_EQ(ToVector<float>(Densify(sr)),
            NaiveGrad(ToVector<float>(dout), kIds, 7, 4, 3));
}

TEST(LookupTableOp, NumericGradient) {
  Tensor w = RandomTensor<double>({6, 3}, -1, 1, 7);
  Tensor ids = MakeTensor<int64_t>({5, 1}, {2, 5, 2, 0, 4});
  GradCheckOptions opt;
  opt.wrt = {"w"};
  EXPECT_TRUE(CheckGradient(Lookup(), {{"w", w}, {"ids", ids}}, opt));
  EXPECT_TRUE(CheckGradient(Lookup(4), {{"w", w}, {"ids", ids}}, opt));
}

TEST(LookupTableOp, IdOutOfRangeNamesOpInputAndId) {
  Tensor w = RandomTensor<float>({5, 2}, -1, 1, 1);
  for (int64_t bad : {int64_t{5}, int64_t{-2}}) {
    std::string msg =
        ErrorOf(Lookup(),
                {{"w", w}, {"ids", MakeTensor<int64_t>({3, 1}, {0, bad, 1})}});
    EXPECT_NE(msg.find("lookup_table: Ids 'ids' holds id " +
                       std::to_string(bad) + " at position 1, outside [0, 5)"),
              std::string::npos)
        << msg;
  }
  // -1 is the padding id only when padding_idx says so.
  EXPECT_NE(
      ErrorOf(Lookup(), {{"w", w}, {"ids", MakeTensor<int64_t>({1, 1}, {-1})}}),
      "");
}

TEST(LookupTableOp, BadShapesAndPadding) {
  Tensor w = RandomTensor<float>({5, 2}, -1, 1, 1);
  std::string msg =
      ErrorOf(Lookup(), {{"w", w}, {"ids", MakeTensor<float>({2, 1}, {0, 1})}});
  EXPECT_NE(msg.find("must be int64"), std::string::npos) << msg;
  msg = ErrorOf(Lookup(),
                {{"w", w}, {"ids", MakeTensor<int64_t>({2, 2}, {0, 1, 2, 3})}});
  EXPECT_NE(msg.find("must be [N] or [..., 1]"), std::string::npos) << msg;
  msg =
      ErrorOf(Lookup(7), {{"w", w}, {"ids", MakeTensor<int64_t>({1, 1}, {0})}});
  EXPECT_NE(msg.find("padding_idx 7 of W 'w'"), std::string::npos) << msg;
}

// c_embedding: W holds rows [start, start + 3) of a 3 x 3 = 9-row table;
// ids of the other rows (and the padding id) read zeros and send no
// gradient. The reference is the whole table's lookup restricted to W's
// rows, and the three blocks' outputs add up to the whole lookup.
proto::OpDesc CEmbedding(int64_t start, int64_t pad = -1) {
  return MakeOp(
      "c_embedding", {{"W", {"w"}}, {"Ids", {"ids"}}}, {{"Out", {"out"}}},
      {{"padding_idx", pad}, {"nranks", int32_t{3}}, {"start_index", start}});
}

const std::vector<int64_t> kWholeIds = {3, 0, 8, 6, 1, 3, 5, 4};

TEST(CEmbeddingOp, BlocksAddUpToTheWholeLookup) {
  for (int64_t pad : {int64_t{-1}, int64_t{3}}) {
    Tensor whole = RandomTensor<double>({9, 4}, -1, 1, 21);
    const std::vector<double> all = ToVector<double>(whole);
    Tensor ids = MakeTensor<int64_t>({8, 1}, kWholeIds);
    std::vector<double> sum(8 * 4, 0.0);
    for (int64_t block = 0; block < 3; ++block) {
      std::vector<double> rows(all.begin() + block * 12,
                               all.begin() + (block + 1) * 12);
      Tensor w = MakeTensor<double>({3, 4}, rows);
      Tensor out =
          RunOp(CEmbedding(block * 3, pad), {{"w", w}, {"ids", ids}})["out"];
      const std::vector<double> got = ToVector<double>(out);
      for (size_t i = 0; i < kWholeIds.size(); ++i) {
        const int64_t id = kWholeIds[i];
        const bool mine = id != pad && id >= block * 3 && id < block * 3 + 3;
        for (int j = 0; j < 4; ++j) {
          EXPECT_EQ(got[i * 4 + j], mine ? all[id * 4 + j] : 0.0)
              << "block " << block << " position " << i;
          sum[i * 4 + j] += got[i * 4 + j];
        }
      }
    }
    EXPECT_EQ(sum, NaiveLookup(all, kWholeIds, 4, pad)) << "padding " << pad;
  }
}

TEST(CEmbeddingOp, GradAddsIntoItsRowsOnly) {
  Tensor w = RandomTensor<double>({3, 4}, -1, 1, 22);
  Tensor dout = RandomTensor<double>({8, 4}, -1, 1, 23);
  Tensor ids = MakeTensor<int64_t>({8, 1}, kWholeIds);
  auto grad = MakeOp("c_embedding_grad",
                     {{"W", {"w"}}, {"Ids", {"ids"}}, {"Out@GRAD", {"dout"}}},
                     {{"W@GRAD", {"dw"}}},
                     {{"nranks", int32_t{3}}, {"start_index", int64_t{3}}});
  Tensor dw = RunOp(grad, {{"w", w}, {"ids", ids}, {"dout", dout}})["dw"];
  const std::vector<double> whole =
      NaiveGrad(ToVector<double>(dout), kWholeIds, 9, 4, -1);
  EXPECT_EQ(ToVector<double>(dw),
            std::vector<double>(whole.begin() + 12, whole.begin() + 24));
}

TEST(CEmbeddingOp, NumericGradient) {
  Tensor w = RandomTensor<double>({3, 3}, -1, 1, 24);
  Tensor ids = MakeTensor<int64_t>({6, 1}, {4, 1, 5, 3, 8, 4});
  GradCheckOptions opt;
  opt.wrt = {"w"};
  EXPECT_TRUE(CheckGradient(CEmbedding(3), {{"w", w}, {"ids", ids}}, opt));
  EXPECT_TRUE(CheckGradient(CEmbedding(3, 4), {{"w", w}, {"ids", ids}}, opt));
}

TEST(CEmbeddingOp, AnIdOutsideTheWholeTableNamesIt) {
  Tensor w = RandomTensor<float>({3, 2}, -1, 1, 1);
  const std::string msg = ErrorOf(
      CEmbedding(0), {{"w", w}, {"ids", MakeTensor<int64_t>({2, 1}, {1, 9})}});
  EXPECT_NE(msg.find("c_embedding: Ids 'ids' holds id 9 at position 1, "
                     "outside [0, 9)"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace fluid
