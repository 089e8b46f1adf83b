// Topology: hosts and node-local ranks from one host name per rank.
#include "src/distributed/topology.h"

#include <gtest/gtest.h>

#include <thread>

#include "src/distributed/in_process_backend.h"

namespace fluid {
namespace {

TEST(Topology, OneHost) {
  Topology t = TopologyOf({"a", "a", "a"}, 2);
  EXPECT_EQ(t.num_hosts(), 1);
  EXPECT_EQ(t.local_rank, 2);
  EXPECT_EQ(t.local_size, 3);
  EXPECT_EQ(t.Describe(), "1 host");
}

TEST(Topology, HostsInTheOrderOfTheirLowestRank) {
  // Ranks placed round robin (mpirun --map-by node).
  Topology t = TopologyOf({"h2", "h1", "h2", "h1"}, 3);
  EXPECT_EQ(t.hosts, (std::vector<std::string>{"h2", "h1"}));
  EXPECT_EQ(t.host_of_rank, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(t.local_rank, 1);
  EXPECT_EQ(t.local_size, 2);
  EXPECT_EQ(t.Describe(), "2 hosts x 2 ranks (h2, h1)");
  EXPECT_EQ(TopologyOf({"h2", "h1", "h2", "h1"}, 0).local_rank, 0);
}

TEST(Topology, UnevenHostsNameTheirCounts) {
  Topology t = TopologyOf({"a", "a", "a", "b"}, 3);
  EXPECT_EQ(t.local_rank, 0);
  EXPECT_EQ(t.local_size, 1);
  EXPECT_EQ(t.Describe(), "2 hosts (a x3, b x1)");
  EXPECT_EQ(TopologyOf({"a", "b"}, 0).Describe(), "2 hosts x 1 rank (a, b)");
}

TEST(Topology, ChoosingTheAllReduce) {
  const Topology one = TopologyOf({"a", "a"}, 0);
  const Topology spread = TopologyOf({"a", "b"}, 0);
  const Topology shared = TopologyOf({"a", "a", "b", "b"}, 0);
  EXPECT_EQ(ChooseAllReduce("auto", one), AllReduceAlgorithm::kFlat);
  EXPECT_EQ(ChooseAllReduce("auto", spread), AllReduceAlgorithm::kFlat);
  EXPECT_EQ(ChooseAllReduce("auto", shared), AllReduceAlgorithm::kHierarchical);
  EXPECT_EQ(ChooseAllReduce("hier", one), AllReduceAlgorithm::kHierarchical);
  EXPECT_EQ(ChooseAllReduce("flat", shared), AllReduceAlgorithm::kFlat);
  EXPECT_THROW(ChooseAllReduce("ring", one), Error);
}

TEST(Topology, RankOutsideIsAnError) {
  EXPECT_THROW(TopologyOf({"a"}, 1), Error);
}

// Over a communicator every rank gathers the same hosts (threads of one
// process share a host name).
TEST(Topology, GatheredOverACommunicator) {
  auto group = InProcessGroup::Create(3);
  std::vector<Topology> seen(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      Communicator comm(group->Backend(r));
      seen[r] = GatherTopology(&comm);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(seen[r].num_hosts(), 1);
    EXPECT_EQ(seen[r].local_rank, r);
    EXPECT_EQ(seen[r].local_size, 3);
    EXPECT_EQ(seen[r].hosts, seen[0].hosts);
  }
}

}  // namespace
}  // namespace fluid
