// Communicator's rings (groups of its ranks): CreateGroup and Group.
#include <sstream>

#include "src/distributed/communicator.h"
#include "src/distributed/stall_watchdog.h"

namespace fluid {

Communicator* Communicator::CreateGroup(int ring_id, int color, int key,
                                        const std::string& label) {
  FLUID_ENFORCE(ring_id > 0, "CreateGroup: ring ", ring_id,
                " is not a group id; ring 0 is the communicator itself and "
                "groups take ids > 0");
  FLUID_ENFORCE(color >= 0, "CreateGroup: ring ", ring_id,
                ": color must be >= 0, got ", color);
  std::lock_guard<std::mutex> create(create_mu_);
  if (Communicator* existing = ExistingGroup(ring_id, color)) return existing;
  CollectiveDesc desc;
  desc.kind = CollectiveKind::kSplit;
  desc.count = ring_id;  // the ranks must agree on the ring they make
  std::unique_ptr<CommBackend> part;
  // A watched ring's members' world ranks, gathered on the new transport
  // before its worker starts (every rank of it takes this path alike:
  // ring_channels_ is set the same way on all, see StartStallDetection).
  std::vector<int32_t> members;
  bool watched = false;
  {
    std::lock_guard<std::mutex> lock(groups_mu_);  // StartStallWatchdog's
    watched = ring_channels_ != nullptr && watchdog_ != nullptr;
  }
  const int32_t me = rank_;
  Enqueue(desc, 0,
          [&part, &members, watched, me, color, key](CommBackend* b, int64_t*) {
            part = b->Split(color, key);
            if (!watched || part->size() < 2) return;
            members.resize(part->size());
            part->AllGather(&me, members.data(), sizeof(me));
          })
      ->Wait();
  auto ring = std::make_unique<Communicator>(std::move(part), check_);
  Communicator* made = ring.get();
  std::lock_guard<std::mutex> lock(groups_mu_);
  groups_[ring_id] = Ring{color, std::move(ring)};
  if (!members.empty())
    StartRingWatchdog(made, ring_id,
                      std::vector<int>(members.begin(), members.end()), label);
  return made;
}

void Communicator::StartRingWatchdog(Communicator* ring, int ring_id,
                                     std::vector<int> world_ranks,
                                     const std::string& label) {
  std::unique_ptr<ProgressChannel> channel =
      ring_channels_(ring_id, world_ranks);
  if (channel == nullptr) return;
  StallScope scope;
  scope.ring = ring_id;
  scope.label = label;
  scope.world_ranks = std::move(world_ranks);
  scope.others = [this, ring_id] { return ActivityBesides(ring_id); };
  scope.dump = [this, ring_id](const char* reason) {
    return DumpWithRing(ring_id, reason);
  };
  ring->watchdog_ = std::make_unique<StallWatchdog>(
      ring->rank_, ring->size_, &ring->recorder_, std::move(channel),
      watchdog_->config(), stall_end_job_, std::move(scope));
}

ProcessActivity Communicator::ActivityBesides(int ring_id) {
  ProcessActivity activity;
  auto add = [&activity](int id, const FlightRecorder& r) {
    activity.progress += r.progress();
    if (activity.in_ring < 0 && r.started() > r.finished())
      activity.in_ring = id;
  };
  if (ring_id != 0) add(0, recorder_);
  std::lock_guard<std::mutex> lock(groups_mu_);
  for (const auto& ring : groups_)
    if (ring.first != ring_id) add(ring.first, ring.second.comm->recorder_);
  return activity;
}

std::string Communicator::DumpWithRing(int ring_id, const char* reason) {
  if (!recorder_.Dump(reason)) return "";
  std::string written = recorder_.dump_path();
  const size_t slash = written.rfind('/');
  const std::string dir =
      (slash == std::string::npos ? std::string(".")
                                  : written.substr(0, slash)) +
      "/ring-" + std::to_string(ring_id);
  Communicator* ring = Group(ring_id);
  ring->recorder_.SetDumpPath(dir, rank_, size_);
  if (ring->recorder_.Dump(reason)) {
    written += " (ring " + std::to_string(ring_id) +
               "'s collectives: " + ring->recorder_.dump_path() + ")";
  }
  return written;
}

Communicator* Communicator::ExistingGroup(int ring_id, int color) {
  std::lock_guard<std::mutex> lock(groups_mu_);
  auto it = groups_.find(ring_id);
  if (it == groups_.end()) return nullptr;
  FLUID_ENFORCE(it->second.color == color, "CreateGroup: ring ", ring_id,
                " was made with color ", it->second.color, " on rank ", rank_,
                " and is asked for again with color ", color,
                "; a ring id names one group");
  return it->second.comm.get();
}

Communicator* Communicator::Group(int ring_id) {
  if (ring_id == 0) return this;
  std::lock_guard<std::mutex> lock(groups_mu_);
  auto it = groups_.find(ring_id);
  if (it != groups_.end()) return it->second.comm.get();
  std::ostringstream made;
  for (const auto& ring : groups_)
    made << (made.tellp() > 0 ? ", " : "") << ring.first;
  FLUID_THROW(ErrorCode::kNotFound, "ring ", ring_id,
              " is not a group of this communicator (rings made: ",
              made.tellp() > 0 ? made.str() : std::string("none"),
              "); groups are made by Communicator::CreateGroup (the "
              "executor makes them for a tensor-parallel job)");
}

void Communicator::ShutdownGroups() {
  std::vector<Communicator*> rings;
  {
    std::lock_guard<std::mutex> lock(groups_mu_);
    for (auto& ring : groups_) rings.push_back(ring.second.comm.get());
  }
  for (Communicator* ring : rings) ring->Shutdown();
}

}  // namespace fluid
