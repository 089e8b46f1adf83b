// Communicator's rings (groups of its ranks): CreateGroup and Group.
#include <sstream>

#include "src/distributed/communicator.h"

namespace fluid {

Communicator* Communicator::CreateGroup(int ring_id, int color, int key) {
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
  Enqueue(desc, 0, [&part, color, key](CommBackend* b, int64_t*) {
    part = b->Split(color, key);
  })->Wait();
  auto ring = std::make_unique<Communicator>(std::move(part), check_);
  Communicator* made = ring.get();
  std::lock_guard<std::mutex> lock(groups_mu_);
  groups_[ring_id] = Ring{color, std::move(ring)};
  return made;
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
