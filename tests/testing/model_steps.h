// Runs a built-in model's job for a few steps on synthetic batches: for
// tests that compare runs (eager deletion on and off) or measure memory.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "src/framework/executor.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace testing {

// One batch of `batch` samples for each of the job's feeds: floats in
// [0, 1), integers 0 or 1 (a valid class and token of every built-in
// model), shaped as declared with -1 as the batch.
inline FeedList SyntheticFeeds(const proto::TrainingJob& job, int64_t batch,
                               unsigned seed) {
  std::mt19937 rng(seed);
  FeedList feeds;
  for (const auto& name : job.feed_names()) {
    const proto::VarDesc& v = GetVarDesc(job.main().blocks(0), name);
    Shape shape;
    for (int64_t d : VarShape(v)) shape.push_back(d < 0 ? batch : d);
    Tensor t(VarDtype(v), shape);
    if (VarDtype(v) == DataType::kInt64) {
      int64_t* p = t.mutable_data<int64_t>();
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = rng() % 2;
    } else {
      float* p = t.mutable_data<float>();
      std::uniform_real_distribution<float> u(0.0f, 1.0f);
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = u(rng);
    }
    feeds.emplace_back(name, t);
  }
  return feeds;
}

}  // namespace testing
}  // namespace fluid
