// What the tests of model parallelism share: an MLP job and its batches,
// training one process and in-process ranks laid out by a strategy, and
// comparing the two (losses per step, parameters after training).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "src/builder/lr_schedules.h"
#include "src/builder/models.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "src/runtime/mpi_executor.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/in_process_ranks.h"
#include "tests/transpiler/recompute_models.h"
#include "transpiler/program_query.h"

namespace fluid {
namespace testing {

// x [16] -> fc 32 relu -> fc 32 relu -> fc 4 -> softmax cross entropy,
// momentum; with `clip`, gradients clipped by their global norm.
// With `decay`, the learning rate decays exponentially (halved every 2
// steps), a schedule of forward ops on a step counter. With `accuracy`,
// the logits' accuracy "acc" and its counts "correct" and "total".
inline proto::TrainingJob MlpJob(bool clip = false, bool decay = false,
                                 bool accuracy = false) {
  proto::TrainingJob job;
  job.set_version(kProgramVersion);
  *job.mutable_main() = NewProgram();
  *job.mutable_startup() = NewProgram();
  ProgramBuilder b(job.mutable_main(), job.mutable_startup(), 5);
  std::string h = layers::Data(&b, "x", Shape{16});
  const std::string label =
      layers::Data(&b, "label", Shape{1}, DataType::kInt64);
  h = layers::Fc(&b, h, 32, "relu");
  h = layers::Fc(&b, h, 32, "relu");
  const std::string logits = layers::Fc(&b, h, 4);
  if (accuracy) {
    for (const char* count : {"correct", "total"})
      AddVarDesc(job.mutable_main()->mutable_blocks(0), count, DataType::kInt64,
                 Shape{1});
    RenameVar(job.mutable_main(),
              layers::Accuracy(&b, logits, label, 1, "correct", "total"),
              "acc");
  }
  const std::string loss =
      layers::Mean(&b, layers::SoftmaxWithCrossEntropy(&b, logits, label));
  RenameVar(job.mutable_main(), loss, "loss");
  OptimizerConfig opt;
  opt.type = "momentum";
  opt.learning_rate = 0.05f;
  if (decay) {
    LrSchedule schedule;
    schedule.kind = "exponential_decay";
    schedule.learning_rate = 0.05f;
    schedule.decay_steps = 2;
    schedule.decay_rate = 0.5f;
    opt.learning_rate_var = BuildLrSchedule(&b, schedule);
  }
  if (clip) {
    opt.gradient_clip.kind = GradientClip::Kind::kByGlobalNorm;
    opt.gradient_clip.clip_norm = 0.5f;
  }
  MakeOptimizer(opt)->Minimize(&b, "loss");
  job.set_loss_name("loss");
  return job;
}

inline FeedList MlpRows(int step, int begin, int end) {
  FeedList all = testing::MlpBatch(step, 8);
  FeedList out;
  for (auto& [name, t] : all) {
    Tensor part;
    const int64_t width = t.numel() / t.shape()[0];
    Shape s = t.shape();
    s[0] = end - begin;
    if (t.dtype() == DataType::kInt64) {
      std::copy(t.data<int64_t>() + begin * width,
                t.data<int64_t>() + end * width, part.mutable_data<int64_t>(s));
    } else {
      std::copy(t.data<float>() + begin * width, t.data<float>() + end * width,
                part.mutable_data<float>(s));
    }
    out.emplace_back(name, part);
  }
  return out;
}

struct Trained {
  std::vector<float> losses;  // the global batch's mean loss per step
  std::map<std::string, std::vector<float>> params;
};

inline std::map<std::string, std::vector<float>> Params(
    const proto::TrainingJob& job, const Scope& scope) {
  std::map<std::string, std::vector<float>> out;
  for (const auto& pg : OptimizedParams(job.main())) {
    const Tensor& t = scope.FindVar(pg.first)->GetTensor();
    out[pg.first].assign(t.data<float>(), t.data<float>() + t.numel());
  }
  return out;
}

using Batch = std::function<FeedList(int step, int part, int parts)>;

inline Trained TrainOne(const proto::TrainingJob& job, const Batch& batch,
                        int steps) {
  Executor exe;
  Scope scope;
  exe.RunOnce(job.startup(), &scope);
  auto main = exe.Prepare(job.main(), &scope);
  Trained t;
  std::vector<Tensor> out;
  for (int step = 0; step < steps; ++step) {
    exe.Run(main.get(), batch(step, 0, 1), {"loss"}, &out);
    t.losses.push_back(out[0].data<float>()[0]);
  }
  t.params = Params(job, scope);
  return t;
}

// `nranks` in-process ranks laid out as `strategy` says ([pp][dp][tp]);
// the data-parallel groups take equal parts of each step's global batch.
// Rank 0's view, parameters gathered whole (every stage's).
inline Trained TrainParallel(const proto::TrainingJob& job, int nranks,
                             const proto::DistributedStrategy& strategy,
                             const Batch& batch, int steps) {
  const int tp = strategy.has_tensor_parallel_degree()
                     ? strategy.tensor_parallel_degree()
                     : 1;
  const int pp =
      strategy.has_pipeline_stages() ? strategy.pipeline_stages() : 1;
  const int dp = nranks / (tp * pp);
  auto data_rank = [&](int rank) { return (rank / tp) % dp; };
  std::vector<std::vector<float>> losses(nranks);
  Trained t;
  std::mutex mu;
  testing::RunRanks(nranks, [&](int rank, Communicator* comm) {
    Scope scope;
    MPIExecutor dist(Place::CPU(), 1, comm);
    dist.Init(job, &scope, strategy);
    std::vector<Tensor> fetched;
    for (int step = 0; step < steps; ++step) {
      dist.Run(batch(step, data_rank(rank), dp), {"loss"}, &fetched);
      losses[rank].push_back(fetched[0].data<float>()[0]);
    }
    dist.CheckConsistency();
    dist.GatherShardState();
    if (rank == 0) {
      std::lock_guard<std::mutex> lock(mu);
      t.params = Params(job, scope);
    }
    dist.DropGatheredState();
  });
  for (int r = 0; r < nranks; ++r)  // a failed rank fetched fewer
    if (static_cast<int>(losses[r].size()) != steps) {
      ADD_FAILURE() << "rank " << r << " ran " << losses[r].size() << " of "
                    << steps << " steps";
      return t;
    }
  for (int step = 0; step < steps; ++step) {
    float sum = 0;
    for (int d = 0; d < dp; ++d) sum += losses[d * tp][step];
    t.losses.push_back(sum / dp);
    for (int r = 0; r < nranks; ++r)  // a group computes one loss
      EXPECT_EQ(losses[r][step], losses[data_rank(r) * tp][step])
          << "rank " << r << " step " << step;
  }
  return t;
}

// `noise`: parameters whose gradient is zero in exact arithmetic (a key
// projection's bias: softmax is invariant to adding one value to a row of
// scores), so that Adam, which divides the gradient by its own magnitude,
// moves them by the rounding noise alone, by up to the learning rate per
// step whatever the noise's size: two runs that round differently end up
// at most 2 x steps x learning rate apart. They are held to that bound instead
// ("*": every parameter, for bf16, whose rounding makes every gradient noisy at
// that scale).
// fp16 with dynamic loss scaling started at 2^20, which overflows: the
// first steps are skipped and the scale halves each time (decr_every 1).
inline proto::DistributedStrategy OverflowingFp16() {
  proto::DistributedStrategy amp;
  amp.set_amp(true);
  amp.mutable_amp_configs()->set_dtype("fp16");
  amp.mutable_amp_configs()->set_init_loss_scaling(1048576.0f);
  amp.mutable_amp_configs()->set_decr_every_n_nan_or_inf(1);
  amp.mutable_amp_configs()->set_decr_ratio(0.5f);
  return amp;
}

// fp16's overflow check in `block`: check_finite_and_unscale, right after
// it a max of its flag over ring `ring` (so that the ranks that checked
// different gradients agree), then update_loss_scaling. Returns the check's
// index (-1: none, a failure).
inline int ExpectOverflowFlagAgreed(const proto::BlockDesc& block, int ring) {
  int check = -1, agree = -1, update = -1;
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    if (op.type() == "check_finite_and_unscale") check = i;
    if (op.type() == "update_loss_scaling") update = i;
    if (op.type() == "c_allreduce" && check >= 0 && agree < 0 &&
        OpInput(op, "X") == OpOutput(block.ops(check), "FoundInfinite")) {
      agree = i;
      EXPECT_EQ(GetOpAttrAs<std::string>(op, "reduce_type"), "max");
      EXPECT_EQ(GetOpAttrAs<int32_t>(op, "ring_id"), ring);
    }
  }
  EXPECT_GE(check, 0);
  EXPECT_EQ(agree, check + 1);
  EXPECT_LT(agree, update);
  return check;
}

inline void ExpectClose(const Trained& one, const Trained& split,
                        const std::set<std::string>& noise = {},
                        double noise_bound = 0, double tolerance = 1e-5) {
  ASSERT_EQ(one.losses.size(), split.losses.size());
  for (size_t i = 0; i < one.losses.size(); ++i)
    EXPECT_NEAR(split.losses[i], one.losses[i],
                tolerance * std::abs(one.losses[i]))
        << "step " << i;
  ASSERT_EQ(one.params.size(), split.params.size());
  double worst = 0, worst_noise = 0;
  for (const auto& [name, want] : one.params) {
    const std::vector<float>& got = split.params.at(name);
    ASSERT_EQ(got.size(), want.size()) << name;
    double diff = 0, norm = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      diff = std::max(diff, std::abs(double(got[i]) - want[i]));
      norm = std::max(norm, std::abs(double(want[i])));
    }
    if (noise.count(name) || noise.count("*")) {
      EXPECT_LE(diff, noise_bound) << name;
      worst_noise = std::max(worst_noise, diff);
      continue;
    }
    EXPECT_LE(diff, tolerance * norm) << name;
    worst = std::max(worst, diff / std::max(norm, 1e-30));
  }
  std::printf(
      "largest parameter difference: %.3g relative; %.3g absolute among "
      "those held to the noise bound\n",
      worst, worst_noise);
  EXPECT_NE(one.losses.front(), one.losses.back());
}

inline Batch MlpBatches() {
  return [](int step, int part, int parts) {
    return MlpRows(step, 8 * part / parts, 8 * (part + 1) / parts);
  };
}

inline Batch TransformerBatches(const TransformerSize& s, int64_t batch = 4) {
  return [s, batch](int step, int part, int parts) {
    // Step `step`'s global batch of `batch` windows, part `part` of `parts`.
    const FeedList all = TransformerBatch(s, batch, step);
    FeedList out;
    for (const auto& [name, t] : all) {
      const int64_t rows = batch / parts, width = t.numel() / batch;
      Shape shape = t.shape();
      shape[0] = rows;
      Tensor part_t;
      const int64_t* from = t.data<int64_t>() + part * rows * width;
      std::copy(from, from + rows * width, part_t.mutable_data<int64_t>(shape));
      out.emplace_back(name, part_t);
    }
    return out;
  };
}

}  // namespace testing
}  // namespace fluid
