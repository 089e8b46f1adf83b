// Decoding layers with Fluid's names and arguments: one step of beam search
// (beam_search) and the sentences walked back from the steps' arrays
// (beam_search_decode), as chapter 08 of the Fluid book decodes inside a
// While loop. What each output's LoD holds: ops/beam_search_op.h.
#pragma once

#include <string>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {
namespace layers {

struct BeamSearchOptions {
  int64_t beam_size = 1;
  int64_t end_id = 0;
  int64_t level = 0;
  bool is_accumulated = true;
  bool return_parent_idx = false;
};

// {selected_ids, selected_scores} (and parent_idx, int32, when asked);
// `ids` "" takes the candidates' positions in `scores` as their ids.
std::vector<std::string> BeamSearch(ProgramBuilder* b,
                                    const std::string& pre_ids,
                                    const std::string& pre_scores,
                                    const std::string& ids,
                                    const std::string& scores,
                                    const BeamSearchOptions& options);

// {sentence_ids, sentence_scores} from the arrays of the steps' ids and
// scores.
std::vector<std::string> BeamSearchDecode(ProgramBuilder* b,
                                          const std::string& ids,
                                          const std::string& scores,
                                          int64_t beam_size, int64_t end_id);

}  // namespace layers
}  // namespace fluid
