// How control-flow ops (while, while_grad) run a block of their program.
//
// The executor hands a BlockRunner to every kernel it calls
// (ExecutionContext::block_runner). A control-flow op makes a step scope as
// a kid of scope(), then asks the runner to run its sub-block there: the
// runner declares the block's own variables in the step scope (outer ones
// resolve through the scope's parents), binds the block's ops and runs them
// in order. The ops of each block are instantiated once per prepared
// program; a run only binds them. Not thread-safe: one op runs at a time.
#pragma once

#include "proto/framework.pb.h"
#include "src/framework/scope.h"

namespace fluid {

class BlockRunner {
 public:
  virtual ~BlockRunner() = default;
  // The scope the running op's variables are bound in.
  virtual Scope* scope() const = 0;
  // The program whose blocks RunBlock runs.
  virtual const proto::ProgramDesc& program() const = 0;
  // Runs every op of block `block_id` in `scope` (a kid, direct or not, of
  // scope()), first creating there each non-persistable var the block
  // declares. Errors leave with the op's type, index and block recorded.
  virtual void RunBlock(int block_id, Scope* scope) const = 0;
};

}  // namespace fluid
