#include "src/distributed/mpi_membership.h"

#include <chrono>
#include <cstdio>
#include <sstream>
#include <vector>

#include "src/distributed/job_control.h"

namespace fluid {

namespace {

constexpr int kFarewellTag = 7301;
// How often the watcher and a leaving rank look at their requests: short
// enough that a job ends within a blink, long enough to cost nothing.
constexpr auto kPoll = std::chrono::milliseconds(5);

bool MpiUsable() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

std::string Bytes(int64_t b) {
  char buf[32];
  if (b >= (1 << 20))
    std::snprintf(buf, sizeof(buf), "%.1f MiB", b / 1048576.0);
  else
    std::snprintf(buf, sizeof(buf), "%lld bytes", static_cast<long long>(b));
  return buf;
}

}  // namespace

MpiMembership::MpiMembership(MPI_Comm world) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  MPI_Comm_rank(world, &rank_);
  MPI_Comm_size(world, &size_);
  if (provided < MPI_THREAD_MULTIPLE || size_ < 2) return;
  world_ = world;
  active_ = true;
  watcher_ = std::thread([this] { Watch(); });
}

MpiMembership::~MpiMembership() {
  Leave();
  if (watcher_.joinable()) {
    stop_ = true;
    watcher_.join();
  }
}

void MpiMembership::Enter(const char* what, int64_t bytes) {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mu_);
  ++seq_;
  in_collective_ = true;
  what_ = what;
  bytes_ = bytes;
  CheckLocked();
}

void MpiMembership::EnterCheck(const char* what, int64_t bytes) {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mu_);
  ahead_ = 1;
  in_collective_ = true;
  what_ = what;
  bytes_ = bytes;
  CheckLocked();
}

void MpiMembership::Exit() {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mu_);
  in_collective_ = false;
  ahead_ = 0;
}

void MpiMembership::CheckLocked() {
  if (!in_collective_ || left_.empty()) return;
  std::ostringstream who;
  int n = 0;
  int64_t count = 0;
  const int64_t seq = seq_ + ahead_;  // the collective waited in
  for (const auto& [r, c] : left_) {
    if (c >= seq) continue;
    who << (n++ ? ", " : "") << r;
    count = c;
  }
  if (n == 0) return;
  std::ostringstream line;
  line << "fluid: rank " << rank_ << ": rank" << (n > 1 ? "s " : " ")
       << who.str() << " left the job (process ended after " << count
       << " collective(s)) while rank " << rank_ << " waits for "
       << (n > 1 ? "them" : "it") << " in collective " << seq << " (" << what_
       << ", " << Bytes(bytes_)
       << "): every rank must run the same steps; ending the job";
  WriteErrorLine(line.str());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

void MpiMembership::Watch() {
  int64_t count = 0;
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Irecv(&count, 1, MPI_INT64_T, MPI_ANY_SOURCE, kFarewellTag, world_, &req);
  while (received_ < size_ - 1) {
    int flag = 0;
    MPI_Status status;
    MPI_Test(&req, &flag, &status);
    if (flag) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        left_[status.MPI_SOURCE] = count;
        CheckLocked();
      }
      if (++received_ < size_ - 1)
        MPI_Irecv(&count, 1, MPI_INT64_T, MPI_ANY_SOURCE, kFarewellTag, world_,
                  &req);
      continue;
    }
    if (stop_) {
      MPI_Cancel(&req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      return;
    }
    std::this_thread::sleep_for(kPoll);
  }
}

void MpiMembership::Leave() {
  if (!active_ || left_self_) return;
  left_self_ = true;
  if (!MpiUsable()) {
    stop_ = true;
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    farewell_ = seq_;
  }
  std::vector<MPI_Request> reqs;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    reqs.emplace_back();
    MPI_Isend(&farewell_, 1, MPI_INT64_T, r, kFarewellTag, world_,
              &reqs.back());
  }
  // Polled, not blocked in: a blocking wait spins a core for as long as the
  // slowest rank takes to finish (an evaluation, a checkpoint).
  for (;;) {
    int sent = 0;
    MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &sent,
                MPI_STATUSES_IGNORE);
    if (sent && received_ == size_ - 1) break;
    std::this_thread::sleep_for(kPoll);
  }
  if (watcher_.joinable()) watcher_.join();
}

}  // namespace fluid
