// Data-parallel training throughput under mpirun: every rank trains the
// built-in model on its own batches (weak scaling: a fixed batch per rank);
// rank 0 prints one JSON line with the global samples/s, the share of
// step time spent blocked on communication the backward pass did not hide,
// and the bytes of parameters, gradients and optimizer state one rank holds
// (PerRankStateBytes: what the sharding stages change).
//
//   mpirun -np 2 dist_bench --model lenet --batch 64 --steps 100
//       [--allreduce flat|hier|auto] [--grad-compression none|bf16|fp16]
//       [--optimizer sgd|momentum|adam|...] [--shard-optimizer 0|1|2|3]
//       [--sync-batch-norm 0|1] [--overlap-gather 0|1]
//       [--max-reuse-distance ELEMENTS]
#include <chrono>
#include <cstdio>
#include <random>
#include <string>

#include "src/builder/models.h"
#include "src/runtime/mpi_executor.h"
#include "transpiler/sharding.h"

namespace fluid {
namespace {

int Main(int argc, char** argv) {
  std::string model = "mlp";
  int threads = 1, steps = 100, warmup = 10;
  int64_t batch = 64;
  double bucket_mb = 4;
  bool overlap = true, sync_bn = false, overlap_gather = false;
  int64_t max_reuse = 0;
  std::string allreduce = "flat", compression = "none", optimizer;
  int shard = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--model")
      model = v;
    else if (k == "--threads")
      threads = std::stoi(v);
    else if (k == "--steps")
      steps = std::stoi(v);
    else if (k == "--warmup")
      warmup = std::stoi(v);
    else if (k == "--batch")
      batch = std::stoll(v);
    else if (k == "--bucket-mb")
      bucket_mb = std::stod(v);
    else if (k == "--overlap")
      overlap = v != "0";
    else if (k == "--allreduce")
      allreduce = v;
    else if (k == "--grad-compression")
      compression = v;
    else if (k == "--optimizer")
      optimizer = v;
    else if (k == "--shard-optimizer")
      shard = std::stoi(v);
    else if (k == "--sync-batch-norm")
      sync_bn = v != "0";
    else if (k == "--overlap-gather")
      overlap_gather = v != "0";
    else if (k == "--max-reuse-distance")
      max_reuse = std::stoll(v);
    else
      FLUID_THROW(ErrorCode::kInvalidArgument, "unknown flag ", k);
  }
  Scope scope;  // outlives the executor's programs bound to it
  MPIExecutor exe(Place::CPU(), threads);
  proto::DistributedStrategy strategy;
  strategy.set_bucket_bytes(static_cast<int64_t>(bucket_mb * (1 << 20)));
  strategy.set_overlap_allreduce(overlap);
  strategy.set_grad_compression(compression);
  strategy.set_allreduce_hierarchy(allreduce);
  strategy.set_sync_batch_norm(sync_bn);
  strategy.set_sharding(shard != 0);
  if (shard != 0) strategy.mutable_sharding_configs()->set_stage(shard);
  strategy.mutable_sharding_configs()->set_overlap_gather(overlap_gather);
  strategy.mutable_sharding_configs()->set_max_reuse_distance(max_reuse);
  ModelOptions mo;
  if (!optimizer.empty()) {
    mo.default_optimizer = false;
    mo.optimizer.type = optimizer;
  }
  exe.Init(BuildModel(model, mo), &scope, strategy);
  // Seeded per-rank batches (the data reader is not what is measured).
  Tensor x, y;
  float* xp = x.mutable_data<float>(Shape{batch, 1, 28, 28});
  int64_t* yp = y.mutable_data<int64_t>(Shape{batch, 1});
  std::mt19937 rng(exe.rank() + 1);
  for (int64_t i = 0; i < x.numel(); ++i) xp[i] = (rng() % 256) / 255.0f;
  for (int64_t i = 0; i < batch; ++i) yp[i] = rng() % 10;
  FeedList feeds = {{"image", x}, {"label", y}};
  std::vector<Tensor> out;
  for (int i = 0; i < warmup; ++i) exe.Run(feeds, {"loss"}, &out);
  exe.WaitParameterGathers();
  exe.communicator()->Barrier();
  const double wait0 = exe.communicator()->exposed_wait_seconds();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) exe.Run(feeds, {"loss"}, &out);
  exe.WaitParameterGathers();  // the last step's, with --overlap-gather
  exe.communicator()->Barrier();
  double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  double exposed = exe.communicator()->exposed_wait_seconds() - wait0;
  const StateBytes held = PerRankStateBytes(exe.job().main());
  if (exe.rank() == 0)
    std::printf(
        "{\"framework\": \"fluid\", \"model\": \"%s\", \"np\": %d, "
        "\"threads\": %d, \"batch_per_rank\": %lld, \"steps\": %d, "
        "\"seconds\": %.4f, \"samples_per_s\": %.1f, "
        "\"exposed_comm_share\": %.4f, \"hosts\": %d, "
        "\"grad_compression\": \"%s\", \"shard_optimizer\": %d, "
        "\"sync_batch_norm\": %s, \"overlap_gather\": %s, "
        "\"allreduce_wire_bytes\": %lld, \"state_bytes\": [%lld, %lld, "
        "%lld]}\n",
        model.c_str(), exe.world_size(), threads, static_cast<long long>(batch),
        steps, s, steps * batch * exe.world_size() / s, exposed / s,
        exe.topology().num_hosts(), compression.c_str(), shard,
        sync_bn ? "true" : "false", overlap_gather ? "true" : "false",
        static_cast<long long>(exe.communicator()->allreduce_wire_bytes()),
        static_cast<long long>(held.parameters),
        static_cast<long long>(held.gradients),
        static_cast<long long>(held.optimizer_state));
  return 0;
}

}  // namespace
}  // namespace fluid

int main(int argc, char** argv) {
  try {
    int rc = fluid::Main(argc, argv);
    fluid::ShutdownGlobalCommunicator();
    return rc;
  } catch (const fluid::Error& e) {
    std::fprintf(stderr, "dist_bench: error: %s\n", e.what());
    fluid::GlobalCommunicator()->Abort(1);
    return 1;
  }
}
