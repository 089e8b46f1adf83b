// Dumps everything PyTorch needs to replay a few training steps of a
// built-in model: the initial parameters, the batches, and the losses and
// final parameters this framework computed. torch_oracle.py replays them.
//
//   oracle_dump --model mlp --optimizer sgd --lr 0.1 --steps 20 --batch 64
//               --out DIR [--data DIR]
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include "src/builder/models.h"
#include "src/data/batcher.h"
#include "src/data/idx_reader.h"
#include "src/data/npy_reader.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace {

struct Args {
  std::string model = "mlp", optimizer = "sgd", out, data;
  float lr = 0.1f, momentum = 0.9f;
  int steps = 20;
  int64_t batch = 64;
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--model")
      a.model = v;
    else if (k == "--optimizer")
      a.optimizer = v;
    else if (k == "--lr")
      a.lr = std::stof(v);
    else if (k == "--momentum")
      a.momentum = std::stof(v);
    else if (k == "--steps")
      a.steps = std::stoi(v);
    else if (k == "--batch")
      a.batch = std::stoll(v);
    else if (k == "--out")
      a.out = v;
    else if (k == "--data")
      a.data = v;
    else
      FLUID_THROW(ErrorCode::kInvalidArgument, "unknown flag ", k);
  }
  FLUID_ENFORCE(!a.out.empty(), "--out is required");
  return a;
}

// Fashion-MNIST when the directory has it, else seeded noise.
Dataset LoadData(const Args& a) {
  if (!a.data.empty()) return LoadMnistFamily(a.data, true);
  Dataset d;
  d.names = {"image", "label"};
  Tensor img, lab;
  float* ip = img.mutable_data<float>(Shape{a.batch * a.steps, 1, 28, 28});
  int64_t* lp = lab.mutable_data<int64_t>(Shape{a.batch * a.steps, 1});
  std::mt19937 rng(3);
  for (int64_t i = 0; i < img.numel(); ++i) ip[i] = (rng() % 256) / 255.0f;
  for (int64_t i = 0; i < lab.numel(); ++i) lp[i] = rng() % 10;
  d.tensors = {img, lab};
  return d;
}

int Main(int argc, char** argv) {
  Args a = Parse(argc, argv);
  ModelOptions mo;
  mo.default_optimizer = false;
  mo.optimizer.type = a.optimizer;
  mo.optimizer.learning_rate = a.lr;
  mo.optimizer.momentum = a.momentum;
  proto::TrainingJob job = BuildModel(a.model, mo);
  Executor exe;
  Scope scope;
  exe.RunOnce(job.startup(), &scope);
  std::ofstream manifest(a.out + "/params.txt");
  for (const auto& v : job.main().blocks(0).vars()) {
    if (!v.trainable()) continue;
    manifest << v.name() << "\n";
    SaveNpy(a.out + "/init_" + v.name() + ".npy",
            scope.GetVar(v.name())->GetTensor());
  }
  Dataset data = LoadData(a);
  Batcher batcher(data, a.batch, 7);
  batcher.StartEpoch(0);
  auto main = exe.Prepare(job.main(), &scope);
  std::vector<Tensor> batch, out;
  Tensor losses;
  double* lp = losses.mutable_data<double>(Shape{a.steps});
  for (int s = 0; s < a.steps; ++s) {
    FLUID_ENFORCE(batcher.Next(&batch), "ran out of data at step ", s);
    SaveNpy(a.out + "/image_" + std::to_string(s) + ".npy", batch[0]);
    SaveNpy(a.out + "/label_" + std::to_string(s) + ".npy", batch[1]);
    exe.Run(main.get(), {{"image", batch[0]}, {"label", batch[1]}}, {"loss"},
            &out);
    lp[s] = out[0].data<float>()[0];
  }
  SaveNpy(a.out + "/losses.npy", losses);
  for (const auto& v : job.main().blocks(0).vars())
    if (v.trainable())
      SaveNpy(a.out + "/final_" + v.name() + ".npy",
              scope.GetVar(v.name())->GetTensor());
  return 0;
}

}  // namespace
}  // namespace fluid

int main(int argc, char** argv) {
  try {
    return fluid::Main(argc, argv);
  } catch (const fluid::Error& e) {
    std::fprintf(stderr, "oracle_dump: error: %s\n", e.what());
    return 1;
  }
}
