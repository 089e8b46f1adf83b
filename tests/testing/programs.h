// Small programs the framework's tests run.
#pragma once

#include "proto/framework.pb.h"
#include "src/framework/operator.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace testing {

// x [-1, 3] * w [3, 2] -> y; w persistable.
inline proto::ProgramDesc MulProgram() {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  AddVarDesc(b, "x", DataType::kFloat32, Shape{-1, 3});
  AddVarDesc(b, "w", DataType::kFloat32, Shape{3, 2}, true);
  proto::OpDesc op =
      MakeOp("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"y"}}});
  *b->add_ops() = op;
  InferShapeAtCompileTime(op, b);
  return p;
}

}  // namespace testing
}  // namespace fluid
