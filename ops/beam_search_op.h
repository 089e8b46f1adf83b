// beam_search's host work, shared by its CPU kernel (beam_search_op.cc) and
// its CUDA kernel (beam_search_op.cu), which copies the inputs to the host,
// selects there and copies the outputs back: the selection is LoD
// bookkeeping over a few rows, as in Fluid, which runs it on the CPU only.
// Free of Eigen so that nvcc compiles it.
//
// Fluid's beam tensors carry a two-level LoD: level 0 groups the rows of
// pre_ids by source (offsets over those rows), level 1 gives each row of
// pre_ids the selected rows extending it. Inputs of two levels (the first
// step fed with lod [[1] * N, [1] * N] lengths, as Fluid's book does) give
// both outputs those two levels. The groups come from scores' two levels,
// as in Fluid, else pre_ids'. Inputs of one level keep this product's
// earlier form, each output one level: SelectedIds the sources' (source s
// owns rows [lod[s], lod[s + 1])), SelectedScores the prefixes' (row p of
// PreIds was extended by the rows [lod[p], lod[p + 1])); beam_search reads
// the sources from PreIds. beam_search_decode reads either form
// (docs/python.md, "Beam search").
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// One step's selection, on the host.
template <typename T>
struct BeamSelection {
  std::vector<int64_t> ids;     // [n]
  std::vector<T> scores;        // [n]
  std::vector<int32_t> parent;  // [n]: the row of PreIds each extends
  LoD source_lod;               // source -> selected rows
  LoD parent_lod;               // PreIds row -> selected rows
};

// The inputs of one step, on the host: `rows` prefixes, `width` candidates
// each (ids null: candidate c's id is c).
template <typename T>
struct BeamCandidates {
  const int64_t* pre_ids;
  const T* pre_scores;
  const int64_t* ids;
  const T* scores;
  int64_t rows;
  int64_t width;
};

struct BeamItem {
  int64_t row;
  int64_t id;
  double score;
};

// Whether a ranks before b: the higher score first (NaN last), then the
// earlier prefix row, then the earlier candidate (the order pushed).
inline bool BeamRanksBefore(const BeamItem& a, size_t ia, const BeamItem& b,
                            size_t ib) {
  const bool an = std::isnan(a.score), bn = std::isnan(b.score);
  if (an != bn) return bn;
  if (!an && a.score != b.score) return a.score > b.score;
  return ia < ib;
}

// The candidates of the prefixes [begin, end): an ended prefix (its id
// end_id) offers end_id once, with its own score; a live one each of its
// `width` candidates, scored as given (is_accumulated) or as its score
// plus the log of the candidate's probability.
template <typename T>
std::vector<BeamItem> GroupCandidates(const BeamCandidates<T>& in,
                                      int64_t begin, int64_t end,
                                      int64_t end_id, bool is_accumulated) {
  std::vector<BeamItem> items;
  for (int64_t r = begin; r < end; ++r) {
    const double pre = static_cast<double>(in.pre_scores[r]);
    if (in.pre_ids[r] == end_id) {
      items.push_back({r, end_id, pre});
      continue;
    }
    for (int64_t c = 0; c < in.width; ++c) {
      const int64_t k = r * in.width + c;
      const double s = static_cast<double>(in.scores[k]);
      items.push_back({r, in.ids != nullptr ? in.ids[k] : c,
                       is_accumulated ? s : pre + std::log(s)});
    }
  }
  return items;
}

// The beam_size best items of one source, ordered by prefix row and, within
// a row, best first. Empty when every one comes from an ended prefix: the
// source has finished (its hypotheses were carried one step; decoding
// reads them there).
inline std::vector<BeamItem> SelectBest(std::vector<BeamItem> items,
                                        const std::vector<int64_t>& pre_ids,
                                        int64_t end_id, int64_t beam_size) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const size_t keep = std::min(order.size(), static_cast<size_t>(beam_size));
  std::partial_sort(order.begin(), order.begin() + keep, order.end(),
                    [&](size_t a, size_t b) {
                      return BeamRanksBefore(items[a], a, items[b], b);
                    });
  order.resize(keep);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return items[a].row < items[b].row;
  });
  bool finished = true;
  for (size_t i : order) finished = finished && pre_ids[items[i].row] == end_id;
  std::vector<BeamItem> best;
  if (finished) return best;
  for (size_t i : order) best.push_back(items[i]);
  return best;
}

// Fluid's beam_search step over the prefixes grouped by `groups` (offsets
// over the rows, one group per source).
template <typename T>
BeamSelection<T> BeamSearchSelect(const BeamCandidates<T>& in,
                                  const LoD& groups, int64_t beam_size,
                                  int64_t end_id, bool is_accumulated) {
  BeamSelection<T> out;
  out.source_lod.assign(1, 0);
  std::vector<int64_t> per_row(static_cast<size_t>(in.rows), 0);
  const std::vector<int64_t> pre_ids(in.pre_ids, in.pre_ids + in.rows);
  for (int64_t g = 0; g < LoDCount(groups); ++g) {
    const std::vector<BeamItem> best = SelectBest(
        GroupCandidates(in, groups[g], groups[g + 1], end_id, is_accumulated),
        pre_ids, end_id, beam_size);
    for (const BeamItem& item : best) {
      out.ids.push_back(item.id);
      out.scores.push_back(static_cast<T>(item.score));
      out.parent.push_back(static_cast<int32_t>(item.row));
      ++per_row[item.row];
    }
    out.source_lod.push_back(static_cast<int64_t>(out.ids.size()));
  }
  out.parent_lod.assign(1, 0);
  for (int64_t n : per_row) out.parent_lod.push_back(out.parent_lod.back() + n);
  return out;
}

// The prefixes' grouping the `level` attr picks, checked against the rows,
// and whether the inputs carry Fluid's two levels.
struct BeamGroups {
  LoD groups;  // offsets over pre_ids' rows
  bool two_levels = false;
};

// Checks the kernel's inputs at run time (the LoD and the rows), naming the
// input at fault.
BeamGroups BeamSearchGroups(const ExecutionContext& ctx, const Tensor& pre_ids,
                            const Tensor& pre_scores, const Tensor& scores);

// The kernel for any place: inputs read on the host, outputs written at the
// kernel's place.
template <typename T>
void BeamSearchKernel(const ExecutionContext& ctx) {
  Tensor pre_ids, pre_scores, ids, scores;
  pre_ids.CopyFrom(ctx.Input("pre_ids"), Place::CPU());
  pre_scores.CopyFrom(ctx.Input("pre_scores"), Place::CPU());
  scores.CopyFrom(ctx.Input("scores"), Place::CPU());
  const bool has_ids = ctx.HasInput("ids");
  if (has_ids) ids.CopyFrom(ctx.Input("ids"), Place::CPU());
  const BeamGroups g = BeamSearchGroups(ctx, pre_ids, pre_scores, scores);
  const LoD& groups = g.groups;
  const int64_t rows = pre_ids.shape()[0];
  const BeamCandidates<T> in{pre_ids.data<int64_t>(),
                             pre_scores.data<T>(),
                             has_ids ? ids.data<int64_t>() : nullptr,
                             scores.data<T>(),
                             rows,
                             scores.shape().Product(1, scores.shape().rank())};
  const BeamSelection<T> sel = BeamSearchSelect(
      in, groups, ctx.Attr<int32_t>("beam_size"), ctx.Attr<int32_t>("end_id"),
      ctx.Attr<bool>("is_accumulated"));
  const int64_t n = static_cast<int64_t>(sel.ids.size());
  Tensor host_ids, host_scores, host_parent;
  std::copy(sel.ids.begin(), sel.ids.end(),
            host_ids.mutable_data<int64_t>(Shape({n, 1})));
  std::copy(sel.scores.begin(), sel.scores.end(),
            host_scores.mutable_data<T>(Shape({n, 1})));
  std::copy(sel.parent.begin(), sel.parent.end(),
            host_parent.mutable_data<int32_t>(Shape({n})));
  if (g.two_levels) {
    host_ids.set_all_lod({groups, sel.parent_lod});
    host_scores.set_all_lod({groups, sel.parent_lod});
  } else {
    host_ids.set_lod(sel.source_lod);
    host_scores.set_lod(sel.parent_lod);
  }
  ctx.Output("selected_ids")->CopyFrom(host_ids, ctx.place());
  ctx.Output("selected_scores")->CopyFrom(host_scores, ctx.place());
  if (ctx.HasOutput("parent_idx"))
    ctx.Output("parent_idx")->CopyFrom(host_parent, ctx.place());
}

}  // namespace ops
}  // namespace fluid
