// Programs for inference: the ops a set of targets needs, switched to their
// test-time behaviour.
#pragma once

#include <string>
#include <vector>

#include "proto/framework.pb.h"

namespace fluid {

// True for an op with a test-time mode: its desc carries an "is_test" attr or
// its registered schema declares one (batch_norm, dropout).
bool HasTestMode(const proto::OpDesc& op);

// Sets the "is_test" attr to true on every op of every block that has one:
// ops whose desc carries it, and ops whose registered schema declares it
// (unknown op types are left alone). Dropout then passes its input through
// and batch norm uses its running statistics.
void SetIsTest(proto::ProgramDesc* program);

// A copy of `program` holding only the ops of block 0 that `targets` depend
// on, in their original order, and only the vars those ops use. Ops that
// train or communicate (IsTrainingOnlyOp) are never kept. A var in `feeds`
// is taken as given: the ops that compute it are dropped (together with
// whatever only they needed). Every target must be a var of the program and
// be computed by a kept op, fed, or persistable; otherwise kInvalidArgument
// names it. Ops are judged after SetIsTest (a dropout in training mode is
// kept, switched to inference). The copy is a plain local program (no
// distribution).
proto::ProgramDesc Prune(const proto::ProgramDesc& program,
                         const std::vector<std::string>& feeds,
                         const std::vector<std::string>& targets);

}  // namespace fluid
