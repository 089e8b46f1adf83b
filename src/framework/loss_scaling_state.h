// The persistable state of fp16's dynamic loss scaling, which the
// mixed-precision rewrite (transpiler/mixed_precision.h) adds to a job: its
// names, shared by the rewrite, the executors that report a skipped step
// and the checkpoints. A run may resume in another precision (fp16 from a
// float32 or bf16 checkpoint, or back), so a checkpoint may lack this
// state (it then starts from the program's initial values) or hold it for
// a program without it (it is then left out).
#pragma once

#include <string>

namespace fluid {

constexpr const char* kLossScalingVar = "loss_scaling";
constexpr const char* kGoodStepsVar = "num_good_steps";
constexpr const char* kBadStepsVar = "num_bad_steps";
// 1 when the last step's gradients overflowed and its update was skipped.
constexpr const char* kFoundInfVar = "found_infinite";

inline bool IsLossScalingState(const std::string& name) {
  return name == kLossScalingVar || name == kGoodStepsVar ||
         name == kBadStepsVar || name == kFoundInfVar;
}

}  // namespace fluid
