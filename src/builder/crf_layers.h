// Sequence tagging layers with Fluid's names and arguments: the
// linear-chain CRF's cost (linear_chain_crf), its Viterbi decoding
// (crf_decoding) and the edit distance between token sequences
// (edit_distance). Inputs are level-1 LoD batches, or padded batches with
// their lengths.
#pragma once

#include <string>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {
namespace layers {

// -log P(label | input) per sequence, [N, 1]; creates the transition
// parameter [D + 2, D] (start row, end row, transitions) from `param`.
// `length` (int64 [N]): input is padded [N, S, D]; "" for a LoD batch.
std::string LinearChainCrf(ProgramBuilder* b, const std::string& input,
                           const std::string& label, const ParamAttr& param,
                           const std::string& length = "");

// The Viterbi path (int64) under `transition`, the name of a
// linear_chain_crf layer's parameter; with `label`, 1 where the path
// equals it.
std::string CrfDecoding(ProgramBuilder* b, const std::string& input,
                        const std::string& transition,
                        const std::string& label = "",
                        const std::string& length = "");

// {distance float32 [N, 1], sequence count int64 [1]}; `ignored_tokens` are
// erased from both sides first (LoD batches only).
struct EditDistanceOptions {
  bool normalized = true;
  std::vector<int64_t> ignored_tokens;
  std::string input_length;  // both or neither: padded [N, S] inputs
  std::string label_length;
};
std::vector<std::string> EditDistance(ProgramBuilder* b,
                                      const std::string& input,
                                      const std::string& label,
                                      const EditDistanceOptions& options = {});

}  // namespace layers
}  // namespace fluid
