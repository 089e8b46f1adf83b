// Rings (groups of ranks) over real MPI (run by fluid_mpi_tests under
// mpirun): the tensor-parallel pairs {0, 1}, {2, 3}, ... as ring 101 and
// the data-parallel groups of the ranks with the same index in their pair
// as ring 102; allreduces on each give the group sums, also when the two
// rings' collectives are in flight at once, and c_split / c_concat over
// the pairs put a tensor back together.
#include <gtest/gtest.h>

#include <vector>

#include "src/distributed/global_communicator.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace {

constexpr int kTensorRing = 101, kDataRing = 102;

// Float64 [n] with element i = base + i.
Tensor Iota(int64_t n, double base) {
  Tensor t;
  double* p = t.mutable_data<double>(Shape{n});
  for (int64_t i = 0; i < n; ++i) p[i] = base + i;
  return t;
}

class Rings : public ::testing::Test {
 protected:
  void SetUp() override {
    world_ = GlobalCommunicator();
    if (world_->size() % 2 != 0) GTEST_SKIP() << "needs an even rank count";
    const int rank = world_->rank();
    tp_ = world_->CreateGroup(kTensorRing, rank / 2, rank);
    dp_ = world_->CreateGroup(kDataRing, rank % 2, rank);
  }
  Communicator* world_ = nullptr;
  Communicator* tp_ = nullptr;
  Communicator* dp_ = nullptr;
};

TEST_F(Rings, AllReduceGivesTheGroupSums) {
  const int rank = world_->rank(), n = world_->size();
  EXPECT_EQ(tp_->size(), 2);
  EXPECT_EQ(tp_->rank(), rank % 2);
  EXPECT_EQ(dp_->size(), n / 2);
  EXPECT_EQ(dp_->rank(), rank / 2);
  EXPECT_EQ(world_->Group(kTensorRing), tp_);
  // Both rings in flight at once, issued in another order on odd ranks.
  for (int round = 0; round < 10; ++round) {
    Tensor a = Iota(1000, rank), b = Iota(1000, rank);
    CommHandlePtr ha, hb;
    if (rank % 2 == 0) {
      ha = tp_->AllReduceAsync(a, ReduceOp::kSum);
      hb = dp_->AllReduceAsync(b, ReduceOp::kSum);
    } else {
      hb = dp_->AllReduceAsync(b, ReduceOp::kSum);
      ha = tp_->AllReduceAsync(a, ReduceOp::kSum);
    }
    hb->Wait();
    ha->Wait();
    const int first = rank / 2 * 2;
    // The data-parallel group of index c holds c, c + 2, ..., n - 2 + c.
    const double dp_sum =
        (n / 2) * (rank % 2) + 2.0 * (n / 2) * (n / 2 - 1) / 2;
    for (int i = 0; i < 1000; i += 333) {
      ASSERT_EQ(a.data<double>()[i], 2 * first + 1 + 2 * i);
      ASSERT_EQ(b.data<double>()[i], dp_sum + (n / 2) * i);
    }
  }
  Tensor w = Iota(4, rank);
  world_->AllReduce(w, ReduceOp::kSum);
  EXPECT_EQ(w.data<double>()[0], n * (n - 1) / 2.0);
}

TEST_F(Rings, SplitThenConcatOverThePairs) {
  const int rank = world_->rank();
  proto::ProgramDesc p = NewProgram();
  auto* b = p.mutable_blocks(0);
  AddVarDesc(b, "x", DataType::kFloat64, Shape{3, 4}, true);
  AddVarDesc(b, "y", DataType::kFloat64, Shape{3, 2}, true);
  AddVarDesc(b, "z", DataType::kFloat64, Shape{3, 4}, true);
  const AttributeMap attrs = {{"axis", int32_t{-1}},
                              {"ring_id", int32_t{kTensorRing}},
                              {"nranks", int32_t{2}}};
  *b->add_ops() = MakeOp("c_split", {{"X", {"x"}}}, {{"Out", {"y"}}}, attrs);
  *b->add_ops() = MakeOp("c_concat", {{"X", {"y"}}}, {{"Out", {"z"}}}, attrs);
  Tensor x = Iota(12, 100 * (rank / 2));  // the same on both of a pair
  x.Resize(Shape{3, 4});
  Scope scope;
  scope.Var("x")->GetMutableTensor()->CopyFrom(x);
  Executor exe;
  exe.mutable_device_context()->set_communicator(world_);
  exe.RunOnce(p, &scope);
  const Tensor& y = scope.GetVar("y")->GetTensor();
  const double o = 100 * (rank / 2) + 2 * (rank % 2);
  const std::vector<double> block = {o, o + 1, o + 4, o + 5, o + 8, o + 9};
  EXPECT_EQ(std::vector<double>(y.data<double>(), y.data<double>() + 6), block);
  const Tensor& z = scope.GetVar("z")->GetTensor();
  EXPECT_EQ(std::vector<double>(z.data<double>(), z.data<double>() + 12),
            std::vector<double>(x.data<double>(), x.data<double>() + 12));
}

}  // namespace
}  // namespace fluid
