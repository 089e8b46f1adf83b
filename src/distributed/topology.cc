#include "src/distributed/topology.h"

#include <unistd.h>

#include <cstring>
#include <sstream>

#include "src/framework/enforce.h"

namespace fluid {

namespace {

// Host names travel as fixed blocks of int64 words.
constexpr int kNameWords = (kMaxHostNameBytes + 1 + 7) / 8;

std::string ThisHost() {
  char name[kMaxHostNameBytes + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

}  // namespace

int Topology::RanksOn(int h) const {
  int n = 0;
  for (int host : host_of_rank) n += host == h;
  return n;
}

std::string Topology::Describe() const {
  std::ostringstream out;
  const int n = num_hosts();
  out << n << (n == 1 ? " host" : " hosts");
  if (n == 1) return out.str();
  bool even = true;
  for (int h = 1; h < n; ++h) even = even && RanksOn(h) == RanksOn(0);
  if (even)
    out << " x " << RanksOn(0) << (RanksOn(0) == 1 ? " rank" : " ranks");
  out << " (";
  for (int h = 0; h < n; ++h) {
    out << (h ? ", " : "") << hosts[h];
    if (!even) out << " x" << RanksOn(h);
  }
  out << ")";
  return out.str();
}

Topology TopologyOf(const std::vector<std::string>& names, int rank) {
  FLUID_ENFORCE(rank >= 0 && rank < static_cast<int>(names.size()), "rank ",
                rank, " outside a topology of ", names.size(), " ranks");
  Topology t;
  for (const std::string& name : names) {
    int h = 0;
    while (h < t.num_hosts() && t.hosts[h] != name) ++h;
    if (h == t.num_hosts()) t.hosts.push_back(name);
    t.host_of_rank.push_back(h);
  }
  t.local_rank = 0;
  for (int r = 0; r < rank; ++r)
    t.local_rank += t.host_of_rank[r] == t.host_of_rank[rank];
  t.local_size = t.RanksOn(t.host_of_rank[rank]);
  return t;
}

Topology GatherTopology(Communicator* comm) {
  const std::string mine = ThisHost().substr(0, kMaxHostNameBytes);
  Tensor in, out;
  int64_t* words = in.mutable_data<int64_t>(Shape{kNameWords});
  std::memset(words, 0, sizeof(int64_t) * kNameWords);
  std::memcpy(words, mine.data(), mine.size());
  out.mutable_data<int64_t>(Shape{int64_t{kNameWords} * comm->size()});
  comm->AllGather(in, out);
  std::vector<std::string> names;
  const char* bytes = reinterpret_cast<const char*>(out.data<int64_t>());
  for (int r = 0; r < comm->size(); ++r) {
    const char* block = bytes + static_cast<size_t>(r) * kNameWords * 8;
    std::string name(block, strnlen(block, kNameWords * 8));
    // Shown in log lines: printable bytes only.
    for (char& c : name)
      if (c < 0x20 || c == 0x7f) c = '?';
    names.push_back(name);
  }
  return TopologyOf(names, comm->rank());
}

AllReduceAlgorithm ChooseAllReduce(const std::string& mode,
                                   const Topology& topology) {
  if (mode == "flat") return AllReduceAlgorithm::kFlat;
  if (mode == "hier") return AllReduceAlgorithm::kHierarchical;
  FLUID_ENFORCE(mode == "auto", "--allreduce must be flat, hier or auto, got ",
                Quote(mode));
  bool shared = false;
  for (int h = 0; h < topology.num_hosts(); ++h)
    shared = shared || topology.RanksOn(h) > 1;
  return topology.num_hosts() > 1 && shared ? AllReduceAlgorithm::kHierarchical
                                            : AllReduceAlgorithm::kFlat;
}

}  // namespace fluid
