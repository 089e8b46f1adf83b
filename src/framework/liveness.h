// Liveness of a block's temporaries: the op after which each one is dead.
//
// The executor's eager deletion drops a temporary's memory right after the
// op ReleaseSchedule names for it, and the memory plan
// (transpiler/memory_plan.h) simulates the same schedule to predict the
// peak, so both read it from here.
//
// A temporary is a declared var of the block that is not persistable, holds
// a tensor or sparse rows, and is written before it is read (a var read
// first is fed on every run and kept). Its last use is the last op that
// reads or writes it, counting:
//   - an op's op_skip_if variable as one of its inputs;
//   - an asynchronous collective (an op with a COMM_HANDLE output): every
//     var it reads or writes is in use until the last op that reads the
//     handle (c_wait); a handle nothing in the block waits for (it stays in
//     flight past the run) keeps its vars for ever;
//   - views: shard_view's Out is a view of X, so X and Out live as long as
//     either is used;
//   - coalesce_tensor's buffers (FusedOutput and the Output views into it)
//     are never released: the views are laid out once and the buffer's
//     contents carry from one run to the next.
// Pure function of the block; no kernels.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "proto/framework.pb.h"

namespace fluid {

// released_after[i]: the temporaries dead once op i has run (each named
// once over the whole schedule). Vars in `keep` are never released.
std::vector<std::vector<std::string>> ReleaseSchedule(
    const proto::BlockDesc& block, const std::set<std::string>& keep = {});

// Whether an executor drops temporaries by default: Fluid's flag
// FLAGS_eager_delete_tensor_gb in the environment (unset or >= 0: yes; a
// negative value turns it off). Read once; a value that is not a number is
// an error naming it.
bool EagerDeletionByDefault();

}  // namespace fluid
