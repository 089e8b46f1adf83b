// Where the ranks of a job run: the host of each rank, gathered once over
// its communicator, and this rank's place among the ranks of its host.
#pragma once

#include <string>
#include <vector>

#include "src/distributed/communicator.h"

namespace fluid {

struct Topology {
  // The distinct host names, in the order of their lowest rank.
  std::vector<std::string> hosts;
  // Per rank, its host (an index into `hosts`).
  std::vector<int> host_of_rank;
  // This rank among the ranks of its host, and how many there are.
  int local_rank = 0;
  int local_size = 1;

  int num_hosts() const { return static_cast<int>(hosts.size()); }
  // The ranks on host `h`.
  int RanksOn(int h) const;
  // "1 host", "2 hosts x 2 ranks (h1, h2)", or "2 hosts (h1 x3, h2 x1)"
  // when they hold different numbers of ranks.
  std::string Describe() const;
};

// The most bytes of a host name kept (longer ones are cut).
constexpr int kMaxHostNameBytes = 255;

// Gathers every rank's host name (gethostname) over `comm`. Collective:
// every rank of `comm` calls it, at the same point of its collectives.
Topology GatherTopology(Communicator* comm);

// The topology of `names`, one host name per rank, seen from `rank`.
Topology TopologyOf(const std::vector<std::string>& names, int rank);

// The allreduce algorithm that `mode` ("flat", "hier" or "auto") names for
// ranks laid out as `topology`. auto is hier when the ranks span hosts and
// some host runs more than one of them (then the reduce within a host
// spares the network), else flat. Another mode is a kInvalidArgument error.
AllReduceAlgorithm ChooseAllReduce(const std::string& mode,
                                   const Topology& topology);

}  // namespace fluid
