#include "src/builder/models.h"

#include "src/builder/layers.h"
#include "src/framework/program_desc.h"

namespace fluid {

namespace {

std::string MlpLogits(ProgramBuilder* b, const std::string& image) {
  std::string h = layers::Fc(b, image, 512, "relu");
  h = layers::Fc(b, h, 256, "relu");
  return layers::Fc(b, h, 10);
}

std::string LenetLogits(ProgramBuilder* b, const std::string& image) {
  std::string h = layers::Conv2d(b, image, 20, 5, 1, 0, "relu");
  h = layers::Pool2d(b, h, 2, "max", 2);
  h = layers::Conv2d(b, h, 50, 5, 1, 0, "relu");
  h = layers::Pool2d(b, h, 2, "max", 2);
  h = layers::Fc(b, h, 500, "relu");
  return layers::Fc(b, h, 10);
}

// Renames var `from` to `to` in every op and var desc of `program`.
void RenameVar(proto::ProgramDesc* program, const std::string& from,
               const std::string& to) {
  for (auto& block : *program->mutable_blocks()) {
    for (auto& v : *block.mutable_vars())
      if (v.name() == from) v.set_name(to);
    for (auto& op : *block.mutable_ops()) {
      RenameOpInput(&op, from, to);
      RenameOpOutput(&op, from, to);
    }
  }
}

}  // namespace

OptimizerConfig DefaultOptimizer(const std::string& name) {
  OptimizerConfig c;
  c.type = "momentum";
  c.momentum = 0.9f;
  c.learning_rate = name == "mlp" ? 0.1f : 0.05f;
  return c;
}

proto::TrainingJob BuildModel(const std::string& name,
                              const ModelOptions& options) {
  FLUID_ENFORCE(name == "mlp" || name == "lenet", "unknown model '", name,
                "'; built-in models: mlp, lenet");
  proto::TrainingJob job;
  job.set_version(kProgramVersion);
  *job.mutable_main() = NewProgram();
  *job.mutable_startup() = NewProgram();
  ProgramBuilder b(job.mutable_main(), job.mutable_startup(), options.seed);

  std::string image =
      layers::Data(&b, "image", Shape{1, 28, 28}, options.dtype);
  std::string label = layers::Data(&b, "label", Shape{1}, DataType::kInt64);
  std::string logits =
      name == "mlp" ? MlpLogits(&b, image) : LenetLogits(&b, image);
  std::string per_example = layers::SoftmaxWithCrossEntropy(&b, logits, label);
  std::string loss = layers::Mean(&b, per_example);
  std::string accuracy = layers::Accuracy(&b, logits, label);
  // Stable, readable names for what the trainer fetches.
  RenameVar(job.mutable_main(), loss, "loss");
  RenameVar(job.mutable_main(), accuracy, "accuracy");

  OptimizerConfig opt =
      options.default_optimizer ? DefaultOptimizer(name) : options.optimizer;
  MakeOptimizer(opt)->Minimize(&b, "loss");

  job.add_feed_names("image");
  job.add_feed_names("label");
  job.set_loss_name("loss");
  job.add_metric_names("accuracy");
  *job.mutable_test() = CloneForTest(job.main());
  return job;
}

}  // namespace fluid
