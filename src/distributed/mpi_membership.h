// MpiMembership: notices a rank that leaves the job while the others still
// issue collectives, and ends the job naming it, instead of letting the
// others wait for it forever.
//
// A rank "leaves" when its communicator shuts down (normal end of the
// process, sys.exit in Python, a script that runs one step fewer). Leaving
// is a farewell in point-to-point messages on the world communicator (a tag
// of its own; point-to-point traffic never matches a collective): the rank
// sends every peer the number of collectives it took part in, then waits,
// without spinning, for every peer's farewell. A peer that is in (or later
// enters) a collective numbered past that count can never complete it: its
// watcher thread prints one line naming the rank that left and the
// collective it waits in, and calls MPI_Abort. Ranks that all finish their
// collectives and exit simply exchange farewells and finalise.
//
// Needs MPI_THREAD_MULTIPLE (the watcher polls its receive while the
// worker sits in a collective); with a lower thread level it is inert.
// Enter/Exit are called by the backend's worker thread around each
// collective; Leave by whoever destroys the backend. One instance per
// process at a time. Collectives that do not go through the MPI backend
// (NCCL on devices) are not counted.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace fluid {

class MpiMembership {
 public:
  // Not collective: a rank may construct it at any time (also just to say
  // farewell, when it leaves before ever making a communicator).
  explicit MpiMembership(MPI_Comm world);
  ~MpiMembership();
  MpiMembership(const MpiMembership&) = delete;
  MpiMembership& operator=(const MpiMembership&) = delete;

  bool active() const { return active_; }

  // Around each collective of the world communicator. `what` is a short
  // description ("allreduce", "broadcast", ...), `bytes` its size.
  void Enter(const char* what, int64_t bytes);
  // Around the collective check that precedes a collective (see
  // communicator.h): waits as in the collective the next Enter numbers,
  // without counting one. Exit ends it.
  void EnterCheck(const char* what, int64_t bytes);
  void Exit();

  // The farewell (see above). Idempotent; called by the destructor.
  void Leave();

 private:
  void Watch();
  // Ends the job if a rank that left cannot join collective `seq`.
  // Requires mu_.
  void CheckLocked();

  bool active_ = false;
  int rank_ = 0;
  int size_ = 1;
  MPI_Comm world_ = MPI_COMM_NULL;
  std::atomic<int> received_{0};  // farewells of peers
  std::mutex mu_;
  int64_t seq_ = 0;  // collectives entered
  bool in_collective_ = false;
  int64_t ahead_ = 0;  // 1: in the check of collective seq_ + 1
  std::string what_;
  int64_t bytes_ = 0;
  std::map<int, int64_t> left_;  // rank -> collectives it took part in
  std::atomic<bool> stop_{false};
  bool left_self_ = false;
  int64_t farewell_ = 0;  // what Leave sends; outlives the sends
  std::thread watcher_;
};

}  // namespace fluid
