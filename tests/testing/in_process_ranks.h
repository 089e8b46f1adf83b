// Ranks as threads of one process: an in-process group, one communicator
// per rank, fn(rank, communicator) on a thread each. An exception on a
// rank is that rank's test failure (the others still finish, or fail on
// their own), so a test cannot hang on one rank's error.
#pragma once

#include <functional>
#include <memory>
#include <string>

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

// A transport with only the collectives every backend must have (those
// of `inner`): its optional ones (ReduceScatter, AllGatherV, ...) are
// CommBackend's own fallbacks, for testing them.
class RequiredOnlyBackend : public CommBackend {
 public:
  explicit RequiredOnlyBackend(std::unique_ptr<CommBackend> inner)
      : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string name() const override { return "required-only"; }
  void AllReduce(void* d, int64_t n, DataType t, ReduceOp op) override {
    inner_->AllReduce(d, n, t, op);
  }
  void Broadcast(void* d, int64_t bytes, int root) override {
    inner_->Broadcast(d, bytes, root);
  }
  void AllGather(const void* s, void* r, int64_t bytes) override {
    inner_->AllGather(s, r, bytes);
  }
  void Barrier() override { inner_->Barrier(); }
  void Abort(int code) override { inner_->Abort(code); }

 private:
  std::unique_ptr<CommBackend> inner_;
};

}  // namespace testing
}  // namespace fluid
