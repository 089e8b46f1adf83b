// What the transpilers do with programs that hold control flow (while loops
// run sub-blocks; docs/design.md, "Control flow").
//
// The collective transpiler rewrites block 0 only: the gradients while_grad
// writes there, once, after the loop, are reduced like any other; nothing
// inside a sub-block communicates. LintControlFlow checks that of a
// transpiled program. The rewrites that cannot see into sub-blocks refuse
// such programs (RefuseSubBlocks): mixed precision and recompute (one-block
// programs only), gradient merge and sharding stage 3.
#pragma once

#include <string>

#include "proto/framework.pb.h"

namespace fluid {

// Whether some op of `program` runs a sub-block (has a sub_block attr).
bool HasControlFlow(const proto::ProgramDesc& program);

// Refuses (kUnimplemented) a program with control flow: `what` names the
// rewrite, `instead` what to do.
void RefuseSubBlocks(const proto::ProgramDesc& program, const std::string& what,
                     const std::string& instead);

// A transpiled main program's control flow: no collective op (c_*) inside
// a sub-block, and no gradient of a parameter reduced more than once in
// block 0 (a reduction inside the loop would run once per step). An error
// names the op and its block.
void LintControlFlow(const proto::ProgramDesc& main);

}  // namespace fluid
