#include "src/builder/models.h"

#include <algorithm>
#include <vector>

#include "src/builder/layers.h"
#include "src/builder/norm_layers.h"
#include "src/builder/text_models.h"
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

// conv (no bias: the batch_norm's bias takes its place), batch_norm, `act`.
std::string ConvBn(ProgramBuilder* b, const std::string& input,
                   int64_t channels, int filter_size, int stride,
                   const std::string& act) {
  std::string h = layers::Conv2d(b, input, channels, filter_size, stride,
                                 filter_size / 2, "", {}, {}, false);
  layers::BatchNormOptions bn;
  bn.fuse_with_relu = act == "relu";
  bn.act = bn.fuse_with_relu ? "" : act;
  return layers::BatchNorm(b, h, bn);
}

// A basic residual block: conv3x3-BN-ReLU-conv3x3-BN plus the shortcut (a
// 1x1 conv and BN where the shape changes), then ReLU.
std::string BasicBlock(ProgramBuilder* b, const std::string& input,
                       int64_t in_channels, int64_t channels, int stride) {
  std::string h = ConvBn(b, input, channels, 3, stride, "relu");
  h = ConvBn(b, h, channels, 3, 1, "");
  std::string shortcut = input;
  if (stride != 1 || in_channels != channels)
    shortcut = ConvBn(b, input, channels, 1, stride, "");
  return layers::ElementwiseAdd(b, h, shortcut, -1, "relu");
}

// conv3x3(16)-BN-ReLU, three stages of two basic blocks (16, 32, 64
// channels; stages 2 and 3 halve the size), global average pool, fc 10.
std::string ResnetLogits(ProgramBuilder* b, const std::string& image) {
  std::string h = ConvBn(b, image, 16, 3, 1, "relu");
  int64_t in_channels = 16;
  for (int64_t channels : {16, 32, 64}) {
    for (int block = 0; block < 2; ++block) {
      int stride = block == 0 && channels != 16 ? 2 : 1;
      h = BasicBlock(b, h, in_channels, channels, stride);
      in_channels = channels;
    }
  }
  h = layers::Pool2d(b, h, 1, "avg", 1, 0, true);
  return layers::Fc(b, h, 10);
}

// Two groups of (conv3x3-BN-ReLU) x2 and max pool 2 (32, 64 channels), fc
// 128-BN-ReLU, dropout 0.5, fc 10.
std::string VggLogits(ProgramBuilder* b, const std::string& image) {
  std::string h = image;
  for (int64_t channels : {32, 64}) {
    h = ConvBn(b, h, channels, 3, 1, "relu");
    h = ConvBn(b, h, channels, 3, 1, "relu");
    h = layers::Pool2d(b, h, 2, "max", 2);
  }
  h = layers::Fc(b, h, 128);
  layers::BatchNormOptions bn;
  bn.fuse_with_relu = true;
  h = layers::BatchNorm(b, h, bn);
  h = layers::Dropout(b, h, 0.5f);
  return layers::Fc(b, h, 10);
}

std::string Logits(ProgramBuilder* b, const std::string& name,
                   const std::string& image) {
  if (name == "mlp") return MlpLogits(b, image);
  if (name == "lenet") return LenetLogits(b, image);
  if (name == "resnet") return ResnetLogits(b, image);
  return VggLogits(b, image);
}

}  // namespace

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

const std::vector<std::string>& BuiltInModels() {
  static const std::vector<std::string> names = {
      "mlp", "lenet", "resnet", "vgg", "transformer", "textcnn", "lstm"};
  return names;
}

OptimizerConfig DefaultOptimizer(const std::string& name) {
  if (IsTextModel(name)) return DefaultTextOptimizer(name);
  OptimizerConfig c;
  c.type = "momentum";
  c.momentum = 0.9f;
  c.learning_rate = name == "mlp" ? 0.1f : 0.05f;
  return c;
}

proto::TrainingJob BuildModel(const std::string& name,
                              const ModelOptions& options) {
  const auto& known = BuiltInModels();
  FLUID_ENFORCE(std::find(known.begin(), known.end(), name) != known.end(),
                "unknown model '", name,
                "'; built-in models: mlp, lenet, resnet, vgg, transformer, ",
                "textcnn, lstm");
  if (IsTextModel(name)) {
    TextModelOptions text;
    text.optimizer =
        options.default_optimizer ? DefaultOptimizer(name) : options.optimizer;
    text.seed = options.seed;
    text.warmup_steps = options.warmup_steps;
    text.decay_steps = options.decay_steps;
    return BuildTextModel(name, text);
  }
  proto::TrainingJob job;
  job.set_version(kProgramVersion);
  *job.mutable_main() = NewProgram();
  *job.mutable_startup() = NewProgram();
  ProgramBuilder b(job.mutable_main(), job.mutable_startup(), options.seed);

  std::string image =
      layers::Data(&b, "image", Shape{1, 28, 28}, options.dtype);
  std::string label = layers::Data(&b, "label", Shape{1}, DataType::kInt64);
  std::string logits = Logits(&b, name, image);
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
  job.set_data_set(proto::TrainingJob::IMAGES);
  job.set_loss_name("loss");
  job.add_metric_names("accuracy");
  *job.mutable_test() = CloneForTest(job.main());
  return job;
}

}  // namespace fluid
