// The decoding layers (see decode_layers.h) and their registrations.
#include "src/builder/decode_layers.h"

#include <climits>

#include "src/builder/layer_registry.h"
#include "src/builder/layers.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace layers {

namespace {

// An int argument of `layer` as the int32 attr it becomes.
int32_t Int32Arg(const std::string& layer, const std::string& arg,
                 int64_t value, int64_t min) {
  FLUID_ENFORCE(value >= min && value <= INT32_MAX, "layer ", Quote(layer),
                ": argument '", arg, "' is ", value, "; it must be in [", min,
                ", ", INT32_MAX, "]");
  return static_cast<int32_t>(value);
}

DataType DtypeOf(ProgramBuilder* b, const std::string& var) {
  return VarDtype(GetVarDesc(*b->main_block(), var));
}

}  // namespace

std::vector<std::string> BeamSearch(ProgramBuilder* b,
                                    const std::string& pre_ids,
                                    const std::string& pre_scores,
                                    const std::string& ids,
                                    const std::string& scores,
                                    const BeamSearchOptions& o) {
  const std::string layer = b->UniqueName("beam_search");
  const std::string sel_ids =
      b->CreateTmpVar(layer + ".selected_ids", DataType::kInt64);
  const std::string sel_scores =
      b->CreateTmpVar(layer + ".selected_scores", DtypeOf(b, scores));
  std::vector<std::string> out{sel_ids, sel_scores};
  std::vector<std::pair<std::string, std::vector<std::string>>> outs{
      {"selected_ids", {sel_ids}}, {"selected_scores", {sel_scores}}};
  if (o.return_parent_idx) {
    out.push_back(b->CreateTmpVar(layer + ".parent_idx", DataType::kInt32));
    outs.push_back({"parent_idx", {out.back()}});
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> in{
      {"pre_ids", {pre_ids}}, {"pre_scores", {pre_scores}}};
  if (!ids.empty()) in.push_back({"ids", {ids}});
  in.push_back({"scores", {scores}});
  b->AppendOp(MakeOp(
      "beam_search", in, outs,
      {{"beam_size", Int32Arg("beam_search", "beam_size", o.beam_size, 1)},
       {"end_id", Int32Arg("beam_search", "end_id", o.end_id, INT32_MIN)},
       {"level", Int32Arg("beam_search", "level", o.level, 0)},
       {"is_accumulated", o.is_accumulated}}));
  return out;
}

std::vector<std::string> BeamSearchDecode(ProgramBuilder* b,
                                          const std::string& ids,
                                          const std::string& scores,
                                          int64_t beam_size, int64_t end_id) {
  const std::string layer = b->UniqueName("beam_search_decode");
  const std::string sent_ids =
      b->CreateTmpVar(layer + ".sentence_ids", DataType::kInt64);
  const std::string sent_scores =
      b->CreateTmpVar(layer + ".sentence_scores", DtypeOf(b, scores));
  b->AppendOp(MakeOp(
      "beam_search_decode", {{"Ids", {ids}}, {"Scores", {scores}}},
      {{"SentenceIds", {sent_ids}}, {"SentenceScores", {sent_scores}}},
      {{"beam_size", Int32Arg("beam_search_decode", "beam_size", beam_size, 1)},
       {"end_id",
        Int32Arg("beam_search_decode", "end_id", end_id, INT32_MIN)}}));
  return {sent_ids, sent_scores};
}

REGISTER_LAYER(beam_search)
    .Doc(
        "One step of beam search: (selected_ids, selected_scores[, "
        "parent_idx]), the beam_size best candidates of each source; ids "
        "\"\" takes the candidates' positions as their ids.")
    .Var("pre_ids")
    .Var("pre_scores")
    .String("ids")
    .Var("scores")
    .Int("beam_size")
    .Int("end_id")
    .Int("level", 0)
    .Bool("is_accumulated", true)
    .String("name", "")
    .Bool("return_parent_idx", false)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      BeamSearchOptions o;
      o.beam_size = a.Int("beam_size");
      o.end_id = a.Int("end_id");
      o.level = a.Int("level");
      o.is_accumulated = a.Bool("is_accumulated");
      o.return_parent_idx = a.Bool("return_parent_idx");
      return BeamSearch(b, a.Var("pre_ids"), a.Var("pre_scores"),
                        a.String("ids"), a.Var("scores"), o);
    });

REGISTER_LAYER(beam_search_decode)
    .Doc(
        "(sentence_ids, sentence_scores): the sentences of a beam search, "
        "walked back from the arrays of its steps' ids and scores.")
    .Var("ids")
    .Var("scores")
    .Int("beam_size")
    .Int("end_id")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return BeamSearchDecode(b, a.Var("ids"), a.Var("scores"),
                              a.Int("beam_size"), a.Int("end_id"));
    });

}  // namespace layers
}  // namespace fluid
