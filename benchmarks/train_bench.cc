// Training throughput of a built-in model: samples/s over timed steps on
// Fashion-MNIST batches already in memory (or seeded noise when the data set
// is absent), after warm-up steps. Prints one JSON line.
//
//   train_bench --model lenet --threads 1 --batch 64 --steps 200
//   train_bench --model lenet --place cuda:0 --batch 64 --steps 500
//   train_bench --model resnet --amp bf16 --threads 2 --steps 50
//
// --amp bf16|fp16 rewrites the model's job to mixed precision
// (MixedPrecisionRewrite with the default lists) before it runs; the JSON
// names the mode and the instruction set oneDNN ran the 16-bit matrix
// kernels with (cpu_isa).
//
// Each step feeds a host batch (copied to the device on a CUDA place) and
// fetches the loss back, as the trainer does.
#include <chrono>
#include <cstdio>
#include <random>
#include <string>

#include "src/builder/models.h"
#include "src/data/batcher.h"
#include "src/data/idx_reader.h"
#include "src/framework/cpu_isa.h"
#include "src/framework/executor.h"
#include "transpiler/mixed_precision.h"

namespace fluid {
namespace {

// The job of `model`, rewritten to mixed precision when amp is "bf16" or
// "fp16"; "none" leaves it float32.
proto::TrainingJob BenchJob(const std::string& model, const std::string& amp) {
  proto::TrainingJob job = BuildModel(model);
  if (amp == "none") return job;
  FLUID_ENFORCE(amp == "bf16" || amp == "fp16", "--amp '", amp,
                "': expected none, bf16 or fp16");
  proto::AmpConfig config;
  config.set_dtype(amp);
  return MixedPrecisionRewrite(job, config);
}

int Main(int argc, char** argv) {
  std::string model = "mlp", data = "/usr/share/datasets/fashion-mnist";
  std::string amp = "none";
  int threads = 1, steps = 200, warmup = 20, device = -1;
  int64_t batch = 64;
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
    else if (k == "--amp")
      amp = v;
    else if (k == "--data")
      data = v;
    else if (k == "--place")
      device = v == "cpu" ? -1 : std::stoi(v.substr(v.find(':') + 1));
    else
      FLUID_THROW(ErrorCode::kInvalidArgument, "unknown flag ", k);
  }
  Dataset d;
  try {
    d = LoadMnistFamily(data, true);
  } catch (const Error&) {
    d.names = {"image", "label"};
    Tensor img, lab;
    float* ip = img.mutable_data<float>(Shape{batch * 16, 1, 28, 28});
    int64_t* lp = lab.mutable_data<int64_t>(Shape{batch * 16, 1});
    std::mt19937 rng(1);
    for (int64_t i = 0; i < img.numel(); ++i) ip[i] = (rng() % 256) / 255.0f;
    for (int64_t i = 0; i < lab.numel(); ++i) lp[i] = rng() % 10;
    d.tensors = {img, lab};
  }
  proto::TrainingJob job = BenchJob(model, amp);
  const Place place = device < 0 ? Place::CPU() : Place::CUDA(device);
  Executor exe(place, threads);
  Scope scope;
  exe.RunOnce(job.startup(), &scope);
  auto main = exe.Prepare(job.main(), &scope);
  Batcher batcher(d, batch, 1);
  int64_t epoch = 0;
  batcher.StartEpoch(epoch);
  std::vector<Tensor> b, out;
  FeedList feeds = {{"image", Tensor()}, {"label", Tensor()}};
  auto step = [&]() {
    if (!batcher.Next(&b)) {
      batcher.StartEpoch(++epoch);
      batcher.Next(&b);
    }
    feeds[0].second = b[0];
    feeds[1].second = b[1];
    exe.Run(main.get(), feeds, {"loss"}, &out);
    return b[0].shape()[0];
  };
  for (int i = 0; i < warmup; ++i) step();
  auto t0 = std::chrono::steady_clock::now();
  int64_t samples = 0;
  for (int i = 0; i < steps; ++i) samples += step();
  double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  std::printf(
      "{\"framework\": \"fluid\", \"model\": \"%s\", \"place\": \"%s\", "
      "\"threads\": %d, \"batch\": %lld, \"steps\": %d, \"seconds\": %.4f, "
      "\"samples_per_s\": %.1f, \"final_loss\": %.4f, \"amp\": \"%s\", "
      "\"cpu_isa\": \"%s\"}\n",
      model.c_str(), place.ToString().c_str(), threads,
      static_cast<long long>(batch), steps, s, samples / s,
      out[0].data<float>()[0], amp.c_str(), DnnlIsaName().c_str());
  return 0;
}

}  // namespace
}  // namespace fluid

int main(int argc, char** argv) {
  try {
    return fluid::Main(argc, argv);
  } catch (const fluid::Error& e) {
    std::fprintf(stderr, "train_bench: error: %s\n", e.what());
    return 1;
  }
}
