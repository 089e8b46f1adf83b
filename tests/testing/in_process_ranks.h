// Ranks as threads of one process: an in-process group, one communicator
// per rank, fn(rank, communicator) on a thread each. An exception on a
// rank is that rank's test failure (the others still finish, or fail on
// their own), so a test cannot hang on one rank's error.
#pragma once

#include <functional>
#include <memory>

#include "src/distributed/comm_backend.h"
#include "src/distributed/communicator.h"

namespace fluid {
namespace testing {

// Wraps a rank's in-process backend (e.g. to replace one of its
// collectives); the identity when not given.
using BackendWrapper =
    std::function<std::unique_ptr<CommBackend>(std::unique_ptr<CommBackend>)>;

void RunRanks(int n, const std::function<void(int, Communicator*)>& fn,
              const BackendWrapper& wrap = nullptr);

}  // namespace testing
}  // namespace fluid
