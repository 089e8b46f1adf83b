// Sharding with mixed precision: 16-bit gradients are reduce-scattered in
// 16 bits, and fp16's loss scaling unscales and checks each rank's shard,
// its found-infinite flag max-reduced so that every rank skips alike.
#include <gtest/gtest.h>

#include <vector>

#include "src/builder/models.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "src/framework/wire_format.h"
#include "tests/testing/in_process_ranks.h"
#include "transpiler/collective_transpiler.h"

namespace fluid {
namespace {

// Mixed precision under sharding: `dtype` bf16 or fp16, at `stage`.
proto::TrainingJob ShardedAmp(int stage, const std::string& dtype) {
  proto::DistributedStrategy cfg;
  cfg.set_sharding(true);
  cfg.mutable_sharding_configs()->set_stage(stage);
  cfg.set_amp(true);
  cfg.mutable_amp_configs()->set_dtype(dtype);
  return CollectiveTranspile(BuildModel("mlp"), cfg, 4);
}

TEST(ShardAmp, GradientsTravelIn16Bits) {
  for (int stage : {1, 2})
    for (const std::string dtype : {"bf16", "fp16"}) {
      const proto::TrainingJob out = ShardedAmp(stage, dtype);
      EXPECT_EQ(out.strategy().grad_compression(), dtype);
      int reductions = 0;
      for (const auto& op : out.main().blocks(0).ops()) {
        const bool grad = !OpInput(op, "X").empty() &&
                          OpInput(op, "X")[0].rfind("fused_grad_", 0) == 0;
        if (!grad ||
            (op.type() != "c_reducescatter" && op.type() != "c_allreduce"))
          continue;
        ++reductions;
        EXPECT_EQ(op.type(), stage == 2 ? "c_reducescatter" : "c_allreduce");
        EXPECT_EQ(GetOpAttrAs<std::string>(op, "compression"), dtype);
      }
      EXPECT_EQ(reductions, 1) << "stage " << stage << " " << dtype;
    }
  // A strategy that says how gradients travel keeps its word.
  proto::DistributedStrategy cfg;
  cfg.set_sharding(true);
  cfg.set_amp(true);
  cfg.set_grad_compression("none");
  const proto::TrainingJob plain =
      CollectiveTranspile(BuildModel("mlp"), cfg, 4);
  for (const auto& op : plain.main().blocks(0).ops()) {
    if (op.type() == "c_reducescatter") {
      EXPECT_FALSE(HasOpAttr(op, "compression"));
    }
  }
}

TEST(ShardAmp, Fp16UnscalesTheShardsAndAgreesOnOverflow) {
  for (int stage : {1, 2}) {
    const proto::TrainingJob out = ShardedAmp(stage, "fp16");
    const proto::BlockDesc& main = out.main().blocks(0);
    int check = -1, agree = -1, update_scaling = -1, update = -1;
    for (int i = 0; i < main.ops_size(); ++i) {
      const proto::OpDesc& op = main.ops(i);
      if (op.type() == "check_finite_and_unscale") check = i;
      if (op.type() == "update_loss_scaling") update_scaling = i;
      if (op.type() == "c_allreduce" &&
          OpInput(op, "X") == std::vector<std::string>{"found_infinite"}) {
        agree = i;
        EXPECT_EQ(GetOpAttrAs<std::string>(op, "reduce_type"), "max");
      }
      if (op.type() == "momentum") update = i;
    }
    ASSERT_GE(check, 0);
    // Each rank checks its shard; the flag's maximum over the ranks decides
    // the loss scaling and the skip on every rank alike.
    const std::vector<std::string> shard = {"fused_grad_0@COALESCED@SHARD"};
    EXPECT_EQ(OpInput(main.ops(check), "X"), shard);
    EXPECT_EQ(OpOutput(main.ops(check), "Out"), shard);
    EXPECT_EQ(OpInput(main.ops(update_scaling), "X"), shard);
    EXPECT_LT(check, agree);
    EXPECT_LT(agree, update_scaling);
    EXPECT_LT(update_scaling, update);
    EXPECT_EQ(GetOpAttrAs<std::string>(main.ops(update), "op_skip_if"),
              "found_infinite");
  }
}

// A compressed reduce-scatter in process: every rank's values rounded to
// 16 bits, added in float32 and rounded once, widened and averaged in
// float32; half the bytes of float32 counted.
TEST(ShardAmp, CompressedReduceScatterRoundsEachContribution) {
  for (WireFormat wire : {WireFormat::kBf16, WireFormat::kFp16}) {
    auto encode = wire == WireFormat::kBf16 ? FloatToBf16 : FloatToFp16;
    auto decode = wire == WireFormat::kBf16 ? Bf16ToFloat : Fp16ToFloat;
    auto round = [&](float v) { return decode(encode(v)); };
    auto value = [](int rank, int i) {
      return 0.1f * static_cast<float>(rank + 1) + 1e-3f * i;
    };
    const int n = 3, block = 5;
    std::vector<std::vector<float>> results(n);
    testing::RunRanks(n, [&](int rank, Communicator* comm) {
      Tensor in(DataType::kFloat32, Shape{n * block});
      Tensor out(DataType::kFloat32, Shape{block});
      for (int i = 0; i < n * block; ++i)
        in.mutable_data<float>()[i] = value(rank, i);
      out.mutable_data<float>();
      comm->ReduceScatterAsync(in, out, ReduceOp::kAvg, nullptr, wire)->Wait();
      results[rank].assign(out.data<float>(), out.data<float>() + block);
      EXPECT_EQ(comm->allreduce_wire_bytes(), n * block * 2);
      Tensor f64(DataType::kFloat64, Shape{n});
      Tensor f64_out(DataType::kFloat64, Shape{1});
      f64.mutable_data<double>();
      f64_out.mutable_data<double>();
      try {
        comm->ReduceScatterAsync(f64, f64_out, ReduceOp::kSum, nullptr, wire);
        ADD_FAILURE() << "a float64 tensor was compressed";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("float32"), std::string::npos)
            << e.what();
      }
    });
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < block; ++i) {
        float sum = 0;
        for (int q = 0; q < n; ++q) sum += round(value(q, r * block + i));
        ASSERT_EQ(results[r][i], round(sum) / n)
            << WireFormatName(wire) << " rank " << r << " element " << i;
      }
  }
}

}  // namespace
}  // namespace fluid
