// The persistable state gradient merge (transpiler/gradient_merge.h) adds
// to a job: the micro-step counter and one accumulator per gradient. Its
// names are here, below the transpiler, for the checkpoints: a checkpoint
// may be loaded by a job without gradient merge (its state is left out,
// when no micro-step's gradients are waiting in it) or lack the state a
// job with gradient merge needs (it then starts from the startup values:
// zero accumulators, a merged step just begun).
#pragma once

#include <string>

namespace fluid {

constexpr const char* kGradMergeStepVar = "@GRAD_MERGE_STEP@";
constexpr const char* kGradMergeSuffix = "@GRAD_MERGE";

// Whether `name` is an accumulator ("fc_0.w_0@GRAD@GRAD_MERGE").
inline bool IsGradMergeAccumulatorName(const std::string& name) {
  const std::string suffix = kGradMergeSuffix;
  return name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

inline bool IsGradientMergeState(const std::string& name) {
  return name == kGradMergeStepVar || IsGradMergeAccumulatorName(name);
}

}  // namespace fluid
