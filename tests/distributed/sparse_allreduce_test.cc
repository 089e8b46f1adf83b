// Sparse gradients across ranks (threads standing in for ranks): the
// variable-count gather of every backend, the sparse allreduce's rule (rows
// ascending, repeats summed in rank order, averaged by the rank count, the
// same bits on every rank), its dense fallback, the bytes each path hands
// to the transport, and c_sparse_allreduce with c_wait in a program.
#include "src/distributed/sparse_allreduce.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <thread>

#include "src/distributed/communicator.h"
#include "src/distributed/in_process_backend.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "tests/testing/in_process_ranks.h"

namespace fluid {
namespace {

void RunRanks(int n, const std::function<void(int, Communicator*)>& fn,
              bool padded_gather = false) {
  testing::RunRanks(n, fn, [padded_gather](std::unique_ptr<CommBackend> b) {
    if (!padded_gather) return b;
    // AllGatherV as CommBackend's own: blocks padded to the largest.
    return std::unique_ptr<CommBackend>(
        std::make_unique<testing::RequiredOnlyBackend>(std::move(b)));
  });
}

constexpr int64_t kHeight = 20;
constexpr int64_t kWidth = 3;

// Rank r's rows: r, 5 twice, 19 - r; value of copy i, column j:
// 100 r + 10 i + j (exact in binary, so sums compare exactly).
SelectedRows RankRows(int r) {
  SelectedRows sr;
  sr.set_height(kHeight);
  *sr.mutable_rows() = {r, 5, 5, 19 - r};
  double* v = sr.mutable_value()->mutable_data<double>(Shape{4, kWidth});
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < kWidth; ++j)
      v[i * kWidth + j] = 100 * r + 10 * i + j;
  return sr;
}

// The naive rule: every rank's rows added into a dense table, rank by rank,
// then divided by n.
std::map<int64_t, std::vector<double>> Naive(int n) {
  std::map<int64_t, std::vector<double>> rows;
  for (int r = 0; r < n; ++r) {
    SelectedRows sr = RankRows(r);
    for (size_t i = 0; i < sr.rows().size(); ++i) {
      auto& row = rows[sr.rows()[i]];
      row.resize(kWidth, 0.0);
      for (int64_t j = 0; j < kWidth; ++j)
        row[j] += sr.value().data<double>()[i * kWidth + j];
    }
  }
  for (auto& kv : rows)
    for (double& x : kv.second) x /= n;
  return rows;
}

void ExpectNaive(const SelectedRows& got, int n) {
  const auto want = Naive(n);
  ASSERT_EQ(got.rows().size(), want.size());
  size_t k = 0;
  for (const auto& kv : want) {
    ASSERT_EQ(got.rows()[k], kv.first);
    for (int64_t j = 0; j < kWidth; ++j)
      ASSERT_EQ(got.value().data<double>()[k * kWidth + j], kv.second[j])
          << "row " << kv.first;
    ++k;
  }
  EXPECT_EQ(got.height(), kHeight);
}

TEST(SparseAllReduce, MatchesNaiveOnEveryRankWithEveryGather) {
  for (bool padded : {false, true}) {
    for (int n : {1, 2, 3}) {
      std::vector<SelectedRows> results(n);
      RunRanks(
          n,
          [&](int rank, Communicator* comm) {
            SelectedRows sr = RankRows(rank);
            comm->SparseAllReduceAsync(sr, &sr, ReduceOp::kAvg, 1.0)->Wait();
            results[rank] = sr;
          },
          padded);
      for (int r = 0; r < n; ++r) {
        SCOPED_TRACE("rank " + std::to_string(r) + " of " + std::to_string(n));
        ExpectNaive(results[r], n);
      }
    }
  }
}

TEST(SparseAllReduce, DenseFallbackPastTheRatioMovesMoreBytes) {
  const int n = 2;
  std::vector<SelectedRows> sparse(n), dense(n);
  std::vector<int64_t> sparse_bytes(n), dense_bytes(n);
  RunRanks(n, [&](int rank, Communicator* comm) {
    SelectedRows a = RankRows(rank), b = RankRows(rank);
    // 8 rows gathered: 8 / 20 = 0.4 of the table.
    comm->SparseAllReduceAsync(a, &a, ReduceOp::kAvg, 0.4)->Wait();
    sparse_bytes[rank] = comm->allreduce_wire_bytes();
    comm->SparseAllReduceAsync(b, &b, ReduceOp::kAvg, 0.39)->Wait();
    dense_bytes[rank] = comm->allreduce_wire_bytes() - sparse_bytes[rank];
    sparse[rank] = a;
    dense[rank] = b;
  });
  for (int r = 0; r < n; ++r) {
    ExpectNaive(sparse[r], n);
    ExpectNaive(dense[r], n);
    // Rows (8 bytes each) and values (3 doubles each) vs rows and the table.
    EXPECT_EQ(sparse_bytes[r], 4 * 8 + 4 * kWidth * 8);
    EXPECT_EQ(dense_bytes[r], 4 * 8 + kHeight * kWidth * 8);
  }
}

TEST(SparseAllReduce, RanksWithoutRowsTakePart) {
  std::vector<SelectedRows> results(3);
  RunRanks(3, [&](int rank, Communicator* comm) {
    SelectedRows sr = RankRows(rank);
    if (rank == 1) {
      sr.mutable_rows()->clear();
      sr.mutable_value()->mutable_data<double>(Shape{0, kWidth});
    }
    comm->SparseAllReduceAsync(sr, &sr, ReduceOp::kSum, 1.0)->Wait();
    results[rank] = sr;
  });
  EXPECT_EQ(results[0].rows(), (std::vector<int64_t>{0, 2, 5, 17, 19}));
  for (int r = 1; r < 3; ++r) {
    EXPECT_EQ(results[r].rows(), results[0].rows());
    for (int64_t i = 0; i < results[0].value().numel(); ++i)
      EXPECT_EQ(results[r].value().data<double>()[i],
                results[0].value().data<double>()[i]);
  }
}

TEST(SparseAllReduce, OpWithWaitInAProgram) {
  const int n = 2;
  std::vector<SelectedRows> results(n);
  RunRanks(n, [&](int rank, Communicator* comm) {
    proto::ProgramDesc p = NewProgram();
    auto* b = p.mutable_blocks(0);
    AddVarDesc(b, "g", DataType::kFloat64, Shape{kHeight, kWidth}, true)
        ->set_type(proto::VarDesc::SELECTED_ROWS);
    AddVarDesc(b, "h", DataType::kInt64, Shape{})
        ->set_type(proto::VarDesc::COMM_HANDLE);
    *b->add_ops() = MakeOp("c_sparse_allreduce", {{"X", {"g"}}},
                           {{"Out", {"g"}}, {"Handle", {"h"}}},
                           {{"reduce_type", std::string("avg")}});
    *b->add_ops() = MakeOp("c_wait", {{"Handle", {"h"}}}, {{"Out", {"g"}}});
    Executor exe;
    exe.mutable_device_context()->set_communicator(comm);
    Scope scope;
    *scope.Var("g")->GetMutableSelectedRows() = RankRows(rank);
    exe.RunOnce(p, &scope);
    results[rank] = scope.GetVar("g")->Get<SelectedRows>();
  });
  for (int r = 0; r < n; ++r) ExpectNaive(results[r], n);
}

TEST(SparseAllReduce, OpRefusesDenseInput) {
  RunRanks(1, [&](int, Communicator* comm) {
    proto::ProgramDesc p = NewProgram();
    auto* b = p.mutable_blocks(0);
    AddVarDesc(b, "g", DataType::kFloat32, Shape{4}, true);
    *b->add_ops() =
        MakeOp("c_sparse_allreduce", {{"X", {"g"}}}, {{"Out", {"g"}}}, {});
    Executor exe;
    exe.mutable_device_context()->set_communicator(comm);
    Scope scope;
    scope.Var("g")->GetMutableTensor()->mutable_data<float>(Shape{4});
    try {
      exe.RunOnce(p, &scope);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("must hold sparse rows"),
                std::string::npos)
          << e.what();
    }
  });
}

}  // namespace
}  // namespace fluid
