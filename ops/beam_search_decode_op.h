// beam_search_decode's host work, shared by its CPU kernel
// (beam_search_decode_op.cc) and its CUDA kernel (.cu), which copies the
// steps to the host and the sentences back. The steps are beam_search's
// outputs: step t's ids carry the sources' LoD (source -> its rows) and its
// scores the prefixes' (row p of step t - 1 -> the rows extending it), or
// both Fluid's two levels (source -> rows of step t - 1 -> rows of step t),
// which the host steps are converted from; see beam_search_op.h. Steps of
// two levels give sentences of two (source -> hypotheses -> tokens) on both
// outputs, as in Fluid; steps of one level give SentenceIds the sources'
// tokens and SentenceScores the hypotheses'. Free of Eigen so that nvcc
// compiles it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "src/framework/operator.h"
#include "src/framework/tensor_array.h"

namespace fluid {
namespace ops {

// One step on the host: rows ids and scores, their sources and parents.
template <typename T>
struct BeamStepView {
  const int64_t* ids;
  const T* scores;
  int64_t rows;
  const LoD* sources;
  const LoD* parents;  // unused at step 0
};

// The decoded sentences: tokens of every hypothesis of every source.
template <typename T>
struct BeamHypotheses {
  std::vector<int64_t> ids;
  std::vector<T> scores;
  LoD source_lod{0};    // source -> its tokens
  LoD sentence_lod{0};  // hypothesis -> its tokens
  LoD source_hyps{0};   // source -> its hypotheses
};

// The row of step t - 1 that row `row` of step t extends.
inline int64_t BeamParent(const LoD& parents, int64_t row) {
  return static_cast<int64_t>(
             std::upper_bound(parents.begin(), parents.end(), row) -
             parents.begin()) -
         1;
}

// The hypothesis ending at row `row` of step `last`, walked back to step 0
// and put in order: one token a step, an end_id kept only as the last token
// (an ended prefix is carried forward with its end_id and score).
template <typename T>
void BacktraceOne(const std::vector<BeamStepView<T>>& steps, int64_t last,
                  int64_t row, int64_t end_id, std::vector<int64_t>* ids,
                  std::vector<T>* scores) {
  ids->clear();
  scores->clear();
  for (int64_t t = last; t >= 0; --t) {
    const BeamStepView<T>& s = steps[t];
    if (s.ids[row] != end_id || ids->empty()) {
      ids->push_back(s.ids[row]);
      scores->push_back(s.scores[row]);
    }
    if (t > 0) row = BeamParent(*s.parents, row);
  }
  std::reverse(ids->begin(), ids->end());
  std::reverse(scores->begin(), scores->end());
}

// Every source's hypotheses: those alive at the last step where the source
// has any (a source that finished early is read where it was pruned), best
// final score first (ties in row order).
template <typename T>
BeamHypotheses<T> BeamBacktrack(const std::vector<BeamStepView<T>>& steps,
                                int64_t end_id) {
  BeamHypotheses<T> out;
  const int64_t sources = LoDCount(*steps[0].sources);
  const int64_t num_steps = static_cast<int64_t>(steps.size());
  std::vector<int64_t> ids;
  std::vector<T> scores;
  for (int64_t src = 0; src < sources; ++src) {
    int64_t last = num_steps - 1;
    auto begin = [&](int64_t t) { return (*steps[t].sources)[src]; };
    auto end = [&](int64_t t) { return (*steps[t].sources)[src + 1]; };
    while (last >= 0 && begin(last) == end(last)) --last;
    std::vector<int64_t> rows;
    for (int64_t r = last >= 0 ? begin(last) : 0; last >= 0 && r < end(last);
         ++r)
      rows.push_back(r);
    std::stable_sort(rows.begin(), rows.end(), [&](int64_t a, int64_t b) {
      return steps[last].scores[a] > steps[last].scores[b];
    });
    for (int64_t r : rows) {
      BacktraceOne(steps, last, r, end_id, &ids, &scores);
      out.ids.insert(out.ids.end(), ids.begin(), ids.end());
      out.scores.insert(out.scores.end(), scores.begin(), scores.end());
      out.sentence_lod.push_back(static_cast<int64_t>(out.ids.size()));
    }
    out.source_lod.push_back(static_cast<int64_t>(out.ids.size()));
    out.source_hyps.push_back(LoDCount(out.sentence_lod));
  }
  return out;
}

// The steps of arrays Ids and Scores copied to the host, in the one-level
// form, and checked (their lengths, dtypes, rows and LoDs, naming the step
// at fault); *two_levels tells whether they came in Fluid's two levels.
std::vector<Tensor> BeamDecodeHostSteps(const ExecutionContext& ctx,
                                        DataType score_type, bool* two_levels);

// The kernel for any place: steps read on the host, sentences written at
// the kernel's place.
template <typename T>
void BeamSearchDecodeKernel(const ExecutionContext& ctx) {
  bool two_levels = false;
  const std::vector<Tensor> host =
      BeamDecodeHostSteps(ctx, DataTypeOf<T>::value, &two_levels);
  std::vector<BeamStepView<T>> steps;
  for (size_t t = 0; t < host.size(); t += 2) {
    steps.push_back({host[t].data<int64_t>(), host[t + 1].data<T>(),
                     host[t].shape()[0], &host[t].lod(), &host[t + 1].lod()});
  }
  const BeamHypotheses<T> hyp =
      BeamBacktrack(steps, static_cast<int64_t>(ctx.Attr<int32_t>("end_id")));
  const int64_t n = static_cast<int64_t>(hyp.ids.size());
  Tensor ids, scores;
  std::copy(hyp.ids.begin(), hyp.ids.end(),
            ids.mutable_data<int64_t>(Shape({n})));
  std::copy(hyp.scores.begin(), hyp.scores.end(),
            scores.mutable_data<T>(Shape({n})));
  if (two_levels) {
    ids.set_all_lod({hyp.source_hyps, hyp.sentence_lod});
    scores.set_all_lod({hyp.source_hyps, hyp.sentence_lod});
  } else {
    ids.set_lod(hyp.source_lod);
    scores.set_lod(hyp.sentence_lod);
  }
  ctx.Output("SentenceIds")->CopyFrom(ids, ctx.place());
  ctx.Output("SentenceScores")->CopyFrom(scores, ctx.place());
}

}  // namespace ops
}  // namespace fluid
