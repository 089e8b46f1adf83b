// Questions the transpiler's passes ask of a program, asked one way: op
// roles, who reads and writes a var, where the backward pass last writes a
// gradient and the optimizer first reads it, which ops are updates. Every
// pass uses these rather than its own copies.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "proto/framework.pb.h"
#include "src/framework/types.h"

namespace fluid {

// Whether `op` carries `role` among its op_role bits.
bool HasRole(const proto::OpDesc& op, OpRole role);
// `op` with its op_role set to `role` (a pass's new op).
proto::OpDesc WithRole(proto::OpDesc op, OpRole role);

// Whether `op` names `var` among its inputs / outputs.
bool ReadsVar(const proto::OpDesc& op, const std::string& var);
bool WritesVar(const proto::OpDesc& op, const std::string& var);

// An optimizer update: an optimize op with a (param, grad) op_role_var.
bool IsUpdateOp(const proto::OpDesc& op);

// The update op of every parameter, by index into `block`.
std::map<std::string, int> UpdateOps(const proto::BlockDesc& block);

// What an update op's slot holds: its parameter or gradient, state shaped
// like the parameter (read as Slot, written as SlotOut), or scalars.
enum class SlotKind { kParam, kGrad, kState, kScalar };
SlotKind KindOf(const proto::BlockDesc& block, const proto::OpDesc& op,
                const std::string& slot);

// Index of the last backward op writing `var`, or -1.
int LastBackwardWrite(const proto::BlockDesc& block, const std::string& var);

// Index of the first op reading `var` on the optimizer's side, or
// ops_size(): an op that is neither backward nor collective (the gradient
// clips, the weight decay and the updates, which must all see the reduced
// gradient).
int FirstOptimizeRead(const proto::BlockDesc& block, const std::string& var);

// The type of op #i, for messages ("end" past the last op).
std::string TypeAt(const proto::BlockDesc& block, int i);

// The (param, grad) pairs the optimize ops update, from their op_role_var,
// in program order.
std::vector<std::pair<std::string, std::string>> OptimizedParams(
    const proto::ProgramDesc& main);

// The first gradient of `main` that holds sparse rows (SELECTED_ROWS), or
// "" when all are dense.
std::string FirstSparseGradient(const proto::ProgramDesc& main);

}  // namespace fluid
