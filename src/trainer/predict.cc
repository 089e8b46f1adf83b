// `trainer --predict DIR`: the accuracy of a saved inference model on the
// test split of an MNIST-family data set, printed once (by rank 0 under
// mpirun).
#include <algorithm>
#include <cstdio>
#include <ostream>

#include "src/data/batcher.h"
#include "src/data/idx_reader.h"
#include "src/distributed/launcher.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "src/io/inference_model.h"
#include "src/trainer/trainer.h"
#include "transpiler/mixed_precision.h"
#include "transpiler/strategy.h"

namespace fluid {

namespace {

// The model's first fetch must score each sample: [batch, classes].
void CheckScores(const proto::InferenceModel& model, const std::string& dir) {
  FLUID_ENFORCE(model.fetch_names_size() >= 1, "the model in '", dir,
                "' fetches nothing");
  const proto::VarDesc& v =
      GetVarDesc(model.program().blocks(0), model.fetch_names(0));
  const Shape s = VarShape(v);
  FLUID_ENFORCE(s.rank() == 2 && s[1] > 0, "the model in '", dir, "' fetches '",
                v.name(), "' of shape ", s,
                "; --predict needs per-class scores [batch, classes]");
}

// Samples of `labels` whose highest-scoring class in `scores` is the label.
template <typename T>
int64_t Correct(const Tensor& scores, const Tensor& labels) {
  const int64_t n = scores.shape()[0], classes = scores.shape()[1];
  const T* s = scores.data<T>();
  const int64_t* l = labels.data<int64_t>();
  int64_t correct = 0;
  auto less = [](T a, T b) {
    if constexpr (IsHalfType<T>::value) {
      return ToFloat(a) < ToFloat(b);
    } else {
      return a < b;
    }
  };
  for (int64_t i = 0; i < n; ++i) {
    const T* row = s + i * classes;
    correct += (std::max_element(row, row + classes, less) - row) == l[i];
  }
  return correct;
}

int64_t CountCorrect(const Tensor& scores, const Tensor& labels) {
  FLUID_ENFORCE(
      scores.shape().rank() == 2 && scores.shape()[0] == labels.shape()[0],
      "the model's scores have shape ", scores.shape(), " for ",
      labels.shape()[0], " samples");
  switch (scores.dtype()) {
    case DataType::kFloat32:
      return Correct<float>(scores, labels);
    case DataType::kFloat64:
      return Correct<double>(scores, labels);
    case DataType::kBFloat16:
      return Correct<bfloat16>(scores, labels);
    case DataType::kFloat16:
      return Correct<float16>(scores, labels);
    default:
      FLUID_THROW(ErrorCode::kInvalidArgument, "the model's scores are ",
                  scores.dtype(), "; --predict needs float scores");
  }
}

}  // namespace

TrainerResult Predict(const TrainerOptions& o, std::ostream& out) {
  FLUID_ENFORCE(o.program.empty() && o.model.empty(),
                "--predict takes a saved inference model; give neither "
                "--program nor --model with it");
  FLUID_ENFORCE(o.threads >= 1, "--threads must be >= 1, got ", o.threads);
  // Scoring needs no communication, and under mpirun every rank would score
  // the same test set and print the same line: rank 0 alone scores and
  // prints, so a job reports its accuracy once, as training does.
  TrainerResult result;
  result.rank = LauncherRank();
  result.world_size = LauncherWorldSize();
  if (result.rank != 0) return result;
  Scope scope;
  const proto::InferenceModel model = LoadInferenceModel(&scope, o.predict);
  CheckScores(model, o.predict);
  Dataset test = LoadMnistFamily(o.data_dir, /*train=*/false);
  if (o.test_samples > 0) test = TakeFirst(test, o.test_samples);
  const size_t feeds_n = static_cast<size_t>(model.feed_names_size());
  FLUID_ENFORCE(feeds_n >= 1 && feeds_n <= test.tensors.size(),
                "the model in '", o.predict, "' feeds ", feeds_n,
                " vars; the data set provides image and label");

  Executor exe(ParsePlace(o.place), o.threads);
  // --amp: the model scores in 16 bits (its float32 weights cast per run).
  const proto::ProgramDesc program =
      o.strategy.amp()
          ? MixedPrecisionForward(model.program(),
                                  CanonicalStrategy(o.strategy).amp_configs())
          : model.program();
  auto prepared = exe.Prepare(program, &scope);
  Batcher batcher(test, 1000, 0, 0, 1, /*shuffle=*/false);
  batcher.StartEpoch(0);
  FeedList feeds;
  for (const auto& name : model.feed_names())
    feeds.emplace_back(name, Tensor());
  std::vector<Tensor> batch, fetched;
  int64_t seen = 0, correct = 0;
  while (batcher.Next(&batch)) {
    for (size_t i = 0; i < feeds_n; ++i) feeds[i].second = batch[i];
    exe.Run(prepared.get(), feeds, {model.fetch_names(0)}, &fetched);
    correct += CountCorrect(fetched[0], batch[1]);
    seen += batch[0].shape()[0];
  }
  result.test_accuracy =
      static_cast<double>(correct) / std::max<int64_t>(seen, 1);
  char line[160];
  std::snprintf(line, sizeof(line), "test accuracy %.4f (%lld samples)",
                result.test_accuracy, static_cast<long long>(seen));
  out << line << "\n";
  return result;
}

}  // namespace fluid
