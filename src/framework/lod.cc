#include "src/framework/lod.h"

#include <sstream>

#include "src/framework/enforce.h"

namespace fluid {

std::string LoDToString(const LoD& lod) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < lod.size(); ++i) s << (i ? ", " : "") << lod[i];
  s << "]";
  return s.str();
}

void CheckLoD(const LoD& lod, int64_t rows, const std::string& what) {
  FLUID_ENFORCE(lod.size() >= 2, what, ": LoD offsets ", LoDToString(lod),
                " must hold at least [0, rows]");
  FLUID_ENFORCE(lod.front() == 0, what, ": LoD offsets ", LoDToString(lod),
                " must start at 0");
  for (size_t i = 1; i < lod.size(); ++i) {
    FLUID_ENFORCE(lod[i] >= lod[i - 1], what, ": LoD offsets ",
                  LoDToString(lod), " decrease at index ", i,
                  " (offsets are cumulative sequence lengths)");
  }
  FLUID_ENFORCE(lod.back() == rows, what, ": LoD offsets ", LoDToString(lod),
                " end at ", lod.back(), " but the data has ", rows,
                " rows (dim 0)");
}

LoD LoDFromLengths(const std::vector<int64_t>& lengths,
                   const std::string& what) {
  LoD lod{0};
  lod.reserve(lengths.size() + 1);
  for (size_t i = 0; i < lengths.size(); ++i) {
    FLUID_ENFORCE(lengths[i] >= 0, what, ": sequence ", i, " has length ",
                  lengths[i], "; lengths must be >= 0");
    lod.push_back(lod.back() + lengths[i]);
  }
  return lod;
}

std::vector<int64_t> LoDLengths(const LoD& lod) {
  std::vector<int64_t> out;
  for (size_t i = 1; i < lod.size(); ++i) out.push_back(lod[i] - lod[i - 1]);
  return out;
}

}  // namespace fluid
