// Rings (groups of ranks) of a communicator, and the tensor-parallel ops
// that run over them (c_split, c_concat), with threads standing in for
// ranks. Four ranks make the layout tensor parallelism uses: ring 1 the
// tensor-parallel pairs {0, 1} and {2, 3}, ring 2 the data-parallel pairs
// {0, 2} and {1, 3}.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "src/distributed/communicator.h"
#include "src/distributed/in_process_backend.h"
#include "src/framework/device.h"
#include "src/framework/executor.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/in_process_ranks.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::RandomTensor;
using testing::RunRanks;
using testing::ToVector;

// Float64 [n] with element i = base + i.
Tensor Iota(int64_t n, double base) {
  Tensor t;
  double* p = t.mutable_data<double>(Shape{n});
  for (int64_t i = 0; i < n; ++i) p[i] = base + i;
  return t;
}

// Rings 1 (tensor-parallel pairs) and 2 (data-parallel pairs) of `comm`.
std::pair<Communicator*, Communicator*> MakeRings(int rank,
                                                  Communicator* comm) {
  Communicator* tp = comm->CreateGroup(1, rank / 2, rank);
  Communicator* dp = comm->CreateGroup(2, rank % 2, rank);
  return {tp, dp};
}

TEST(CommunicatorGroups, RingsReduceOverTheirRanks) {
  RunRanks(4, [](int rank, Communicator* comm) {
    auto [tp, dp] = MakeRings(rank, comm);
    EXPECT_EQ(tp->size(), 2);
    EXPECT_EQ(tp->rank(), rank % 2);
    EXPECT_EQ(dp->size(), 2);
    EXPECT_EQ(dp->rank(), rank / 2);
    Tensor a = Iota(3, rank), b = Iota(3, rank), w = Iota(3, rank);
    tp->AllReduce(a, ReduceOp::kSum);
    dp->AllReduce(b, ReduceOp::kSum);
    comm->AllReduce(w, ReduceOp::kSum);
    const int tp_first = rank / 2 * 2, dp_first = rank % 2;
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(a.data<double>()[i], 2 * tp_first + 1 + 2 * i);
      EXPECT_EQ(b.data<double>()[i], 2 * dp_first + 2 + 2 * i);
      EXPECT_EQ(w.data<double>()[i], 6 + 4 * i);
    }
  });
}

TEST(CommunicatorGroups, GroupFindsRingsAndZeroIsTheWorld) {
  RunRanks(4, [](int rank, Communicator* comm) {
    auto [tp, dp] = MakeRings(rank, comm);
    EXPECT_EQ(comm->Group(0), comm);
    EXPECT_EQ(comm->Group(1), tp);
    EXPECT_EQ(comm->Group(2), dp);
    // The same ring and color again: the ring made, nothing collective.
    EXPECT_EQ(comm->CreateGroup(1, rank / 2, rank), tp);
    const std::string unknown = ErrorOf([&] { comm->Group(7); });
    EXPECT_NE(unknown.find("ring 7"), std::string::npos) << unknown;
    EXPECT_NE(unknown.find("CreateGroup"), std::string::npos) << unknown;
    EXPECT_NE(unknown.find("rings made: 1, 2"), std::string::npos) << unknown;
    const std::string recolored =
        ErrorOf([&] { comm->CreateGroup(1, rank / 2 + 5, rank); });
    EXPECT_NE(recolored.find("ring 1 was made with color"), std::string::npos)
        << recolored;
    const std::string zero = ErrorOf([&] { comm->CreateGroup(0, 0, rank); });
    EXPECT_NE(zero.find("ring 0"), std::string::npos) << zero;
  });
}

// Ranks are ordered by key, then by their rank in the parent.
TEST(CommunicatorGroups, KeysOrderTheRanks) {
  RunRanks(4, [](int rank, Communicator* comm) {
    Communicator* reversed = comm->CreateGroup(3, 0, -rank);
    EXPECT_EQ(reversed->size(), 4);
    EXPECT_EQ(reversed->rank(), 3 - rank);
    Communicator* tied = comm->CreateGroup(4, rank % 2, 0);
    EXPECT_EQ(tied->rank(), rank / 2);
    Communicator* alone = comm->CreateGroup(5, rank, 0);
    EXPECT_EQ(alone->size(), 1);
    Tensor t = Iota(2, rank);
    alone->AllReduce(t, ReduceOp::kSum);
    EXPECT_EQ(t.data<double>()[1], rank + 1);
    // Broadcast's root is a rank of the ring.
    Tensor b = Iota(2, rank);
    reversed->Broadcast(b, 0);
    EXPECT_EQ(b.data<double>()[0], 3);
  });
}

// Aborting an in-process group aborts the rings split from it: a rank
// waiting in a ring collective throws instead of waiting for a rank that
// failed (RunRanks aborts the group when a rank throws).
TEST(CommunicatorGroups, AbortReachesTheRingsSplitFromTheGroup) {
  auto group = InProcessGroup::Create(2);
  std::vector<std::unique_ptr<CommBackend>> world, rings(2);
  for (int r = 0; r < 2; ++r) world.push_back(group->Backend(r));
  std::vector<std::thread> split;
  for (int r = 0; r < 2; ++r)
    split.emplace_back([&, r] { rings[r] = world[r]->Split(0, r); });
  for (auto& t : split) t.join();
  std::string error;
  std::thread waiting([&] {
    error = ErrorOf([&] {
      double x = 1;
      rings[1]->AllReduce(&x, 1, DataType::kFloat64, ReduceOp::kSum);
    });
  });
  group->AbortAll();
  waiting.join();
  EXPECT_NE(error.find("aborted"), std::string::npos) << error;
}

// Collectives on two rings, issued in a different order on different
// ranks, each waited for only after both were issued: each ring runs on
// its own worker, so neither waits for the other.
TEST(CommunicatorGroups, RingsIssuedInAnyOrderDoNotDeadlock) {
  RunRanks(4, [](int rank, Communicator* comm) {
    auto [tp, dp] = MakeRings(rank, comm);
    for (int round = 0; round < 20; ++round) {
      Tensor a = Iota(64, rank), b = Iota(64, rank);
      CommHandlePtr first, second;
      if ((rank + round) % 2 == 0) {
        first = tp->AllReduceAsync(a, ReduceOp::kSum);
        second = dp->AllReduceAsync(b, ReduceOp::kSum);
      } else {
        second = dp->AllReduceAsync(b, ReduceOp::kSum);
        first = tp->AllReduceAsync(a, ReduceOp::kSum);
      }
      second->Wait();
      first->Wait();
      ASSERT_EQ(a.data<double>()[0], 2 * (rank / 2 * 2) + 1);
      ASSERT_EQ(b.data<double>()[0], 2 * (rank % 2) + 2);
    }
  });
}

// ---- the ops, through the executor ----

// A program of `ops` over persistable float64 vars of the given shapes
// (and comm handles).
proto::ProgramDesc Program(
    const std::vector<proto::OpDesc>& ops,
    const std::vector<std::pair<std::string, Shape>>& vars,
    const std::vector<std::string>& handles = {}) {
  proto::ProgramDesc p = NewProgram();
  auto* b = p.mutable_blocks(0);
  for (const auto& v : vars)
    AddVarDesc(b, v.first, DataType::kFloat64, v.second, true);
  for (const auto& h : handles)
    AddVarDesc(b, h, DataType::kInt64, Shape{})
        ->set_type(proto::VarDesc::COMM_HANDLE);
  for (const auto& op : ops) *b->add_ops() = op;
  return p;
}

// Runs `program` once with `comm` on `scope`.
void RunWith(Communicator* comm, const proto::ProgramDesc& program,
             Scope* scope) {
  Executor exe;
  exe.mutable_device_context()->set_communicator(comm);
  exe.RunOnce(program, scope);
}

AttributeMap RingAttrs(int axis, int ring, int nranks) {
  return {{"axis", int32_t{axis}},
          {"ring_id", int32_t{ring}},
          {"nranks", int32_t{nranks}}};
}

// Rows [begin, end) of axis `axis` of a float64 tensor, naively: the
// values of x[outer, begin:end, inner] in order.
std::vector<double> Slice(const Tensor& x, int axis, int64_t begin,
                          int64_t end) {
  const Shape& s = x.shape();
  const int64_t outer = s.Product(0, axis), dim = s[axis];
  const int64_t inner = s.Product(axis + 1, s.rank());
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t a = begin; a < end; ++a)
      for (int64_t in = 0; in < inner; ++in)
        out.push_back(x.data<double>()[(o * dim + a) * inner + in]);
  return out;
}

// The ops with a ring_id run over that ring: an allreduce on each ring,
// left in flight in a different order on different ranks, then waited.
TEST(CommunicatorGroupOps, CollectiveOpsRunOverTheirRing) {
  RunRanks(4, [](int rank, Communicator* comm) {
    MakeRings(rank, comm);
    auto reduce = [](const char* var, int ring, const char* handle) {
      return MakeOp("c_allreduce", {{"X", {var}}},
                    {{"Out", {var}}, {"Handle", {handle}}},
                    {{"ring_id", int32_t{ring}}});
    };
    std::vector<proto::OpDesc> ops = {reduce("a", 1, "ha"),
                                      reduce("b", 2, "hb")};
    if (rank % 2 == 1) std::swap(ops[0], ops[1]);
    ops.push_back(MakeOp("c_wait", {{"Handle", {"ha"}}}, {{"Out", {"a"}}}));
    ops.push_back(MakeOp("c_wait", {{"Handle", {"hb"}}}, {{"Out", {"b"}}}));
    ops.push_back(MakeOp("c_allgather", {{"X", {"a"}}}, {{"Out", {"g"}}},
                         {{"nranks", int32_t{2}}, {"ring_id", int32_t{2}}}));
    ops.push_back(MakeOp("c_barrier", {}, {}, {{"ring_id", int32_t{1}}}));
    Scope scope;
    scope.Var("a")->GetMutableTensor()->CopyFrom(Iota(2, rank));
    scope.Var("b")->GetMutableTensor()->CopyFrom(Iota(2, rank));
    RunWith(comm,
            Program(ops, {{"a", Shape{2}}, {"b", Shape{2}}, {"g", Shape{4}}},
                    {"ha", "hb"}),
            &scope);
    const int tp_first = rank / 2 * 2;
    EXPECT_EQ(scope.GetVar("a")->GetTensor().data<double>()[1],
              2 * tp_first + 3);
    EXPECT_EQ(scope.GetVar("b")->GetTensor().data<double>()[0],
              2 * (rank % 2) + 2);
    // Ring 2 gathers the tensor-parallel sums of both pairs.
    EXPECT_EQ(ToVector<double>(scope.GetVar("g")->GetTensor()),
              std::vector<double>({1, 3, 5, 7}));
  });
}

TEST(CommunicatorGroupOps, RanksAreCheckedAgainstTheRingAndRingsMustExist) {
  RunRanks(4, [](int rank, Communicator* comm) {
    MakeRings(rank, comm);
    Scope scope;
    scope.Var("a")->GetMutableTensor()->CopyFrom(Iota(2, rank));
    const std::string wrong = ErrorOf([&] {
      RunWith(
          comm,
          Program({MakeOp("c_allgather", {{"X", {"a"}}}, {{"Out", {"g"}}},
                          {{"nranks", int32_t{4}}, {"ring_id", int32_t{1}}})},
                  {{"a", Shape{2}}, {"g", Shape{8}}}),
          &scope);
    });
    EXPECT_NE(wrong.find("planned for 4 ranks and runs on 2"),
              std::string::npos)
        << wrong;
    const std::string unknown = ErrorOf([&] {
      RunWith(comm,
              Program({MakeOp("c_allreduce", {{"X", {"a"}}}, {{"Out", {"a"}}},
                              {{"ring_id", int32_t{9}}})},
                      {{"a", Shape{2}}}),
              &scope);
    });
    EXPECT_NE(unknown.find("ring 9"), std::string::npos) << unknown;
  });
}

// c_split gives each rank of the ring its block; c_concat puts the blocks
// back: the identity, along the first and the last axis.
TEST(CommunicatorGroupOps, SplitThenConcatIsTheIdentity) {
  for (int axis : {0, -1}) {
    RunRanks(4, [axis](int rank, Communicator* comm) {
      MakeRings(rank, comm);
      // The same x on both ranks of a tensor-parallel pair.
      Tensor x = RandomTensor<double>({4, 3, 6}, -1, 1, 7 + rank / 2);
      Scope scope;
      scope.Var("x")->GetMutableTensor()->CopyFrom(x);
      const Shape block = axis == 0 ? Shape{2, 3, 6} : Shape{4, 3, 3};
      RunWith(comm,
              Program({MakeOp("c_split", {{"X", {"x"}}}, {{"Out", {"y"}}},
                              RingAttrs(axis, 1, 2)),
                       MakeOp("c_concat", {{"X", {"y"}}}, {{"Out", {"z"}}},
                              RingAttrs(axis, 1, 2))},
                      {{"x", x.shape()}, {"y", block}, {"z", x.shape()}}),
              &scope);
      const Tensor& y = scope.GetVar("y")->GetTensor();
      EXPECT_EQ(y.shape(), block);
      const int a = axis < 0 ? 2 : axis;
      const int64_t w = block[a];
      EXPECT_EQ(ToVector<double>(y),
                Slice(x, a, w * (rank % 2), w * (rank % 2 + 1)));
      const Tensor& z = scope.GetVar("z")->GetTensor();
      EXPECT_EQ(z.shape(), x.shape());
      EXPECT_EQ(ToVector<double>(z), ToVector<double>(x));
    });
  }
}

// c_concat joins distinct blocks in the ring's rank order (ring 3 orders
// the ranks backwards).
TEST(CommunicatorGroupOps, ConcatJoinsInRingOrder) {
  RunRanks(4, [](int rank, Communicator* comm) {
    comm->CreateGroup(3, 0, -rank);
    Tensor x = Iota(4, 10 * rank);
    x.Resize(Shape{2, 2});
    Scope scope;
    scope.Var("x")->GetMutableTensor()->CopyFrom(x);
    RunWith(comm,
            Program({MakeOp("c_concat", {{"X", {"x"}}}, {{"Out", {"z"}}},
                            RingAttrs(1, 3, 4))},
                    {{"x", Shape{2, 2}}, {"z", Shape{2, 8}}}),
            &scope);
    const Tensor& z = scope.GetVar("z")->GetTensor();
    EXPECT_EQ(z.shape(), Shape({2, 8}));
    EXPECT_EQ(ToVector<double>(z),
              std::vector<double>({30, 31, 20, 21, 10, 11, 0, 1,  //
                                   32, 33, 22, 23, 12, 13, 2, 3}));
  });
}

// Out is X: a parameter initialised whole is sliced in place, any dtype,
// and joined again in place.
TEST(CommunicatorGroupOps, SplitInPlace) {
  RunRanks(4, [](int rank, Communicator* comm) {
    MakeRings(rank, comm);
    Scope scope;
    Tensor* w = scope.Var("w")->GetMutableTensor();
    int64_t* p = w->mutable_data<int64_t>(Shape{2, 4});
    for (int i = 0; i < 8; ++i) p[i] = i;
    proto::ProgramDesc program =
        Program({MakeOp("c_split", {{"X", {"w"}}}, {{"Out", {"w"}}},
                        RingAttrs(-1, 1, 2))},
                {});
    AddVarDesc(program.mutable_blocks(0), "w", DataType::kInt64, Shape{2, 4},
               true);
    RunWith(comm, program, &scope);
    const Tensor& out = scope.GetVar("w")->GetTensor();
    EXPECT_EQ(out.shape(), Shape({2, 2}));
    const int64_t o = 2 * (rank % 2);
    EXPECT_EQ(ToVector<int64_t>(out),
              std::vector<int64_t>({o, o + 1, o + 4, o + 5}));
    // And c_concat in place puts it back together (w declared as the
    // block it now holds).
    proto::ProgramDesc join =
        Program({MakeOp("c_concat", {{"X", {"w"}}}, {{"Out", {"w"}}},
                        RingAttrs(-1, 1, 2))},
                {});
    AddVarDesc(join.mutable_blocks(0), "w", DataType::kInt64, Shape{2, 2},
               true);
    RunWith(comm, join, &scope);
    const Tensor& whole = scope.GetVar("w")->GetTensor();
    EXPECT_EQ(whole.shape(), Shape({2, 4}));
    EXPECT_EQ(ToVector<int64_t>(whole),
              std::vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7}));
  });
}

TEST(CommunicatorGroupOps, SplitInARingOfOneIsX) {
  RunRanks(2, [](int rank, Communicator* comm) {
    comm->CreateGroup(1, rank, 0);
    Tensor x = RandomTensor<double>({3, 4}, -1, 1, 3 + rank);
    // Ring 0 of a one-rank communicator, and ring 1 (one rank) of a
    // two-rank one.
    for (int ring : {0, 1}) {
      Scope scope;
      scope.Var("x")->GetMutableTensor()->CopyFrom(x);
      Communicator* run = ring == 0 ? comm->Group(1) : comm;
      RunWith(run,
              Program({MakeOp("c_split", {{"X", {"x"}}}, {{"Out", {"y"}}},
                              RingAttrs(-1, ring == 0 ? 0 : 1, 1))},
                      {{"x", Shape{3, 4}}, {"y", Shape{3, 4}}}),
              &scope);
      EXPECT_EQ(ToVector<double>(scope.GetVar("y")->GetTensor()),
                ToVector<double>(x));
    }
  });
}

TEST(CommunicatorGroupOps, SplitRefusesAnAxisNotDividingByTheRanks) {
  RunRanks(2, [](int rank, Communicator* comm) {
    Scope scope;
    scope.Var("x")->GetMutableTensor()->CopyFrom(
        RandomTensor<double>({3, 5}, -1, 1, 3));
    const std::string err = ErrorOf([&] {
      RunWith(comm,
              Program({MakeOp("c_split", {{"X", {"x"}}}, {{"Out", {"y"}}},
                              RingAttrs(-1, 0, 2))},
                      {{"x", Shape{3, 5}}, {"y", Shape{3, -1}}}),
              &scope);
    });
    EXPECT_NE(err.find("c_split: dim 1 of X 'x'"), std::string::npos) << err;
    EXPECT_NE(err.find("not a multiple of nranks (2)"), std::string::npos)
        << err;
  });
}

// `values` as a tensor of `dtype` (float16, int32 or float64) and shape.
Tensor Typed(const std::vector<double>& values, DataType dtype,
             const Shape& shape) {
  Tensor t(dtype, shape);
  void* p = t.raw_mutable_data();
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DataType::kFloat16)
      static_cast<float16*>(p)[i] = FromFloat<float16>(float(values[i]));
    if (dtype == DataType::kInt32)
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(values[i]);
    if (dtype == DataType::kFloat64) static_cast<double*>(p)[i] = values[i];
  }
  return t;
}

// The elements of a host tensor Typed made, as doubles.
std::vector<double> Values(const Tensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (t.dtype() == DataType::kFloat16)
      out.push_back(ToFloat(t.data<float16>()[i]));
    if (t.dtype() == DataType::kInt32) out.push_back(t.data<int32_t>()[i]);
    if (t.dtype() == DataType::kFloat64) out.push_back(t.data<double>()[i]);
  }
  return out;
}

// On a CUDA device (the communicator stages the blocks through host
// memory): elements of 2, 4 and 8 bytes, along the first and last axis.
TEST(CommunicatorGroupOps, SplitThenConcatOnTheDevice) {
  if (!BuiltWithCuda() || CudaDeviceCount() == 0)
    GTEST_SKIP() << "no CUDA device";
  std::vector<double> whole;  // small integers: exact in every dtype
  for (int i = 0; i < 24; ++i) whole.push_back(i - 12);
  for (DataType dtype :
       {DataType::kFloat16, DataType::kInt32, DataType::kFloat64}) {
    for (int axis : {0, -1}) {
      RunRanks(2, [&whole, dtype, axis](int rank, Communicator* comm) {
        const Shape block = axis == 0 ? Shape{2, 6} : Shape{4, 3};
        proto::ProgramDesc p = NewProgram();
        auto* b = p.mutable_blocks(0);
        AddVarDesc(b, "x", dtype, Shape{4, 6});
        AddVarDesc(b, "y", dtype, block);
        AddVarDesc(b, "z", dtype, Shape{4, 6});
        *b->add_ops() = MakeOp("c_split", {{"X", {"x"}}}, {{"Out", {"y"}}},
                               RingAttrs(axis, 0, 2));
        *b->add_ops() = MakeOp("c_concat", {{"X", {"y"}}}, {{"Out", {"z"}}},
                               RingAttrs(axis, 0, 2));
        Executor exe(Place::CUDA(0));
        exe.mutable_device_context()->set_communicator(comm);
        Scope scope;
        auto prepared = exe.Prepare(p, &scope);
        std::vector<Tensor> out;
        exe.Run(prepared.get(), {{"x", Typed(whole, dtype, Shape{4, 6})}},
                {"y", "z"}, &out);
        const int a = axis < 0 ? 1 : 0;
        Tensor x = Typed(whole, DataType::kFloat64, Shape{4, 6});
        EXPECT_EQ(out[0].shape(), block);
        EXPECT_EQ(Values(out[0]),
                  Slice(x, a, block[a] * rank, block[a] * (rank + 1)))
            << DataTypeName(dtype) << " axis " << axis;
        EXPECT_EQ(Values(out[1]), whole)
            << DataTypeName(dtype) << " axis " << axis;
      });
    }
  }
}

// One rank (no communicator at all): the numeric gradient in float64.
TEST(CommunicatorGroupOps, GradientsOnOneRank) {
  for (const char* type : {"c_split", "c_concat"}) {
    for (int axis : {0, 1, -1}) {
      proto::OpDesc op =
          MakeOp(type, {{"X", {"x"}}}, {{"Out", {"y"}}}, RingAttrs(axis, 0, 1));
      EXPECT_TRUE(CheckGradient(
          op, {{"x", RandomTensor<double>({2, 3, 4}, -1, 1, 11)}}))
          << type << " axis " << axis;
    }
  }
}

// The grad op the registry makes of `fwd`, as the autodiff would.
proto::OpDesc GradOf(const proto::OpDesc& fwd) {
  std::vector<proto::OpDesc> grads =
      OpRegistry::Global().Get(fwd.type()).grad_maker()(fwd);
  EXPECT_EQ(grads.size(), 1u);
  return grads.at(0);
}

// On two ranks: c_split's gradient is the concatenation of the ranks'
// output gradients, c_concat's the rank's block of the output gradient.
TEST(CommunicatorGroupOps, GradientsAcrossTwoRanks) {
  RunRanks(2, [](int rank, Communicator* comm) {
    const proto::OpDesc split_grad = GradOf(MakeOp(
        "c_split", {{"X", {"x"}}}, {{"Out", {"y"}}}, RingAttrs(1, 0, 2)));
    EXPECT_EQ(split_grad.type(), "c_concat");
    const proto::OpDesc concat_grad = GradOf(MakeOp(
        "c_concat", {{"X", {"x"}}}, {{"Out", {"y"}}}, RingAttrs(1, 0, 2)));
    EXPECT_EQ(concat_grad.type(), "c_split");
    const std::string dx = GradVarName("x"), dy = GradVarName("y");
    Tensor mine = Iota(4, 10 * rank), whole = Iota(8, 100);
    mine.Resize(Shape{2, 2});
    whole.Resize(Shape{2, 4});
    Scope split_scope, concat_scope;
    split_scope.Var(dy)->GetMutableTensor()->CopyFrom(mine);
    concat_scope.Var(dy)->GetMutableTensor()->CopyFrom(whole);
    RunWith(comm, Program({split_grad}, {{dy, Shape{2, 2}}, {dx, Shape{2, 4}}}),
            &split_scope);
    RunWith(comm,
            Program({concat_grad}, {{dy, Shape{2, 4}}, {dx, Shape{2, 2}}}),
            &concat_scope);
    EXPECT_EQ(ToVector<double>(split_scope.GetVar(dx)->GetTensor()),
              std::vector<double>({0, 1, 10, 11, 2, 3, 12, 13}));
    const double o = 100 + 2 * rank;
    EXPECT_EQ(ToVector<double>(concat_scope.GetVar(dx)->GetTensor()),
              std::vector<double>({o, o + 1, o + 4, o + 5}));
  });
}

}  // namespace
}  // namespace fluid
