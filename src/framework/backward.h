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

// True for an op that evaluation must never run: a backward, optimize or
// collective op by its op_role (the loss-gradient seed is a backward op),
// and, for ops written without a role, one that communicates (c_*, send,
// recv, coalesce_tensor), writes a gradient (x@GRAD) or writes a persistable
// var (a parameter or optimizer state). An op with an is_test attr
// (batch_norm, dropout) is training-only unless is_test is set. `block`
// declares the op's vars.
bool IsTrainingOnlyOp(const proto::OpDesc& op, const proto::BlockDesc& block);

// A copy of `program` for evaluation: the forward part only (every op
// IsTrainingOnlyOp rejects is dropped; forward ops with an is_test attr are
// kept, with it set), and only the vars the kept ops use plus the
// persistable ones. The trainer derives a job's missing test
// program with it; Python's Program.clone(for_test=True) calls it too.
proto::ProgramDesc CloneForTest(const proto::ProgramDesc& program);

// True when the program updates parameters: it has ops with the optimize
// role. Evaluation programs (CloneForTest) are not training programs.
bool IsTrainingProgram(const proto::ProgramDesc& program);

// The losses AppendBackward differentiated in `program`: the vars whose
// gradient is seeded by the op with the loss role.
std::vector<std::string> LossVars(const proto::ProgramDesc& program);

// Refuses (kInvalidArgument, naming the op) a program meant for evaluation
// that holds an op IsTrainingOnlyOp rejects. `what` names the program.
void CheckEvaluationProgram(const proto::ProgramDesc& program,
                            const std::string& what);

}  // namespace fluid
