// Reverse-mode autodiff over programs.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "proto/framework.pb.h"

namespace fluid {

using ParamGradList = std::vector<std::pair<std::string, std::string>>;

// Appends to block 0 of `program` the ops that compute d(loss)/d(v) for every
// var v that the loss depends on and that needs a gradient: trainable
// parameters and whatever is computed from them, never vars marked
// stop_gradient, integer vars, or vars in `no_grad`. Grad ops come in reverse
// order of their forward ops; a var used more than once gets its gradient
// contributions summed by a `sum` op. Returns the (parameter, gradient) pairs
// in the order the parameters are declared. The loss must hold one element.
ParamGradList AppendBackward(proto::ProgramDesc* program,
                             const std::string& loss,
                             const std::set<std::string>& no_grad = {});

// A copy of `program` for evaluation: forward ops only (no backward, no
// optimize ops), and only the vars they use plus the persistable ones.
proto::ProgramDesc CloneForTest(const proto::ProgramDesc& program);

// True when the program updates parameters: it has ops with the optimize
// role. Evaluation programs (CloneForTest) are not training programs.
bool IsTrainingProgram(const proto::ProgramDesc& program);

// The losses AppendBackward differentiated in `program`: the vars whose
// gradient is seeded by the op with the loss role.
std::vector<std::string> LossVars(const proto::ProgramDesc& program);

}  // namespace fluid
