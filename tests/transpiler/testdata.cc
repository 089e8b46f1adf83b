#include "tests/transpiler/testdata.h"

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace fluid {
namespace testing {

std::string TestJobPath(const std::string& name) {
  return std::string(FLUID_TESTDATA_DIR) + "/" + name + "_job.pbtxt";
}

proto::TrainingJob LoadTestJob(const std::string& name) {
  proto::TrainingJob job;
  std::ifstream in(TestJobPath(name));
  EXPECT_TRUE(in.good()) << "cannot read " << TestJobPath(name);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text.str(), &job))
      << TestJobPath(name) << " does not parse";
  return job;
}

std::string TestJobText(const proto::TrainingJob& job) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(job, &text);
  return text;
}

std::vector<std::string> OpTypes(const proto::ProgramDesc& program) {
  std::vector<std::string> t;
  for (const auto& op : program.blocks(0).ops()) t.push_back(op.type());
  return t;
}

}  // namespace testing
}  // namespace fluid
