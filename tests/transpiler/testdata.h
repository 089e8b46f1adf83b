// Programs the transpiler's tests start from, written out as text under
// tests/transpiler/testdata so that the tests need neither the builder nor
// the ops that build them. models_test checks that each file still is what
// the builder makes (FLUID_UPDATE_TESTDATA=1 rewrites them).
#pragma once

#include <string>
#include <vector>

#include "proto/framework.pb.h"

namespace fluid {
namespace testing {

// The path of the written-out job of model `name` ("mlp").
std::string TestJobPath(const std::string& name);

// The job read back from TestJobPath(name); fails the test when the file is
// missing or does not parse.
proto::TrainingJob LoadTestJob(const std::string& name);

// `job` as the file holds it (protobuf text format).
std::string TestJobText(const proto::TrainingJob& job);

// The types of the ops of block 0, in order.
std::vector<std::string> OpTypes(const proto::ProgramDesc& program);

}  // namespace testing
}  // namespace fluid
