// The sequence tagging layers (see crf_layers.h) and their registrations.
#include "src/builder/crf_layers.h"

#include <climits>
#include <optional>

#include "src/builder/initializer.h"
#include "src/builder/layer_registry.h"
#include "src/builder/layers.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace layers {

namespace {

// D, the tag count: the last dim of input [rows, D] (or [N, S, D] with a
// length), which must be known.
int64_t TagCount(ProgramBuilder* b, const std::string& layer,
                 const std::string& input, bool padded) {
  const Shape s = VarShape(GetVarDesc(*b->main_block(), input));
  FLUID_ENFORCE(s.rank() == (padded ? 3 : 2) && s[s.rank() - 1] > 0, "layer ",
                Quote(layer), ": argument 'input' ", Quote(input),
                " has shape ", s, "; it must be ",
                padded ? "[N, S, D] (padded, with length)"
                       : "[rows, D] (a LoD batch of emission rows)",
                " with D, the number of tags, known");
  return s[s.rank() - 1];
}

std::vector<std::pair<std::string, std::vector<std::string>>> CrfInputs(
    const std::string& input, const std::string& transition,
    const std::string& label, const std::string& length) {
  std::vector<std::pair<std::string, std::vector<std::string>>> in{
      {"Emission", {input}}, {"Transition", {transition}}};
  if (!label.empty()) in.push_back({"Label", {label}});
  if (!length.empty()) in.push_back({"Length", {length}});
  return in;
}

}  // namespace

std::string LinearChainCrf(ProgramBuilder* b, const std::string& input,
                           const std::string& label, const ParamAttr& param,
                           const std::string& length) {
  const int64_t d = TagCount(b, "linear_chain_crf", input, !length.empty());
  const DataType dtype = VarDtype(GetVarDesc(*b->main_block(), input));
  const std::string layer = b->UniqueName("linear_chain_crf");
  const Shape shape{d + 2, d};
  const std::string w = b->CreateParameter(
      param.name.empty() ? layer + ".w_0" : param.name, shape, dtype,
      param.WithDefaultInit(Initializer::Of(Initializer::Kind::kXavierUniform)),
      ComputeFans(shape, false), "linear_chain_crf", "param_attr");
  std::vector<std::string> out;
  for (const char* part :
       {".alpha", ".emission_exps", ".transition_exps", ".tmp"})
    out.push_back(b->CreateTmpVar(layer + part, dtype));
  b->AppendOp(MakeOp("linear_chain_crf", CrfInputs(input, w, label, length),
                     {{"Alpha", {out[0]}},
                      {"EmissionExps", {out[1]}},
                      {"TransitionExps", {out[2]}},
                      {"LogLikelihood", {out[3]}}}));
  return out[3];
}

std::string CrfDecoding(ProgramBuilder* b, const std::string& input,
                        const std::string& transition, const std::string& label,
                        const std::string& length) {
  const int64_t d = TagCount(b, "crf_decoding", input, !length.empty());
  const proto::VarDesc& w = GetVarDesc(*b->main_block(), transition);
  FLUID_ENFORCE(w.persistable(),
                "layer 'crf_decoding': argument 'param_attr' names ",
                Quote(transition),
                ", which is no parameter; give it the name of "
                "linear_chain_crf's transition parameter");
  FLUID_ENFORCE(VarShape(w) == Shape({d + 2, d}),
                "layer 'crf_decoding': the transition parameter ",
                Quote(transition), " has shape ", VarShape(w), " but ", d,
                " tags need [", d + 2, ", ", d, "]");
  const std::string path =
      b->CreateTmpVar(b->UniqueName("crf_decoding") + ".tmp", DataType::kInt64);
  b->AppendOp(MakeOp("crf_decoding",
                     CrfInputs(input, transition, label, length),
                     {{"ViterbiPath", {path}}}));
  return path;
}

namespace {

// `x` with `tokens` erased (sequence_erase).
std::string Erase(ProgramBuilder* b, const std::string& x,
                  const std::vector<int32_t>& tokens) {
  const std::string out =
      b->CreateTmpVar(b->UniqueName("sequence_erase") + ".tmp",
                      VarDtype(GetVarDesc(*b->main_block(), x)));
  b->AppendOp(MakeOp("sequence_erase", {{"X", {x}}}, {{"Out", {out}}},
                     {{"tokens", tokens}}));
  return out;
}

}  // namespace

std::vector<std::string> EditDistance(ProgramBuilder* b,
                                      const std::string& input,
                                      const std::string& label,
                                      const EditDistanceOptions& o) {
  const bool padded = !o.input_length.empty();
  FLUID_ENFORCE(padded == !o.label_length.empty(),
                "layer 'edit_distance': arguments 'input_length' and "
                "'label_length' go together (padded input and label); only ",
                padded ? "input_length" : "label_length", " is given");
  std::string hyps = input, refs = label;
  if (!o.ignored_tokens.empty()) {
    FLUID_ENFORCE(!padded,
                  "layer 'edit_distance': argument 'ignored_tokens' needs LoD "
                  "batches (sequence_erase); with input_length and "
                  "label_length, remove the tokens before padding");
    std::vector<int32_t> tokens;
    for (int64_t t : o.ignored_tokens) {
      FLUID_ENFORCE(t >= INT32_MIN && t <= INT32_MAX,
                    "layer 'edit_distance': ignored token ", t,
                    " does not fit in 32 bits");
      tokens.push_back(static_cast<int32_t>(t));
    }
    hyps = Erase(b, hyps, tokens);
    refs = Erase(b, refs, tokens);
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> in{
      {"Hyps", {hyps}}, {"Refs", {refs}}};
  if (padded) {
    in.push_back({"HypsLength", {o.input_length}});
    in.push_back({"RefsLength", {o.label_length}});
  }
  const std::string layer = b->UniqueName("edit_distance");
  const std::string out = b->CreateTmpVar(layer + ".tmp", DataType::kFloat32);
  const std::string num =
      b->CreateTmpVar(layer + ".sequence_num", DataType::kInt64);
  b->AppendOp(MakeOp("edit_distance", in,
                     {{"Out", {out}}, {"SequenceNum", {num}}},
                     {{"normalized", o.normalized}}));
  return {out, num};
}

namespace {

ParamAttr RequiredParam(const LayerArgs& a) {
  std::optional<ParamAttr> p = a.Param("param_attr");
  FLUID_ENFORCE(p.has_value(), "layer ", Quote(a.layer()),
                ": argument 'param_attr' cannot be false: the layer needs its "
                "transition parameter");
  return *p;
}

}  // namespace

REGISTER_LAYER(linear_chain_crf)
    .Doc(
        "-log P(label | input) of each sequence under a linear-chain CRF, "
        "[N, 1]; creates the transition parameter [D + 2, D].")
    .Var("input")
    .Var("label")
    .Param("param_attr")
    .String("length", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return LinearChainCrf(b, a.Var("input"), a.Var("label"), RequiredParam(a),
                            a.String("length"));
    });

REGISTER_LAYER(crf_decoding)
    .Doc(
        "The Viterbi path (int64) under linear_chain_crf's transition "
        "parameter, which param_attr names; with label, 1 where the path "
        "equals it.")
    .Var("input")
    .Var("param_attr")
    .String("label", "")
    .String("length", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return CrfDecoding(b, a.Var("input"), a.Var("param_attr"),
                         a.String("label"), a.String("length"));
    });

REGISTER_LAYER(edit_distance)
    .Doc(
        "(Levenshtein distance float32 [N, 1], sequence count int64 [1]) "
        "between int64 token sequences; ignored_tokens erased first.")
    .Var("input")
    .Var("label")
    .Bool("normalized", true)
    .IntList("ignored_tokens", {})
    .String("input_length", "")
    .String("label_length", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      EditDistanceOptions o;
      o.normalized = a.Bool("normalized");
      o.ignored_tokens = a.IntList("ignored_tokens");
      o.input_length = a.String("input_length");
      o.label_length = a.String("label_length");
      return EditDistance(b, a.Var("input"), a.Var("label"), o);
    });

}  // namespace layers
}  // namespace fluid
