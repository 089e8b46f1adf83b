// LoD ("level of detail", as Fluid calls it): a batch of sequences of
// different lengths packed along dim 0 of one tensor, described by the
// offsets [0, l1, l1 + l2, ..., rows] of the sequences' first rows. Sequence
// i is rows [lod[i], lod[i + 1]); a sequence may be empty. An empty LoD
// means the tensor is no sequence batch.
//
// Several levels (LoDLevels, coarsest first) nest sequences of sequences,
// as in Fluid: the last level's offsets index rows, every other level's the
// sequences of the level below it (lod [[0, 2, 3], [0, 1, 4, 6]]: source 0
// holds sentences 0 and 1, rows [0, 1) and [1, 4); source 1 sentence 2,
// rows [4, 6)).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fluid {

using LoD = std::vector<int64_t>;
using LoDLevels = std::vector<LoD>;

// Checks that `lod` describes `rows` rows: it starts at 0, never decreases
// and ends at `rows`. The error names `what` (e.g. "feed 'words'").
void CheckLoD(const LoD& lod, int64_t rows, const std::string& what);

// Offsets from sequence lengths ([2, 0, 3] -> [0, 2, 2, 5]); a negative
// length is an error naming `what`.
LoD LoDFromLengths(const std::vector<int64_t>& lengths,
                   const std::string& what);

// The lengths of the sequences `lod` describes ([0, 2, 2, 5] -> [2, 0, 3]).
std::vector<int64_t> LoDLengths(const LoD& lod);

// Number of sequences (0 for an empty LoD).
inline int64_t LoDCount(const LoD& lod) {
  return lod.empty() ? 0 : static_cast<int64_t>(lod.size()) - 1;
}

std::string LoDToString(const LoD& lod);
std::string LoDToString(const LoDLevels& levels);

// Checks every level as CheckLoD does: the last against `rows`, each other
// against the sequence count of the level below it. Empty levels pass (no
// LoD).
void CheckLoDLevels(const LoDLevels& levels, int64_t rows,
                    const std::string& what);

// Level `level` of `levels` in row offsets (Fluid's ToAbsOffset): each
// offset mapped down through the levels below it. The last level is its
// own.
LoD AbsoluteLoD(const LoDLevels& levels, size_t level);

}  // namespace fluid
