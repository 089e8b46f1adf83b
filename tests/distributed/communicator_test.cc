// The communicator and the collective ops, with threads standing in for
// ranks (no mpirun needed).
#include "src/distributed/communicator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <thread>

#include "src/distributed/in_process_backend.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "tests/testing/in_process_ranks.h"

namespace fluid {
namespace {

using testing::RunRanks;

Tensor Filled(DataType dtype, int64_t n, double base) {
  Tensor t(dtype, Shape{n});
  t.raw_mutable_data();
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == DataType::kFloat32) t.data<float>()[i] = float(base + i);
    if (dtype == DataType::kFloat64) t.data<double>()[i] = base + i;
    if (dtype == DataType::kInt64) t.data<int64_t>()[i] = int64_t(base + i);
    if (dtype == DataType::kBFloat16)
      t.data<bfloat16>()[i] = FromFloat<bfloat16>(float(base + i));
    if (dtype == DataType::kFloat16)
      t.data<float16>()[i] = FromFloat<float16>(float(base + i));
  }
  return t;
}

TEST(Communicator, AllReduceSumAvgMax) {
  for (int n : {1, 2, 3, 4}) {
    RunRanks(n, [n](int rank, Communicator* comm) {
      Tensor s = Filled(DataType::kFloat64, 5, rank * 10);
      comm->AllReduce(s, ReduceOp::kSum);
      Tensor a = Filled(DataType::kFloat32, 5, rank * 10);
      comm->AllReduce(a, ReduceOp::kAvg);
      Tensor m = Filled(DataType::kInt64, 5, rank * 10);
      comm->AllReduce(m, ReduceOp::kMax);
      double sum_ranks = 10.0 * n * (n - 1) / 2;
      for (int i = 0; i < 5; ++i) {
        ASSERT_DOUBLE_EQ(s.data<double>()[i], sum_ranks + n * i);
        ASSERT_FLOAT_EQ(a.data<float>()[i], float(sum_ranks / n + i));
        ASSERT_EQ(m.data<int64_t>()[i], 10 * (n - 1) + i);
      }
    });
  }
}

// bfloat16 and float16 tensors are reduced in float32 and rounded once: the
// sums of small integers are exact, the averages the nearest 16-bit values.
TEST(Communicator, AllReduceOfSixteenBitTensors) {
  for (DataType t : {DataType::kBFloat16, DataType::kFloat16}) {
    for (int n : {1, 2, 3}) {
      RunRanks(n, [n, t](int rank, Communicator* comm) {
        Tensor s = Filled(t, 5, rank * 10);
        comm->AllReduce(s, ReduceOp::kSum);
        Tensor a = Filled(t, 5, rank * 10);
        comm->AllReduce(a, ReduceOp::kAvg);
        Tensor m = Filled(t, 5, rank * 10);
        comm->AllReduce(m, ReduceOp::kMax);
        const float sum_ranks = 10.0f * n * (n - 1) / 2;
        auto at = [t](const Tensor& x, int i) {
          return t == DataType::kBFloat16 ? ToFloat(x.data<bfloat16>()[i])
                                          : ToFloat(x.data<float16>()[i]);
        };
        auto round = [t](float v) {
          return t == DataType::kBFloat16 ? ToFloat(FromFloat<bfloat16>(v))
                                          : ToFloat(FromFloat<float16>(v));
        };
        for (int i = 0; i < 5; ++i) {
          ASSERT_EQ(at(s, i), sum_ranks + n * i) << DataTypeName(t);
          ASSERT_EQ(at(a, i), round(round(sum_ranks + n * i) / n))
              << DataTypeName(t);
          ASSERT_EQ(at(m, i), 10.0f * (n - 1) + i) << DataTypeName(t);
        }
      });
    }
  }
}

// Compressed allreduce: every rank's values rounded to 16 bits, added in
// float32 in rank order, the sum rounded to 16 bits again; the same bits on
// every rank, and half the bytes handed to the transport.
TEST(Communicator, CompressedAllReduceRoundsEachContribution) {
  for (WireFormat wire : {WireFormat::kBf16, WireFormat::kFp16}) {
    auto encode = wire == WireFormat::kBf16 ? FloatToBf16 : FloatToFp16;
    auto decode = wire == WireFormat::kBf16 ? Bf16ToFloat : Fp16ToFloat;
    auto round = [&](float v) { return decode(encode(v)); };
    auto value = [](int rank, int i) {
      return 0.1f * static_cast<float>(rank + 1) + 1e-3f * i;
    };
    const int n = 3, count = 7;
    std::vector<std::vector<float>> results(n);
    RunRanks(n, [&](int rank, Communicator* comm) {
      Tensor t(DataType::kFloat32, Shape{count});
      for (int i = 0; i < count; ++i)
        t.mutable_data<float>()[i] = value(rank, i);
      comm->AllReduceAsync(t, ReduceOp::kAvg, nullptr, wire)->Wait();
      results[rank].assign(t.data<float>(), t.data<float>() + count);
      EXPECT_EQ(comm->allreduce_wire_bytes(), count * 2);
    });
    for (int i = 0; i < count; ++i) {
      float sum = 0;
      for (int r = 0; r < n; ++r) sum += round(value(r, i));
      const float expected = round(sum) / n;
      for (int r = 0; r < n; ++r)
        ASSERT_EQ(results[r][i], expected)
            << WireFormatName(wire) << " rank " << r << " element " << i;
    }
  }
}

TEST(Communicator, CompressionTakesFloat32Only) {
  RunRanks(2, [](int, Communicator* comm) {
    Tensor t = Filled(DataType::kFloat64, 3, 0);
    try {
      comm->AllReduceAsync(t, ReduceOp::kSum, nullptr, WireFormat::kBf16);
      FAIL() << "a float64 tensor was compressed";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("float32"), std::string::npos)
          << e.what();
    }
    Tensor f = Filled(DataType::kFloat32, 3, 0);
    comm->AllReduce(f, ReduceOp::kSum);
    EXPECT_EQ(comm->allreduce_wire_bytes(), 12);
  });
}

TEST(Communicator, BroadcastAllGatherBarrier) {
  RunRanks(3, [](int rank, Communicator* comm) {
    Tensor t = Filled(DataType::kFloat32, 4, rank * 100);
    comm->Broadcast(t, 1);
    for (int i = 0; i < 4; ++i) ASSERT_EQ(t.data<float>()[i], 100 + i);
    std::vector<uint64_t> v = comm->AllGatherValue(rank * 7 + 1);
    ASSERT_EQ(v, (std::vector<uint64_t>{1, 8, 15}));
    comm->Barrier();
  });
}

// Block r of rank k's input holds 100 * k + 10 * r + i: rank r receives
// the reduction over k of block r.
Tensor Blocks(DataType dtype, int n, int64_t count, int rank) {
  Tensor t(dtype, Shape{n * count});
  t.raw_mutable_data();
  for (int r = 0; r < n; ++r)
    for (int64_t i = 0; i < count; ++i) {
      const double v = 100.0 * rank + 10.0 * r + i;
      if (dtype == DataType::kFloat32) t.data<float>()[r * count + i] = v;
      if (dtype == DataType::kFloat64) t.data<double>()[r * count + i] = v;
      if (dtype == DataType::kInt64) t.data<int64_t>()[r * count + i] = v;
    }
  return t;
}

TEST(Communicator, ReduceScatterSumAvgMax) {
  for (int n : {1, 2, 3, 4}) {
    RunRanks(n, [n](int rank, Communicator* comm) {
      Tensor s(DataType::kFloat64, Shape{3}), a(DataType::kFloat32, Shape{3}),
          m(DataType::kInt64, Shape{3});
      s.raw_mutable_data();
      a.raw_mutable_data();
      m.raw_mutable_data();
      comm->ReduceScatter(Blocks(DataType::kFloat64, n, 3, rank), s,
                          ReduceOp::kSum);
      comm->ReduceScatter(Blocks(DataType::kFloat32, n, 3, rank), a,
                          ReduceOp::kAvg);
      comm->ReduceScatter(Blocks(DataType::kInt64, n, 3, rank), m,
                          ReduceOp::kMax);
      const double ranks = 100.0 * n * (n - 1) / 2;  // sum over k of 100 k
      for (int i = 0; i < 3; ++i) {
        const double own = 10.0 * rank + i;
        ASSERT_DOUBLE_EQ(s.data<double>()[i], ranks + n * own);
        ASSERT_FLOAT_EQ(a.data<float>()[i], float(ranks / n + own));
        ASSERT_EQ(m.data<int64_t>()[i], int64_t(100 * (n - 1) + own));
      }
    });
  }
}

TEST(Communicator, AllGatherInPlaceFromAViewOfItsBlock) {
  RunRanks(3, [](int rank, Communicator* comm) {
    Tensor full(DataType::kFloat32, Shape{6});
    full.raw_mutable_data();
    Tensor mine = full.Slice(2 * rank, 2 * rank + 2);
    mine.data<float>()[0] = 10.0f * rank;
    mine.data<float>()[1] = 10.0f * rank + 1;
    comm->AllGather(mine, full);
    for (int r = 0; r < 3; ++r) {
      ASSERT_EQ(full.data<float>()[2 * r], 10.0f * r);
      ASSERT_EQ(full.data<float>()[2 * r + 1], 10.0f * r + 1);
    }
  });
}

TEST(Communicator, ReduceScatterByAllReduceOnTransportsWithoutOne) {
  auto group = InProcessGroup::Create(3);
  std::vector<std::thread> threads;
  std::vector<Tensor> outs(3);
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      testing::RequiredOnlyBackend b(group->Backend(r));
      Tensor in = Blocks(DataType::kFloat64, 3, 2, r);
      outs[r] = Tensor(DataType::kFloat64, Shape{2});
      b.ReduceScatter(in.raw_data(), outs[r].raw_mutable_data(), 2,
                      DataType::kFloat64, ReduceOp::kSum);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 2; ++i)
      ASSERT_EQ(outs[r].data<double>()[i], 300.0 + 3 * (10.0 * r + i));
}

TEST(Communicator, AsyncCollectivesCompleteInIssueOrder) {
  RunRanks(2, [](int rank, Communicator* comm) {
    std::vector<Tensor> ts;
    std::vector<CommHandlePtr> hs;
    for (int k = 0; k < 20; ++k) {
      ts.push_back(Filled(DataType::kFloat32, 1000, rank + k));
      hs.push_back(comm->AllReduceAsync(ts.back(), ReduceOp::kSum));
    }
    hs.back()->Wait();
    for (int k = 0; k < 20; ++k) {
      ASSERT_TRUE(hs[k]->done()) << "an earlier collective must be done";
      ASSERT_EQ(ts[k].data<float>()[0], float(1 + 2 * k));
    }
  });
}

TEST(Communicator, ShutdownDrainsAndRefusesNewWork) {
  auto group = InProcessGroup::Create(1);
  Communicator comm(group->Backend(0));
  Tensor t = Filled(DataType::kFloat32, 3, 1);
  CommHandlePtr h = comm.AllReduceAsync(t, ReduceOp::kSum);
  comm.Shutdown();
  EXPECT_TRUE(h->done());
  EXPECT_THROW(comm.Barrier(), Error);
  comm.Shutdown();  // idempotent
}

TEST(Communicator, AbortWakesTheOtherRanks) {
  auto group = InProcessGroup::Create(2);
  Communicator c0(group->Backend(0)), c1(group->Backend(1));
  std::string err;
  std::thread waiter([&] {
    try {
      c1.Barrier();
    } catch (const Error& e) {
      err = e.what();
    }
  });
  EXPECT_THROW(c0.Abort(3), Error);
  waiter.join();
  EXPECT_NE(err.find("aborted"), std::string::npos) << err;
}

// ---- the ops, through the executor ----

proto::ProgramDesc OneOp(proto::OpDesc op,
                         const std::vector<std::pair<std::string, Shape>>& vars,
                         const std::vector<std::string>& handles = {}) {
  proto::ProgramDesc p = NewProgram();
  auto* b = p.mutable_blocks(0);
  for (const auto& v : vars)
    AddVarDesc(b, v.first, DataType::kFloat32, v.second, true);
  for (const auto& h : handles)
    AddVarDesc(b, h, DataType::kInt64, Shape{})
        ->set_type(proto::VarDesc::COMM_HANDLE);
  *b->add_ops() = op;
  return p;
}

TEST(CollectiveOps, CoalescedBucketIsReducedWithOneAllReduce) {
  RunRanks(2, [](int rank, Communicator* comm) {
    proto::ProgramDesc p = NewProgram();
    auto* b = p.mutable_blocks(0);
    AddVarDesc(b, "g1", DataType::kFloat32, Shape{2, 3});
    AddVarDesc(b, "g2", DataType::kFloat32, Shape{4});
    AddVarDesc(b, "fused", DataType::kFloat32, Shape{10});
    AddVarDesc(b, "h", DataType::kInt64, Shape{})
        ->set_type(proto::VarDesc::COMM_HANDLE);
    AddVarDesc(b, "x", DataType::kFloat32, Shape{2, 3});
    AddVarDesc(b, "y", DataType::kFloat32, Shape{4});
    *b->add_ops() =
        MakeOp("coalesce_tensor", {},
               {{"Output", {"g1", "g2"}}, {"FusedOutput", {"fused"}}},
               {{"dtype", int32_t{0}}, {"numels", std::vector<int64_t>{6, 4}}});
    // The "backward pass": scale writes the grads through mutable_data.
    *b->add_ops() =
        MakeOp("scale", {{"X", {"x"}}}, {{"Out", {"g1"}}}, {{"scale", 1.0f}});
    *b->add_ops() =
        MakeOp("scale", {{"X", {"y"}}}, {{"Out", {"g2"}}}, {{"scale", 1.0f}});
    *b->add_ops() = MakeOp("c_allreduce", {{"X", {"fused"}}},
                           {{"Out", {"fused"}}, {"Handle", {"h"}}},
                           {{"reduce_type", std::string("avg")}});
    *b->add_ops() = MakeOp("c_wait", {{"Handle", {"h"}}}, {{"Out", {"fused"}}});
    Executor exe;
    exe.mutable_device_context()->set_communicator(comm);
    Scope scope;
    auto prepared = exe.Prepare(p, &scope);
    for (int step = 0; step < 3; ++step) {
      Tensor x = Filled(DataType::kFloat32, 6, rank * 6 + step);
      x.Resize(Shape{2, 3});
      Tensor y = Filled(DataType::kFloat32, 4, rank * 4 + step);
      std::vector<Tensor> out;
      exe.Run(prepared.get(), {{"x", x}, {"y", y}}, {"g1", "g2", "fused"},
              &out);
      ASSERT_EQ(out[0].shape(), Shape({2, 3}));
      for (int i = 0; i < 6; ++i)
        ASSERT_FLOAT_EQ(out[0].data<float>()[i], 3.0f + step + i);
      for (int i = 0; i < 4; ++i)
        ASSERT_FLOAT_EQ(out[1].data<float>()[i], 2.0f + step + i);
      // g1 and g2 are views of the fused buffer.
      Variable* g1 = prepared->local_scope()->FindVar("g1");
      Variable* fused = prepared->local_scope()->FindVar("fused");
      ASSERT_EQ(g1->GetTensor().buffer(), fused->GetTensor().buffer());
      ASSERT_EQ(out[2].data<float>()[6], out[1].data<float>()[0]);
    }
  });
}

TEST(CollectiveOps, BroadcastAndBarrierOps) {
  RunRanks(3, [](int rank, Communicator* comm) {
    Executor exe;
    exe.mutable_device_context()->set_communicator(comm);
    Scope scope;
    scope.Var("w")->GetMutableTensor()->CopyFrom(
        Filled(DataType::kFloat32, 3, rank));
    exe.RunOnce(OneOp(MakeOp("c_broadcast", {{"X", {"w"}}}, {{"Out", {"w"}}},
                             {{"root", int32_t{2}}}),
                      {{"w", Shape{3}}}),
                &scope);
    exe.RunOnce(OneOp(MakeOp("c_barrier", {}, {}), {}), &scope);
    ASSERT_EQ(scope.GetVar("w")->GetTensor().data<float>()[0], 2.0f);
  });
}

// The sharded update's collectives: a reduce-scatter of the gradient
// buffer, an update of this rank's view of the parameter buffer, and an
// all-gather of that view in place: every rank ends with the parameters
// an allreduce and a full update give, bit for bit the same on all ranks.
TEST(CollectiveOps, ReduceScatterShardViewAllGatherEqualAnAllReduce) {
  const int n = 3;
  std::vector<std::vector<float>> params(n);
  RunRanks(n, [&params](int rank, Communicator* comm) {
    proto::ProgramDesc p = NewProgram();
    auto* b = p.mutable_blocks(0);
    for (const char* v : {"g", "w"})
      AddVarDesc(b, v, DataType::kFloat32, Shape{6}, true);
    for (const char* v : {"g_shard", "w_shard"})
      AddVarDesc(b, v, DataType::kFloat32, Shape{2});
    for (const char* h : {"h1", "h2"})
      AddVarDesc(b, h, DataType::kInt64, Shape{})
          ->set_type(proto::VarDesc::COMM_HANDLE);
    *b->add_ops() =
        MakeOp("c_reducescatter", {{"X", {"g"}}},
               {{"Out", {"g_shard"}}, {"Handle", {"h1"}}},
               {{"reduce_type", std::string("avg")}, {"nranks", int32_t{n}}});
    *b->add_ops() =
        MakeOp("c_wait", {{"Handle", {"h1"}}}, {{"Out", {"g_shard"}}});
    *b->add_ops() = MakeOp("shard_view", {{"X", {"w"}}}, {{"Out", {"w_shard"}}},
                           {{"nranks", int32_t{n}}});
    // w_shard -= g_shard, through the view.
    *b->add_ops() =
        MakeOp("elementwise_sub", {{"X", {"w_shard"}}, {"Y", {"g_shard"}}},
               {{"Out", {"w_shard"}}});
    *b->add_ops() =
        MakeOp("c_allgather", {{"X", {"w_shard"}}},
               {{"Out", {"w"}}, {"Handle", {"h2"}}}, {{"nranks", int32_t{n}}});
    *b->add_ops() = MakeOp("c_wait", {{"Handle", {"h2"}}}, {{"Out", {"w"}}});
    Executor exe;
    exe.mutable_device_context()->set_communicator(comm);
    Scope scope;
    scope.Var("w")->GetMutableTensor()->CopyFrom(
        Filled(DataType::kFloat32, 6, 1000));
    scope.Var("g")->GetMutableTensor()->CopyFrom(
        Filled(DataType::kFloat32, 6, 3 * rank));
    exe.RunOnce(p, &scope);
    const Tensor& w = scope.GetVar("w")->GetTensor();
    params[rank].assign(w.data<float>(), w.data<float>() + 6);
  });
  // The average gradient is 3 * (n - 1) / 2 + i = 3 + i.
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < 6; ++i)
      ASSERT_EQ(params[r][i], 1000.0f + i - (3.0f + i)) << "rank " << r;
}

TEST(CollectiveOps, ReduceScatterRefusesAWrongRankCountOrShape) {
  RunRanks(2, [](int rank, Communicator* comm) {
    Executor exe;
    exe.mutable_device_context()->set_communicator(comm);
    Scope scope;
    scope.Var("g")->GetMutableTensor()->CopyFrom(
        Filled(DataType::kFloat32, 6, rank));
    auto run = [&](int nranks, int64_t rows) {
      proto::ProgramDesc p =
          OneOp(MakeOp("c_reducescatter", {{"X", {"g"}}}, {{"Out", {"s"}}},
                       {{"nranks", int32_t{nranks}}}),
                {{"g", Shape{6}}, {"s", Shape{rows}}});
      exe.RunOnce(p, &scope);
    };
    try {
      run(3, 2);
      FAIL();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("planned for 3 ranks and runs on 2"),
                std::string::npos)
          << e.what();
    }
    run(2, 3);
    EXPECT_EQ(scope.GetVar("s")->GetTensor().numel(), 3);
  });
}

TEST(CollectiveOps, WithoutACommunicatorTheErrorSaysHowToRun) {
  Executor exe;
  Scope scope;
  scope.Var("w")->GetMutableTensor()->CopyFrom(
      Filled(DataType::kFloat32, 3, 0));
  try {
    exe.RunOnce(OneOp(MakeOp("c_allreduce", {{"X", {"w"}}}, {{"Out", {"w"}}}),
                      {{"w", Shape{3}}}),
                &scope);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mpirun"), std::string::npos);
  }
}

TEST(CollectiveOps, PserverOpsSayToTranspile) {
  Executor exe;
  Scope scope;
  scope.Var("g")->GetMutableTensor()->CopyFrom(
      Filled(DataType::kFloat32, 3, 0));
  try {
    exe.RunOnce(OneOp(MakeOp("send", {{"X", {"g"}}}, {}), {{"g", Shape{3}}}),
                &scope);
    FAIL();
  } catch (const Error& e) {
    // What a Python user and a trainer user do, not a C++ function.
    const std::string what = e.what();
    EXPECT_NE(what.find("fluid.transpiler.to_collective(program)"),
              std::string::npos);
    EXPECT_NE(what.find("fluid.MPIExecutor"), std::string::npos);
    EXPECT_NE(what.find("trainer --program"), std::string::npos);
    EXPECT_EQ(what.find("PserverToCollective"), std::string::npos);
  }
}

// ---- the collective check: ranks that issue different collectives ----

// What rank `rank`'s collective threw (empty: it did not).
std::string ErrorOf(const std::function<void()>& collective) {
  try {
    collective();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Before the check, rank 0's allgather met rank 1's allreduce: each read
// the other's buffer as its own (garbage, or a crash). Now both fail at
// once, naming both collectives, and nothing later runs.
TEST(CollectiveCheck, DifferentKindsFailOnEveryRankNamingEach) {
  std::vector<std::string> errors(2), later(2);
  RunRanks(2, [&](int rank, Communicator* comm) {
    comm->Barrier();  // collective #1 matches
    errors[rank] = ErrorOf([&] {
      if (rank == 0) {
        comm->AllGatherValue(7);
      } else {
        Tensor t = Filled(DataType::kFloat32, 4096, 1);
        comm->AllReduce(t, ReduceOp::kAvg);
      }
    });
    later[rank] = ErrorOf([&] { comm->Barrier(); });
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(errors[r].find("collective #2 differs across ranks: rank 0 "
                             "allgather int64 x 1, rank 1 allreduce(avg) "
                             "float32 x 4096"),
              std::string::npos)
        << "rank " << r << ": " << errors[r];
    EXPECT_NE(later[r].find("collective #3 not run: the ranks' collectives "
                            "no longer match: collective #2 differs"),
              std::string::npos)
        << "rank " << r << ": " << later[r];
  }
}

// Sizes, element types, reduce ops and roots count as well as kinds; ranks
// that agree are listed together.
TEST(CollectiveCheck, SizesTypesOpsAndRootsMustAgree) {
  struct Case {
    std::function<void(int, Communicator*)> issue;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](int rank, Communicator* c) {
         c->AllReduce(Filled(DataType::kFloat32, rank == 1 ? 12 : 10, 0),
                      ReduceOp::kSum);
       },
       "collective #1 differs across ranks: ranks 0, 2 allreduce(sum) "
       "float32 x 10, rank 1 allreduce(sum) float32 x 12"},
      {[](int rank, Communicator* c) {
         c->AllReduce(
             Filled(rank == 2 ? DataType::kFloat64 : DataType::kFloat32, 5, 0),
             ReduceOp::kSum);
       },
       "ranks 0, 1 allreduce(sum) float32 x 5, rank 2 allreduce(sum) "
       "float64 x 5"},
      {[](int rank, Communicator* c) {
         c->AllReduce(Filled(DataType::kFloat32, 5, 0),
                      rank == 0 ? ReduceOp::kMax : ReduceOp::kAvg);
       },
       "rank 0 allreduce(max) float32 x 5, ranks 1, 2 allreduce(avg) "
       "float32 x 5"},
      {[](int rank, Communicator* c) {
         c->Broadcast(Filled(DataType::kInt64, 3, 0), rank == 1 ? 1 : 0);
       },
       "ranks 0, 2 broadcast int64 x 3 from rank 0, rank 1 broadcast int64 "
       "x 3 from rank 1"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> errors(3);
    RunRanks(3, [&](int rank, Communicator* comm) {
      errors[rank] = ErrorOf([&] { c.issue(rank, comm); });
    });
    for (int r = 0; r < 3; ++r)
      EXPECT_NE(errors[r].find(c.expected), std::string::npos)
          << "rank " << r << ": " << errors[r];
  }
}

// The other thread's case: rank 0 issues one more collective from a
// second thread while its main thread trains; the one comm thread orders
// them, and the first that differs from rank 1's ends every rank's work.
TEST(CollectiveCheck, AnExtraCollectiveFromAnotherThreadIsCaught) {
  std::vector<std::string> errors(2);
  std::string side_error;
  RunRanks(2, [&](int rank, Communicator* comm) {
    std::thread side;
    for (int step = 0; step < 1000 && errors[rank].empty(); ++step) {
      if (rank == 0 && step == 5) {
        const int64_t issued = comm->flight_recorder()->issued();
        side = std::thread(
            [&] { side_error = ErrorOf([&] { comm->AllGatherValue(1); }); });
        // Issued before this thread's next allreduce (the order the one
        // comm thread runs them in is the order of issue).
        while (comm->flight_recorder()->issued() == issued)
          std::this_thread::yield();
      }
      errors[rank] = ErrorOf([&] {
        Tensor t = Filled(DataType::kFloat32, 64, step);
        comm->AllReduce(t, ReduceOp::kAvg);
      });
    }
    if (side.joinable()) side.join();
  });
  EXPECT_NE(side_error.find("rank 0 allgather int64 x 1, rank 1 "
                            "allreduce(avg) float32 x 64"),
            std::string::npos)
      << side_error;
  // Rank 1 is told what rank 0 issued; rank 0's main thread finds the
  // communicator stopped by it.
  EXPECT_NE(errors[1].find("rank 0 allgather int64 x 1"), std::string::npos)
      << errors[1];
  EXPECT_NE(errors[0].find("collective #7 not run: the ranks' collectives no "
                           "longer match: collective #6 differs across ranks: "
                           "rank 0 allgather int64 x 1"),
            std::string::npos)
      << errors[0];
}

TEST(CollectiveCheck, RanksThatDisagreeOnTheCheckFailOnTheFirstCollective) {
  auto group = InProcessGroup::Create(2);
  Communicator c0(group->Backend(0), true), c1(group->Backend(1), false);
  std::string e1;
  std::thread other([&] { e1 = ErrorOf([&] { c1.Barrier(); }); });
  const std::string e0 = ErrorOf([&] { c0.Barrier(); });
  other.join();
  for (const std::string& e : {e0, e1})
    EXPECT_NE(e.find("ranks disagree on the collective check "
                     "(FLUID_COLLECTIVE_CHECK): rank 0 on, rank 1 off"),
              std::string::npos)
        << e;
}

// A backend that counts the check's exchanges.
class CountingBackend : public testing::RequiredOnlyBackend {
 public:
  CountingBackend(std::unique_ptr<CommBackend> inner, std::atomic<int>* n)
      : RequiredOnlyBackend(std::move(inner)), n_(n) {}
  void CheckExchange(int64_t* values, int count, const char* what,
                     int64_t bytes) override {
    ++*n_;
    RequiredOnlyBackend::CheckExchange(values, count, what, bytes);
  }

 private:
  std::atomic<int>* n_;
};

TEST(CollectiveCheck, OnByDefaultAndOffWithTheEnvironmentSwitch) {
  for (const char* setting : {"", "1", "0", "off"}) {
    if (*setting) {
      setenv("FLUID_COLLECTIVE_CHECK", setting, 1);
    } else {
      unsetenv("FLUID_COLLECTIVE_CHECK");
    }
    std::atomic<int> exchanges{0};
    RunRanks(
        2,
        [](int rank, Communicator* comm) {
          for (int i = 0; i < 4; ++i) {
            Tensor t = Filled(DataType::kFloat32, 3, rank);
            comm->AllReduce(t, ReduceOp::kSum);
            ASSERT_EQ(t.data<float>()[0], 1.0f);
          }
        },
        [&exchanges](std::unique_ptr<CommBackend> b) {
          return std::make_unique<CountingBackend>(std::move(b), &exchanges);
        });
    // Off, the ranks still compare the setting on their first collective.
    const bool off =
        std::string(setting) == "0" || std::string(setting) == "off";
    EXPECT_EQ(exchanges.load(), off ? 2 : 8)
        << "FLUID_COLLECTIVE_CHECK=" << setting;
  }
  setenv("FLUID_COLLECTIVE_CHECK", "maybe", 1);
  const std::string e =
      ErrorOf([] { Communicator c(InProcessGroup::Create(1)->Backend(0)); });
  unsetenv("FLUID_COLLECTIVE_CHECK");
  EXPECT_NE(e.find("FLUID_COLLECTIVE_CHECK='maybe': expected 0 or off"),
            std::string::npos)
      << e;
}

// A handle var read as a tensor (fetched, here) names both types readably,
// not as the mangled C++ names (St10shared_ptrIN5fluid10CommHandleEE).
TEST(CollectiveOps, AHandleReadAsATensorNamesTheTypesReadably) {
  RunRanks(1, [](int, Communicator* comm) {
    Executor exe;
    exe.mutable_device_context()->set_communicator(comm);
    Scope scope;
    scope.Var("w")->GetMutableTensor()->CopyFrom(
        Filled(DataType::kFloat32, 3, 0));
    proto::ProgramDesc p = OneOp(MakeOp("c_allreduce", {{"X", {"w"}}},
                                        {{"Out", {"w"}}, {"Handle", {"h"}}},
                                        {{"reduce_type", std::string("sum")}}),
                                 {{"w", Shape{3}}}, {"h"});
    *p.mutable_blocks(0)->add_ops() =
        MakeOp("c_wait", {{"Handle", {"h"}}}, {{"Out", {"w"}}});
    auto prepared = exe.Prepare(p, &scope);
    std::vector<Tensor> out;
    const std::string e =
        ErrorOf([&] { exe.Run(prepared.get(), {}, {"h"}, &out); });
    EXPECT_NE(e.find("variable holds a collective handle (COMM_HANDLE), not "
                     "a tensor"),
              std::string::npos)
        << e;
    EXPECT_EQ(e.find("shared_ptr"), std::string::npos) << e;
  });
}

// ---- tensor messages (a pipeline's send_v2 / recv_v2) ----

// The receive is issued before the send, as the pipeline issues it; the
// receiver learns dtype, shape and sequence offsets from the header, with
// the collective check on and off (the header then travels alone): one
// exchange per message, then the offsets and the values.
TEST(TensorMessage, ArrivesWithItsShapeAndOffsetsWithTheCheckOnAndOff) {
  for (const char* setting : {"1", "0"}) {
    setenv("FLUID_COLLECTIVE_CHECK", setting, 1);
    std::atomic<int> exchanges{0};
    RunRanks(
        2,
        [](int rank, Communicator* comm) {
          Tensor x = Filled(DataType::kInt64, 6, 40);
          x.Resize(Shape{3, 2});
          x.set_lod(LoD{0, 1, 3});
          Tensor empty(DataType::kFloat32, Shape{0, 4});
          empty.raw_mutable_data();
          if (rank == 0) {
            comm->SendTensorAsync(x, nullptr, 5)->Wait();
            comm->SendTensorAsync(empty, nullptr, 6)->Wait();
            return;
          }
          std::vector<std::pair<DataType, Shape>> seen;
          auto accept = [&seen](DataType t, const Shape& s) {
            seen.push_back({t, s});
          };
          CommHandlePtr first = comm->RecvTensorAsync(
              0, DataType::kInt64, Place::CPU(), accept, nullptr, 5);
          CommHandlePtr second = comm->RecvTensorAsync(
              0, DataType::kFloat32, Place::CPU(), accept, nullptr, 6);
          first->Wait();
          second->Wait();
          const Tensor& got = *first->received();
          ASSERT_EQ(got.shape(), (Shape{3, 2}));
          EXPECT_EQ(got.lod(), (LoD{0, 1, 3}));
          for (int i = 0; i < 6; ++i) EXPECT_EQ(got.data<int64_t>()[i], 40 + i);
          EXPECT_EQ(second->received()->shape(), (Shape{0, 4}));
          ASSERT_EQ(seen.size(), 2u);
          EXPECT_EQ(seen[1].first, DataType::kFloat32);
        },
        [&exchanges](std::unique_ptr<CommBackend> b) {
          return std::make_unique<CountingBackend>(std::move(b), &exchanges);
        });
    EXPECT_EQ(exchanges.load(), 4) << "FLUID_COLLECTIVE_CHECK=" << setting;
  }
  unsetenv("FLUID_COLLECTIVE_CHECK");
}

// A receiver that refuses the header gets the error from its handle, and
// the message is still received whole (the sender does not wait forever);
// two ends at different micro-batches fail the collective check on both.
TEST(TensorMessage, ARefusedHeaderAndAMicroBatchMismatchAreErrors) {
  std::vector<std::string> refused(2), mismatch(2);
  RunRanks(2, [&](int rank, Communicator* comm) {
    Tensor x = Filled(DataType::kFloat32, 4, 0);
    if (rank == 0) {
      refused[0] =
          ErrorOf([&] { comm->SendTensorAsync(x, nullptr, 0)->Wait(); });
      mismatch[0] =
          ErrorOf([&] { comm->SendTensorAsync(x, nullptr, 1)->Wait(); });
      return;
    }
    refused[1] = ErrorOf([&] {
      comm->RecvTensorAsync(
              0, DataType::kFloat32, Place::CPU(),
              [](DataType, const Shape& s) {
                FLUID_ENFORCE(s.rank() == 2, "refused ", s);
              },
              nullptr, 0)
          ->Wait();
    });
    mismatch[1] = ErrorOf([&] {
      comm->RecvTensorAsync(0, DataType::kFloat32, Place::CPU(), nullptr,
                            nullptr, 2)
          ->Wait();
    });
  });
  EXPECT_EQ(refused[0], "");
  EXPECT_NE(refused[1].find("refused [4]"), std::string::npos) << refused[1];
  for (int r = 0; r < 2; ++r)
    EXPECT_NE(mismatch[r].find("differs across ranks"), std::string::npos)
        << "rank " << r << ": " << mismatch[r];
  EXPECT_NE(mismatch[1].find("broadcast float32 message from rank 0 "
                             "(micro-batch 1)"),
            std::string::npos)
      << mismatch[1];
}

}  // namespace
}  // namespace fluid
