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

namespace {

// Offsets that start at 0, never decrease and end at `end`: rows (the
// last level) or the sequences of the level below.
void CheckOffsets(const LoD& lod, int64_t end, const std::string& what,
                  bool rows) {
  FLUID_ENFORCE(lod.size() >= 2, what, ": LoD offsets ", LoDToString(lod),
                " must hold at least [0, ", end, "]");
  FLUID_ENFORCE(lod.front() == 0, what, ": LoD offsets ", LoDToString(lod),
                " must start at 0");
  for (size_t i = 1; i < lod.size(); ++i) {
    FLUID_ENFORCE(lod[i] >= lod[i - 1], what, ": LoD offsets ",
                  LoDToString(lod), " decrease at index ", i,
                  " (offsets are cumulative sequence lengths)");
  }
  FLUID_ENFORCE(lod.back() == end, what, ": LoD offsets ", LoDToString(lod),
                " end at ", lod.back(),
                rows ? " but the data has " : " but the level below has ", end,
                rows ? " rows (dim 0)" : " sequences");
}

}  // namespace

std::string LoDToString(const LoDLevels& levels) {
  std::string s = "[";
  for (size_t i = 0; i < levels.size(); ++i)
    s += (i ? ", " : "") + LoDToString(levels[i]);
  return s + "]";
}

void CheckLoDLevels(const LoDLevels& levels, int64_t rows,
                    const std::string& what) {
  for (size_t k = 0; k < levels.size(); ++k) {
    const bool last = k + 1 == levels.size();
    CheckOffsets(levels[k], last ? rows : LoDCount(levels[k + 1]),
                 levels.size() == 1
                     ? what
                     : what + " (LoD level " + std::to_string(k) + " of " +
                           std::to_string(levels.size()) + ")",
                 last);
  }
}

LoD AbsoluteLoD(const LoDLevels& levels, size_t level) {
  LoD out = levels.at(level);
  for (size_t k = level + 1; k < levels.size(); ++k)
    for (int64_t& v : out) v = levels[k].at(static_cast<size_t>(v));
  return out;
}

void CheckLoD(const LoD& lod, int64_t rows, const std::string& what) {
  CheckOffsets(lod, rows, what, true);
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
