// Threads standing in for ranks: an InProcessGroup of N ranks hands out one
// backend per rank; each is used from its own thread, and the collectives
// meet at a shared rendezvous. Reductions add the ranks' contributions in
// rank order on every rank, so results are bitwise identical across ranks,
// as they are with MPI. For tests: no process, no mpirun. A backend splits
// (CommBackend::Split) into backends of a new group of its own.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "src/distributed/comm_backend.h"

namespace fluid {

class InProcessGroup : public std::enable_shared_from_this<InProcessGroup> {
 public:
  static std::shared_ptr<InProcessGroup> Create(int size);
  int size() const { return size_; }
  // The backend of `rank`; the group outlives it.
  std::unique_ptr<CommBackend> Backend(int rank);

  // Blocks until all ranks arrive; throws when the group was aborted.
  void Arrive();
  void Post(int rank, const void* ptr) { posted_[rank] = ptr; }
  const void* Posted(int rank) const { return posted_[rank]; }
  // Aborts this group and every group split from it, so that a rank
  // waiting in any of them throws.
  void AbortAll();
  // Makes `child` (split from this group) abort with it.
  void Adopt(const std::shared_ptr<InProcessGroup>& child);

 private:
  explicit InProcessGroup(int size);
  int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
  std::vector<const void*> posted_;
  std::vector<std::weak_ptr<InProcessGroup>> children_;
};

}  // namespace fluid
